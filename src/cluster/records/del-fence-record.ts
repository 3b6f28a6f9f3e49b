/**
 * A node's DEL fence (`del-fences/<node>` → `{at, handle}`). Every cluster ADD txn of the node
 * compares the fence's revision (build-assign-txn.ts); a DEL that finds its handle absent moves
 * it, in a txn that also proves the handle still absent (release.ts). Why: an ADD whose answer
 * was lost (a member paused or cut off with the txn in its receive buffer) may still land later.
 * The runtime's DEL finds nothing and, without the fence, writes nothing — so nothing the late
 * txn compares has changed, and it would land and hold an address for an attachment that was
 * already deleted (a leak until GC). With the fence, the late txn's compare fails. Only the
 * revision matters; the value says when and for which handle the fence last moved, for people.
 * The key is never read on the ADD path: the node view assumes 0 (absent) and learns the
 * current revision from the first compare that fails on it.
 */

/** Datastore prefix of the nodes' DEL fences. */
export const DEL_FENCE_PREFIX = 'del-fences/';

export function delFenceKey(node: string): string {
  return DEL_FENCE_PREFIX + node;
}

export interface DelFence {
  /** When the fence moved (ISO). */
  readonly at: string;
  /** The handle whose DEL found nothing. */
  readonly handle: string;
}

export function encodeDelFence(f: DelFence): string {
  return JSON.stringify({ at: f.at, handle: f.handle });
}
