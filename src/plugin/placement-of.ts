/**
 * A call's placement (src/model/placement.ts): the pod's annotations as the runtime passed
 * them, else as the host's pod cache holds them, and its namespace's from that cache. Without
 * a cache (the per-pod plugin) only the runtime's pod annotations count. The call's interface
(CNI_IFNAME) picks the entry of Spiderpool's per-interface `ipam.spidernet.io/ippools`. A cache that has not
 * listed yet does not know the namespace's annotations: unless the namespace is already known,
 * the call fails as not ready (code 11) rather than placing the pod from the defaults —
 * `placementFor` first waits up to SYNC_WAIT_MS for it (an agent just started lists in well
 * under that when its API server answers).
 */
import { type Placement, parsePlacement } from '../model/placement.js';
import { type PodDirectory, PodCacheNotSyncedError } from '../model/pod-directory.js';
import type { IpamRequest } from './ipam-backend.js';

/** What of a call a placement depends on (`ifname` is the CNI call's; a caller without one reads no per-interface annotation entry). */
type Call = Pick<IpamRequest, 'pod' | 'podAnnotations'> & { readonly ifname?: string };

/** Longest wait of a call for the pod cache's first list. */
export const SYNC_WAIT_MS = 3000;

/** `placementOf`, after waiting (bounded) for a cache that has not listed yet and does not know the pod's namespace. */
export async function placementFor(req: Call, pods?: PodDirectory): Promise<Placement> {
  if (req.pod && pods && !pods.synced && pods.namespaceAnnotations(req.pod.namespace) === undefined) await pods.whenSynced?.(SYNC_WAIT_MS);
  return placementOf(req, pods);
}

export function placementOf(req: Call, pods?: PodDirectory): Placement {
  const { pod } = req;
  const podAnnotations = req.podAnnotations ?? (pod && pods?.pod(pod.namespace, pod.name)?.annotations);
  const nsAnnotations = pod && pods?.namespaceAnnotations(pod.namespace);
  if (pod && pods && nsAnnotations === undefined && !pods.synced) throw new PodCacheNotSyncedError(pod.namespace);
  return parsePlacement(pod, podAnnotations, nsAnnotations, req.ifname);
}
