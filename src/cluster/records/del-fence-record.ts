/**
 * A node's DEL fence (`del-fences/<node>` → `{at, handle}`). Every cluster ADD txn of the node
 * compares the fence's revision (build-assign-txn.ts), and every DEL on the node moves it
 * (release.ts, release-group.ts): a release in its own txn (one more op, no round trip), a DEL that
 * finds its handle absent in a txn that proves the handle still absent. So no ADD txn planned
 * before a DEL of the node committed can land after it. Why: an ADD whose answer was lost (a
 * member paused or cut off with the txn in its receive buffer) may still land later. The runtime's
 * DEL finds nothing and, without the fence, writes nothing — nothing the late txn compares has
 * changed, and it would hold an address for an attachment already deleted (a leak until GC); and
 * when a retried ADD landed and the DEL freed it (and with it a block the late txn claims), the
 * late txn's compares could hold again. With the fence, the late txn's compare fails. Only the
 * revision matters; the value says when and for which handle it last moved, for people. The ADD
 * path never reads the key: a process assumes 0 (absent), keeps the revision its own DELs wrote
 * (and the plugin's hint file keeps it between runs), and learns another writer's from the first
 * compare that fails on it.
 */
import type { Op } from '../../store/index.js';

/** Datastore prefix of the nodes' DEL fences. */
export const DEL_FENCE_PREFIX = 'del-fences/';

export function delFenceKey(node: string): string {
  return DEL_FENCE_PREFIX + node;
}

export interface DelFence {
  /** When the fence moved (ISO). */
  readonly at: string;
  /** The handle of the DEL that moved it last. */
  readonly handle: string;
}

export function encodeDelFence(f: DelFence): string {
  return JSON.stringify({ at: f.at, handle: f.handle });
}

/** The op that moves `node`'s DEL fence for a DEL of `handle` at `now`. */
export function delFenceOp(node: string, handle: string, now: Date): Op {
  return { type: 'put', key: delFenceKey(node), value: encodeDelFence({ at: now.toISOString(), handle }) };
}
