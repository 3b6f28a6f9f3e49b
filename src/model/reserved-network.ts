/**
 * The one network name podipam keeps for itself. The node agent's warm pool holds its addresses
 * under handles `podipam-warm:<node>:<refill id>` (src/warm/warm-handle.ts) — idle and in-use
 * addresses alike — and on restart adopts every handle of its node with that prefix. A handle in
 * that namespace written by anyone else would be taken for warm stock (and handed to a new pod),
 * and a CNI GC of that network would release a whole node's warm addresses, live pods' included.
 *
 * So the namespace is reserved at every edge that creates handles: the plugin's datastore back
 * ends (cluster mode, the agent), the server API and `import host-local` refuse the network name
 * and any handle id with the prefix; cluster-mode GC never releases such a handle. Only the
 * agent's warm pool writes them. (The local back end writes no handle, only host-local's files,
 * and accepts every name host-local accepts.)
 */

/** The network name of every warm handle. */
export const WARM_NETWORK = 'podipam-warm';

/** Every warm handle starts with this; no other handle may. */
export const WARM_HANDLE_PREFIX = `${WARM_NETWORK}:`;

/** Datastore prefix of the warm pool's pod records (`agent-pods/<node>/<attachment>`), written behind: which pod got which warm addresses. */
export const POD_RECORD_PREFIX = 'agent-pods/';

/**
 * Datastore prefix of each agent's write fence (`agent-writes/<node>`): every write-behind txn
 * compares its revision and puts it, so a txn that reached a member but was given up (a member
 * paused or cut off mid-request) can never land after a later one and bring back records that
 * later txn deleted.
 */
export const WRITE_FENCE_PREFIX = 'agent-writes/';

const WHY = "reserved for the node agent's warm pool";

/** True for a handle id in the warm pool's namespace. */
export function isWarmHandle(handle: string): boolean {
  return handle.startsWith(WARM_HANDLE_PREFIX);
}

/** Why `name` may not be used (naming `field` and the value), or undefined when it may. Each edge throws its own error with it. */
export function reservedNetwork(field: string, name: string): string | undefined {
  return name === WARM_NETWORK
    ? `${field} ${JSON.stringify(name)}: ${WHY} (its handles are ${WARM_HANDLE_PREFIX}<node>:…); choose another network name`
    : undefined;
}

/** Why `handle` may not be written (naming `field` and the value), or undefined when it may. */
export function reservedHandle(field: string, handle: string): string | undefined {
  return isWarmHandle(handle) ? `${field} ${JSON.stringify(handle)}: ${WHY} (handles starting "${WARM_HANDLE_PREFIX}")` : undefined;
}
