/**
 * Several networks for one pod, as containerd's go-cni attaches them: all ADDs in parallel,
 * each network on its own interface; if any fails, every network of the pod is DELeted (the
 * ones that succeeded and, idempotently, the failed ones) and AttachError names the failures
 * and anything the clean-up could not remove. All or nothing.
 */
import type { NetworkConfigList } from './conf-list.js';
import type { CniRuntime, RuntimeConf } from './cni-runtime.js';
import type { GoResult } from './go-result.js';
import { AttachError } from './errors.js';

/** One network of a pod and the interface it gets. */
export interface PodNetwork {
  readonly list: NetworkConfigList;
  readonly ifname: string;
}

/** The pod: container id, netns path, CNI_ARGS and capability args shared by its networks. */
export type Pod = Omit<RuntimeConf, 'ifname'>;

/** ADDs every network in parallel; resolves with the results in `nets` order. */
export async function attachNetworks(rt: CniRuntime, pod: Pod, nets: readonly PodNetwork[]): Promise<GoResult[]> {
  const settled = await Promise.allSettled(nets.map((n) => rt.add(n.list, { ...pod, ifname: n.ifname })));
  const failures = settled.flatMap((s) => (s.status === 'rejected' ? [s.reason as Error] : []));
  if (failures.length === 0) return settled.map((s) => (s as PromiseFulfilledResult<GoResult>).value);
  const cleanup = await delAll(rt, pod, nets);
  throw new AttachError(pod.containerId, failures, cleanup);
}

/** DELs every network in parallel; throws AttachError with all failures (the rest are gone). */
export async function detachNetworks(rt: CniRuntime, pod: Pod, nets: readonly PodNetwork[]): Promise<void> {
  const failures = await delAll(rt, pod, nets);
  if (failures.length > 0) throw new AttachError(pod.containerId, failures);
}

async function delAll(rt: CniRuntime, pod: Pod, nets: readonly PodNetwork[]): Promise<Error[]> {
  const settled = await Promise.allSettled(nets.map((n) => rt.del(n.list, { ...pod, ifname: n.ifname })));
  return settled.flatMap((s) => (s.status === 'rejected' ? [s.reason as Error] : []));
}
