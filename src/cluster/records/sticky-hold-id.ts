/**
 * Sticky holds in cluster mode: when a sticky pod's attachment is deleted, its addresses move
 * to a hold handle named after the pod rather than after the container, so the pod's next
 * incarnation (same namespace/name, new container id and uid) finds and takes them over:
 * `sticky:<network>:<namespace>:<name>:<ifname>`, each part escaped as handle-id.ts does (so
 * five ":"-separated parts, where an attachment's handle has three). A hold's record carries
 * `stickyUntil` (src/cluster/records/handle-record.ts): that field, not the id, is what makes a record
 * a hold for GC and `ipam check`.
 */
import { MAX_HANDLE_LENGTH, escapePart } from '../../model/handle-id.js';
import type { PodRef } from '../../model/pod-ref.js';

/** The hold handle of `pod`'s attachment on `network`/`ifname`; undefined when it would be longer than a handle may be. */
export function stickyHoldHandle(network: string, pod: Pick<PodRef, 'namespace' | 'name'>, ifname: string): string | undefined {
  // Each part escaped (":" included), so the parts stay apart.
  const h = `sticky:${[network, pod.namespace, pod.name, ifname].map(escapePart).join(':')}`;
  return h.length <= MAX_HANDLE_LENGTH ? h : undefined;
}
