/**
 * Reads what one node's headroom (node-headroom.ts) needs from the datastore: the cluster
 * snapshot (config, pools, reservations), the node's record (labels for pool selectors), every
 * affinity record (which blocks are claimed: small records, listed in pages) and the node's own
 * blocks (one batched read). About six round trips, whatever the cluster's size; meant for a
 * periodic resync, never for a pod's start path.
 */
import type { Block } from '../../alloc/block.js';
import type { Family, Prefix } from '../../ip/index.js';
import { nodeKey } from '../../model/node-record.js';
import type { Store } from '../../store/index.js';
import { listAll } from '../../store/list-all.js';
import { decodeBlock, AFFINITY_PREFIX, blockKey, parseAffinityKey } from '../records/index.js';
import { loadSnapshot } from './cluster-snapshot.js';
import { type FamilyHeadroom, nodeHeadroom, poolSpaces } from './node-headroom.js';
import { readKeys } from './read-keys.js';

export interface LoadHeadroomOptions {
  /** Only these pools, in this order (a warm pool's --pools). */
  readonly onlyPools?: readonly string[];
  /** Addresses held for the node but idle, per family. */
  readonly idle?: Partial<Record<Family, number>>;
}

/** The node's headroom per family. Throws what the store throws, CorruptRecordError for a bad config/pool/block record. */
export async function loadNodeHeadroom(store: Store, node: string, o: LoadHeadroomOptions = {}): Promise<FamilyHeadroom[]> {
  const snap = await loadSnapshot(store);
  const [record, affinities] = await Promise.all([store.get(nodeKey(node)), listAll(store, AFFINITY_PREFIX)]);
  const claimed: Prefix[] = [];
  const mine: string[] = [];
  for (const e of affinities) {
    const a = parseAffinityKey(e.key);
    if (!a) continue;
    claimed.push(a.cidr);
    if (a.node === node) mine.push(blockKey(a.cidr));
  }
  const blocks: Block[] = [];
  if (mine.length > 0) for (const entry of (await readKeys(store, mine)).values()) if (entry) blocks.push(decodeBlock(entry));
  return nodeHeadroom(snap, poolSpaces(snap, claimed), { node, labels: labelsOf(record?.value), blocks, ...o });
}

/** The labels of a node record's JSON; {} when absent or unreadable (as the allocator: node-view.ts noteNode). */
export function labelsOf(value: string | undefined): Record<string, string> {
  if (value === undefined) return {};
  try {
    const o = JSON.parse(value) as { labels?: unknown };
    if (!o.labels || typeof o.labels !== 'object') return {};
    return Object.fromEntries(Object.entries(o.labels).filter((kv): kv is [string, string] => typeof kv[1] === 'string'));
  } catch {
    return {};
  }
}
