/**
 * A call's placement (src/model/placement.ts): the pod's annotations as the runtime passed
 * them, else as the host's pod cache holds them, and its namespace's from that cache. Without
 * a cache (the per-pod plugin) only the runtime's pod annotations count.
 */
import { type Placement, parsePlacement } from '../model/placement.js';
import type { PodDirectory } from '../model/pod-directory.js';
import type { IpamRequest } from './ipam-backend.js';

export function placementOf(req: Pick<IpamRequest, 'pod' | 'podAnnotations'>, pods?: PodDirectory): Placement {
  const { pod } = req;
  const podAnnotations = req.podAnnotations ?? (pod && pods?.pod(pod.namespace, pod.name)?.annotations);
  const nsAnnotations = pod && pods?.namespaceAnnotations(pod.namespace);
  return parsePlacement(pod, podAnnotations, nsAnnotations);
}
