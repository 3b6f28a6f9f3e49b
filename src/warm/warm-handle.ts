/**
 * Where the agent's warm pool keeps its addresses in the datastore, shared by the agent that
 * writes these records (warm-service.ts) and the server that counts them (server/warm-usage.ts):
 * - warm handles `podipam-warm:<node>:<refill id>` (the node escaped as in every CNI handle id,
 *   handle-id.ts) hold the node's addresses for their whole stay on it, idle or in use;
 * - pod records `agent-pods/<node>/<pod handle>` (src/model/warm-pod-record.ts) name those in use.
 * So an address is idle on node N when a warm handle of N holds it and no pod record of N names it.
 */
import { cniHandleId } from '../model/handle-id.js';
import { POD_RECORD_PREFIX, WARM_HANDLE_PREFIX as WARM_PREFIX, WARM_NETWORK, WRITE_FENCE_PREFIX } from '../model/reserved-network.js';

/** The network name of every warm handle, reserved everywhere else (src/model/reserved-network.ts). */
export { WARM_NETWORK };
/** Datastore prefix of the pod records written behind (defined with the reserved names, for src/cluster's readers). */
export { POD_RECORD_PREFIX };

/** Every warm handle of `node` starts with this (then the refill id). */
export function warmHandlePrefix(node: string): string {
  return cniHandleId(WARM_NETWORK, node, '');
}

/** The node whose warm handle this is, or undefined for any other handle. */
export function warmHandleNode(handle: string): string | undefined {
  if (!handle.startsWith(WARM_PREFIX)) return undefined;
  const end = handle.indexOf(':', WARM_PREFIX.length);
  if (end < 0) return undefined;
  try {
    return decodeURIComponent(handle.slice(WARM_PREFIX.length, end));
  } catch {
    return undefined; // not an escape cniHandleId writes
  }
}

/** The datastore key of `node`'s write fence (see WRITE_FENCE_PREFIX). */
export function writeFenceKey(node: string): string {
  return `${WRITE_FENCE_PREFIX}${node}`;
}
