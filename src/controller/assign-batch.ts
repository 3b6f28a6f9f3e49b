import { MAX_TXN_OPS, type Compare, type Op, type Store } from '../store/index.js';
import { decodeNodeCidrClaim, encodeNodeCidrClaim, nodeCidrClaimKey } from './node-cidr-claim.js';
import { encodeNodeRecord, nodeKey, type NodeRecord } from '../model/node-record.js';

/** One node's assignment: its record as read at `rev`, the record to write, the CIDRs it claims. */
export interface BatchItem {
  readonly rev: number;
  readonly next: NodeRecord;
  /** CIDRs (canonical text) in next.podCIDRs that the record read did not list. */
  readonly claims: readonly string[];
}

export type BatchOutcome = { readonly ok: true; readonly rev: number } | { readonly ok: false; readonly claimedBy: ReadonlyMap<string, string> };

/** Compares (or ops) one item adds to a transaction. */
export function batchItemSize(item: BatchItem): number {
  return 1 + item.claims.length;
}

/**
 * Records several nodes' CIDRs in ONE transaction — each record compared at its rev, each
 * claim compared absent — so a controller catching up on thousands of nodes pays one round
 * trip per ~40 of them instead of two per node. All or nothing: if anything changed, nothing
 * is written and every item comes back not ok, with the claims other nodes hold (cidr → owner)
 * so the caller can keep those used and retry each node on its own. At most MAX_TXN_OPS
 * compares: RangeError beyond. Throws StoreUnavailableError like Store.txn.
 */
export async function assignBatch(store: Store, items: readonly BatchItem[]): Promise<BatchOutcome[]> {
  const compares: Compare[] = [];
  const ops: Op[] = [];
  for (const it of items) {
    const name = it.next.name;
    compares.push({ key: nodeKey(name), rev: it.rev });
    ops.push({ type: 'put', key: nodeKey(name), value: encodeNodeRecord(it.next) });
    for (const c of it.claims) {
      compares.push({ key: nodeCidrClaimKey(c), rev: 0 });
      ops.push({ type: 'put', key: nodeCidrClaimKey(c), value: encodeNodeCidrClaim(name) });
    }
  }
  if (compares.length > MAX_TXN_OPS) throw new RangeError(`Cannot assign a batch of ${compares.length} compares: at most ${MAX_TXN_OPS}`);
  const res = await store.txn(compares, ops);
  if (res.succeeded) return items.map(() => ({ ok: true, rev: res.rev }));
  const current = res.current ?? [];
  let i = 0;
  return items.map((it) => {
    i++; // the record's compare
    const claimedBy = new Map<string, string>();
    for (const c of it.claims) {
      const e = current[i++];
      const owner = e ? decodeNodeCidrClaim(e.value) : undefined;
      if (e && owner !== it.next.name) claimedBy.set(c, owner ?? `(unreadable claim ${e.key})`);
    }
    return { ok: false, claimedBy };
  });
}
