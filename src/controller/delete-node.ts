import type { Store } from '../store/index.js';
import { NodeConflictError, UnknownNodeError } from './errors.js';
import { decodeNodeRecord, nodeKey, type NodeRecord } from '../model/node-record.js';
import { writeNodeRecord } from './write-node-record.js';

const MAX_ATTEMPTS = 8;

/**
 * Deletes a node: its record and the claims of its pod CIDRs go in one transaction, so the
 * CIDRs are free in the datastore at once, whether or not a controller runs (a running one
 * notices the record is gone and frees them in its bitmap). Read → compare-and-swap, retried
 * up to 8 times on conflict (NodeConflictError after). Throws UnknownNodeError when there is
 * no record. Returns the record as it was.
 */
export async function deleteNode(store: Store, name: string): Promise<NodeRecord> {
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const entry = await store.get(nodeKey(name));
    if (!entry) throw new UnknownNodeError(name);
    const prev = decodeNodeRecord(entry.key, entry.value);
    const out = await writeNodeRecord(store, { name, rev: entry.rev, prev }, undefined);
    if (out.ok) return prev;
  }
  throw new NodeConflictError(name, MAX_ATTEMPTS);
}
