import type { Store } from '../store/index.js';
import { listAll } from '../store/list-all.js';
import { decodeNodeRecord, NODE_PREFIX, type NodeRecord } from '../model/node-record.js';
import { decodeNodeTombstone, NODE_TOMBSTONE_PREFIX, type NodeTombstone } from '../model/node-tombstone.js';

/** A node record with the revision it was read at. */
export interface NodeRecordEntry {
  readonly record: NodeRecord;
  readonly rev: number;
}

/**
 * Every node record, in name order. Records that do not decode are passed to `onBad`
 * (default: skipped) rather than failing the whole listing.
 */
export async function listNodes(store: Store, onBad: (key: string, error: Error) => void = () => {}): Promise<NodeRecordEntry[]> {
  const out: NodeRecordEntry[] = [];
  for (const e of await listAll(store, NODE_PREFIX)) {
    try {
      out.push({ record: decodeNodeRecord(e.key, e.value), rev: e.rev });
    } catch (err) {
      onBad(e.key, err as Error);
    }
  }
  return out;
}

/** Every node tombstone (the proof a node's record was deleted), in name order; unreadable ones skipped. */
export async function listNodeTombstones(store: Store): Promise<NodeTombstone[]> {
  const out: NodeTombstone[] = [];
  for (const e of await listAll(store, NODE_TOMBSTONE_PREFIX)) {
    try {
      out.push(decodeNodeTombstone(e.key, e.value));
    } catch {
      // ipam check reports it (corrupt-record); it proves nothing
    }
  }
  return out;
}
