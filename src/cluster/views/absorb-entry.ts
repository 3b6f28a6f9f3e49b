/**
 * Folds an entry learned from the datastore (a read, a list, or a failed txn's `current`)
 * into the caller's knowledge: blocks into the node view or the call's map of other blocks,
 * the node record into the labels, a changed `config` into a stale snapshot, handles into
 * the handle hints, the node's DEL fence into its revision. Keys it does not know are ignored.
 */
import type { Entry } from '../../store/index.js';
import { nodeKey } from '../../model/node-record.js';
import { decodeBlock, decodeHandle, CONFIG_KEY, HANDLE_PREFIX, delFenceKey, parseBlockKey } from '../records/index.js';
import type { KnownBlock, NodeView } from './node-view.js';
import type { ViewCache } from './view-cache.js';

export function absorbEntry(cache: ViewCache, view: NodeView | undefined, others: Map<string, KnownBlock>, key: string, entry: Entry | undefined): void {
  if (key === CONFIG_KEY) {
    if ((entry?.rev ?? 0) !== cache.snapshot?.configRev) cache.invalidateSnapshot();
  } else if (view && key === nodeKey(view.node)) {
    view.noteNode(entry);
  } else if (parseBlockKey(key)) {
    const block = entry ? decodeBlock(entry) : null;
    const rev = entry?.rev ?? 0;
    if (view && block?.affinity === view.node) {
      view.noteBlock(key, rev, block);
      others.delete(key);
    } else {
      view?.noteBlock(key, rev, block);
      others.set(key, { rev, block });
    }
  } else if (view && key === delFenceKey(view.node)) {
    view.delFenceRev = entry?.rev ?? 0;
  } else if (view && key.startsWith(HANDLE_PREFIX)) {
    const handle = key.slice(HANDLE_PREFIX.length);
    view.noteHandle(handle, entry?.rev ?? 0, entry ? decodeHandle(entry) : undefined);
  }
}
