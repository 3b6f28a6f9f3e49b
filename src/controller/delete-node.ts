import type { Store } from '../store/index.js';
import { NodeConflictError, UnknownNodeError } from './errors.js';
import { decodeNodeRecord, nodeKey, type NodeRecord } from '../model/node-record.js';
import type { NodeDeletedBy } from '../model/node-tombstone.js';
import { writeNodeRecord } from './write-node-record.js';

const MAX_ATTEMPTS = 8;

export interface DeleteNodeOptions {
  /** Who deletes it (recorded in the tombstone). */
  readonly by: NodeDeletedBy;
}

/**
 * Deletes a node: its record and the claims of its pod CIDRs go in one transaction, so the
 * CIDRs are free in the datastore at once, whether or not a controller runs (a running one
 * notices the record is gone and frees them in its bitmap); the same transaction writes the
 * node's tombstone, the proof cluster GC needs before it frees the node's pods and blocks
 * (src/model/node-tombstone.ts). Read → compare-and-swap, retried up to 8 times on conflict
 * (NodeConflictError after). Throws UnknownNodeError when there is no record. Returns the
 * record as it was.
 */
export async function deleteNode(store: Store, name: string, o: DeleteNodeOptions): Promise<NodeRecord> {
  const rec = await removeNode(store, name, o.by, false);
  if (!rec) throw new UnknownNodeError(name);
  return rec;
}

/**
 * The operator's word that a node is gone, also when it has no record (a node that only
 * claimed blocks: their affinity registered it): deletes the record as deleteNode does if
 * there is one, else writes only the tombstone (compared: still no record). Returns the
 * record deleted, if any. The caller has validated `name`.
 */
export async function recordNodeGone(store: Store, name: string, o: DeleteNodeOptions): Promise<NodeRecord | undefined> {
  return removeNode(store, name, o.by, true);
}

async function removeNode(store: Store, name: string, by: NodeDeletedBy, withoutRecord: boolean): Promise<NodeRecord | undefined> {
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const entry = await store.get(nodeKey(name));
    if (!entry && !withoutRecord) return undefined;
    const prev = entry ? decodeNodeRecord(entry.key, entry.value) : undefined;
    const out = await writeNodeRecord(store, { name, rev: entry?.rev ?? 0, prev }, { deletedBy: by });
    if (out.ok) return prev;
  }
  throw new NodeConflictError(name, MAX_ATTEMPTS);
}
