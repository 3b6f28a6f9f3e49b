import type { Store } from '../store/index.js';
import { listAll } from '../store/list-all.js';
import { decodeNodeRecord, NODE_PREFIX, type NodeRecord } from '../model/node-record.js';

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
