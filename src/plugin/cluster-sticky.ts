/**
 * Whether a call is for a sticky pod in cluster mode, and so which hold handle keeps its
 * addresses across its recreation (src/cluster/records/sticky-hold-id.ts): a pod is sticky when its
 * `podipam.io/sticky` annotation (the pod's, else its namespace's) says "true", or — with no
 * such annotation — when the host's pod cache knows it as a StatefulSet's pod. A pod the runtime
 * did not name (no K8S_POD_NAMESPACE/K8S_POD_NAME) is never sticky, nor is any pod when
 * `stickyFor` is 0. No datastore or API call: the annotations came with the call, the cache is
 * in memory.
 */
import { placementOf } from './placement-of.js';
import type { Placement } from '../model/placement.js';
import type { IpamRequest } from './ipam-backend.js';
import type { PodDirectory } from '../model/pod-directory.js';
import { stickyHoldHandle } from '../cluster/records/index.js';

/** The owner kind whose pods are sticky without an annotation. */
export const STICKY_OWNER_KIND = 'StatefulSet';

/**
 * The pod's hold handle when the pod is sticky, else undefined (also when the handle would be
 * too long: the pod is then simply not sticky). Throws PlacementError for a malformed
 * annotation (ADD reports it; DEL catches it). `placement`: the call's, when the caller has it
 * already (ADD), so the annotations are not parsed twice.
 */
export function stickyHoldOf(
  req: Pick<IpamRequest, 'pod' | 'podAnnotations' | 'conf' | 'ifname'>,
  pods: PodDirectory | undefined,
  stickyForMs: number,
  placement?: Placement,
): string | undefined {
  const pod = req.pod;
  if (stickyForMs <= 0 || !pod) return undefined;
  const said = (placement ?? placementOf(req, pods)).sticky?.parsed;
  const sticky = said ?? pods?.pod(pod.namespace, pod.name)?.ownerKind === STICKY_OWNER_KIND;
  return sticky ? stickyHoldHandle(req.conf.name, pod, req.ifname) : undefined;
}
