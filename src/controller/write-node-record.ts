import type { Compare, Op, Store } from '../store/index.js';
import { decodeNodeCidrClaim, encodeNodeCidrClaim, nodeCidrClaimKey } from './node-cidr-claim.js';
import { encodeNodeRecord, nodeKey, type NodeRecord } from '../model/node-record.js';
import { encodeNodeTombstone, nodeTombstoneKey, type NodeDeletedBy } from '../model/node-tombstone.js';

/** A deletion of the record: who deletes it, and when (default now). */
export interface NodeDeletion {
  readonly deletedBy: NodeDeletedBy;
  readonly at?: Date;
}

/** The version of a node record a write is based on: `rev` 0 and no `prev` for "absent". */
export interface NodeRecordBase {
  readonly name: string;
  readonly rev: number;
  readonly prev?: NodeRecord;
}

export type WriteNodeOutcome =
  | { readonly ok: true; readonly rev: number }
  | {
      readonly ok: false;
      /** The record, or a claim this write meant to drop, is not as read: re-read and retry. */
      readonly stale: boolean;
      /** CIDRs the write meant to claim that another node holds: cidr → owner. */
      readonly claimedBy: ReadonlyMap<string, string>;
      /** CIDRs whose claim already names this node (a leftover): cidr → claim rev, to pass back in. */
      readonly ownClaims: ReadonlyMap<string, number>;
    };

/**
 * One compare-and-swap write of a node record with its CIDR claims, all in one transaction:
 * puts `next` (or deletes the record when `next` is a NodeDeletion) only if the record is still
 * at `base.rev`; a deletion writes the node's tombstone (the proof cluster GC needs that the
 * node is gone, src/model/node-tombstone.ts) and a put deletes it (the node is back) — every
 * node record write goes through here, so record and tombstone never disagree; claims every CIDR in next.podCIDRs that base.prev did not list (compare: claim
 * absent, or at the rev given in `ownClaims`); deletes the claims, still naming this node, of
 * CIDRs it drops. Nothing is written unless everything holds; then the outcome says what did
 * not. Throws StoreUnavailableError when the store cannot be reached (the write may or may not
 * have landed: re-read before retrying).
 */
export async function writeNodeRecord(
  store: Store,
  base: NodeRecordBase,
  change: NodeRecord | NodeDeletion,
  ownClaims: ReadonlyMap<string, number> = new Map(),
): Promise<WriteNodeOutcome> {
  const key = nodeKey(base.name);
  const deletion = 'deletedBy' in change ? change : undefined;
  const next = deletion ? undefined : (change as NodeRecord);
  const before = base.prev?.podCIDRs ?? [];
  const after = next?.podCIDRs ?? [];
  const claim = after.filter((c) => !before.includes(c));
  const dropped = before.filter((c) => !after.includes(c));
  const droppedClaims = await Promise.all(dropped.map((c) => store.get(nodeCidrClaimKey(c))));

  const compares: Compare[] = [{ key, rev: base.rev }];
  const tombstone = nodeTombstoneKey(base.name);
  const ops: Op[] = deletion
    ? [
        { type: 'delete', key },
        {
          type: 'put',
          key: tombstone,
          value: encodeNodeTombstone({ name: base.name, deletedAt: (deletion.at ?? new Date()).toISOString(), by: deletion.deletedBy }),
        },
      ]
    : [
        { type: 'put', key, value: encodeNodeRecord(next!) },
        { type: 'delete', key: tombstone },
      ];
  for (const c of claim) {
    compares.push({ key: nodeCidrClaimKey(c), rev: ownClaims.get(c) ?? 0 });
    ops.push({ type: 'put', key: nodeCidrClaimKey(c), value: encodeNodeCidrClaim(base.name) });
  }
  for (const e of droppedClaims) {
    if (e && decodeNodeCidrClaim(e.value) === base.name) {
      compares.push({ key: e.key, rev: e.rev });
      ops.push({ type: 'delete', key: e.key });
    }
  }

  const res = await store.txn(compares, ops);
  if (res.succeeded) return { ok: true, rev: res.rev };
  const current = res.current ?? [];
  const claimedBy = new Map<string, string>();
  const own = new Map(ownClaims);
  claim.forEach((c, i) => {
    const e = current[i + 1];
    if (!e) return;
    const owner = decodeNodeCidrClaim(e.value);
    if (owner === base.name) own.set(c, e.rev);
    else claimedBy.set(c, owner ?? `(unreadable claim ${e.key})`);
  });
  const stale = (current[0]?.rev ?? 0) !== base.rev || compares.slice(1 + claim.length).some((c, i) => (current[1 + claim.length + i]?.rev ?? 0) !== c.rev);
  return { ok: false, stale, claimedBy, ownClaims: own };
}
