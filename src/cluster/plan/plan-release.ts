/**
 * Plans releases as ONE transaction, purely: free a handle's addresses (or given addresses),
 * update or delete the handle record, and delete blocks that end up empty when nobody needs
 * them — all in the same txn, compared on every record the plan read.
 *
 * Empty-block policy ("released when empty"): an empty block with no affinity is deleted; an
 * empty block affine to the releasing node is deleted together with its affinity when that
 * node holds another block of the same pool with a free address (so the next ADD does not
 * have to claim again — this keeps a node at a block boundary from claiming and releasing on
 * every pod). A node's last usable block stays, as in Calico.
 *
 * Reuse quarantine (src/alloc/block-quarantine.ts): every freed ordinal of a pool with
 * `reuseAfter` is recorded in its block as released now, in the same txn; a block that still
 * quarantines an address is not deleted, empty or not (its deletion would lose the record and
 * let a node claim the block again and hand the address out at once).
 */
import { type Block, addrOfOrdinal, freeCount, holderOf, isEmptyBlock, ordinalOf, releaseHandle, releaseOrdinals } from '../../alloc/block.js';
import { type Quarantine, isDisposable, stampReleases } from '../../alloc/block-quarantine.js';
import { reservedOrdinals } from '../../alloc/block-layout.js';
import { type Addr, type Prefix, formatPrefix, parsePrefix, prefixContains, prefixContainsPrefix, prefixOf } from '../../ip/index.js';
import type { Compare, Op } from '../../store/index.js';
import type { ClusterSnapshot, KnownBlock } from '../views/index.js';
import { type HandleRecord, adjustHandle, encodeHandle, encodeBlock, affinityKey, blockKey, handleKey, poolBlockSizes, poolSpace } from '../records/index.js';

export interface HandleState {
  readonly rev: number;
  readonly record: HandleRecord | undefined;
}

export type ReleasePlan =
  | { readonly kind: 'read'; readonly keys: readonly string[] }
  | {
      readonly kind: 'txn';
      readonly compares: readonly Compare[];
      readonly ops: readonly Op[];
      /** Addresses freed, with the handle that held each. */
      readonly released: readonly { readonly addr: Addr; readonly handle: string }[];
      /** Blocks written (Block) or deleted (null), by key. */
      readonly blocks: ReadonlyMap<string, Block | null>;
    };

export interface ReleaseInput {
  /** Known blocks by key (undefined = unknown, block null = absent). */
  readonly state: (key: string) => KnownBlock | undefined;
  /** For the empty-block policy: the releasing node, its blocks, and the snapshot's pools; omit to keep empty affine blocks. */
  readonly policy?: { readonly node: string; readonly mine: ReadonlyMap<string, KnownBlock>; readonly snap: ClusterSnapshot };
  /** The reuse quarantine of a block (src/cluster/records/pool-quarantine.ts): its pool's, at the releaser's clock. */
  readonly quarantine: (cidr: Prefix) => Quarantine;
}

/** Plans releasing everything `handle` holds; `handleState.record` must be present. */
export function planReleaseHandle(input: ReleaseInput, handle: string, handleState: HandleState & { record: HandleRecord }): ReleasePlan {
  const keys = [...handleState.record.blocks.keys()].map((c) => blockKey(parsePrefix(c)));
  const missing = keys.filter((k) => input.state(k) === undefined);
  if (missing.length > 0) return { kind: 'read', keys: missing };
  const compares: Compare[] = [{ key: handleKey(handle), rev: handleState.rev }];
  const ops: Op[] = [{ type: 'delete', key: handleKey(handle) }];
  const released: { addr: Addr; handle: string }[] = [];
  const blocks = new Map<string, Block | null>();
  for (const key of keys) {
    const st = input.state(key)!;
    // Compared even when the known state shows nothing of the handle's there: that state may be
    // a hint older than the handle's allocation (written by a process that died before saving
    // its hints), and deleting the handle without the compare would leak the address.
    compares.push({ key, rev: st.rev });
    if (!st.block) continue; // the handle points at a block that is gone: dropping the handle is all there is to do
    const r = releaseHandle(st.block, handle);
    if (r.ordinals.length === 0) continue;
    for (const o of r.ordinals) released.push({ addr: addrOfOrdinal(st.block.cidr, o), handle });
    writeBlock(input, key, st.block, r.block, ops, blocks);
  }
  return { kind: 'txn', compares, ops, released, blocks };
}

/**
 * Plans releasing specific addresses, whoever holds them — or, with `heldBy`, only those a
 * handle of that set holds (an address meanwhile released and handed to another is left
 * alone: the txn compares its block). Addresses outside every pool or not allocated (to
 * `heldBy`) are skipped (reported by the caller as not allocated).
 */
export function planReleaseAddrs(
  input: ReleaseInput,
  snap: ClusterSnapshot,
  addrs: readonly Addr[],
  handles: ReadonlyMap<string, HandleState>,
  heldBy?: ReadonlySet<string>,
): ReleasePlan {
  const byBlock = new Map<string, { cidr: ReturnType<typeof prefixOf>; ordinals: number[] }>();
  const unknown: string[] = [];
  for (const a of addrs) {
    const pool = snap.pools.find((p) => prefixContains(poolSpace(p), a));
    if (!pool) continue;
    // The block holding it may be of any of the pool's sizes (its size changed): the one that exists.
    const cidrs = poolBlockSizes(pool).map((s) => prefixOf(a, s));
    const states = cidrs.map((c) => input.state(blockKey(c)));
    if (states.some((st) => st === undefined)) {
      unknown.push(...cidrs.map(blockKey).filter((_k, i) => states[i] === undefined));
      continue;
    }
    const cidr = cidrs.find((_c, i) => states[i]!.block) ?? cidrs[0]!;
    const key = blockKey(cidr);
    const e = byBlock.get(key) ?? { cidr, ordinals: [] };
    e.ordinals.push(ordinalOf(cidr, a));
    byBlock.set(key, e);
  }
  const missing = [...new Set([...unknown, ...[...byBlock.keys()].filter((k) => input.state(k) === undefined)])];
  if (missing.length > 0) return { kind: 'read', keys: missing };
  const holders = new Set<string>();
  for (const [key, e] of byBlock) {
    const b = input.state(key)!.block;
    if (!b) continue;
    if (heldBy) e.ordinals = e.ordinals.filter((o) => heldBy.has(holderOf(b, o) ?? ''));
    for (const o of e.ordinals) if (holderOf(b, o) !== undefined) holders.add(holderOf(b, o)!);
  }
  const unknownHandles = [...holders].filter((h) => !handles.has(h)).map(handleKey);
  if (unknownHandles.length > 0) return { kind: 'read', keys: unknownHandles };

  const compares: Compare[] = [];
  const ops: Op[] = [];
  const released: { addr: Addr; handle: string }[] = [];
  const blocks = new Map<string, Block | null>();
  const deltas = new Map<string, Map<string, number>>();
  for (const [key, e] of byBlock) {
    const st = input.state(key)!;
    if (!st.block) continue;
    const r = releaseOrdinals(st.block, e.ordinals);
    if (r.released.size === 0) continue;
    compares.push({ key, rev: st.rev });
    for (const [o, h] of r.released) {
      released.push({ addr: addrOfOrdinal(st.block.cidr, o), handle: h });
      const d = deltas.get(h) ?? new Map<string, number>();
      d.set(formatPrefix(st.block.cidr), (d.get(formatPrefix(st.block.cidr)) ?? 0) - 1);
      deltas.set(h, d);
    }
    writeBlock(input, key, st.block, r.block, ops, blocks);
  }
  for (const [h, d] of deltas) {
    const hs = handles.get(h)!;
    compares.push({ key: handleKey(h), rev: hs.rev });
    if (!hs.record) continue; // an allocation whose handle is gone (a leak): freeing the address is the repair
    const next = adjustHandle(hs.record, d);
    ops.push(next.blocks.size === 0 ? { type: 'delete', key: handleKey(h) } : { type: 'put', key: handleKey(h), value: encodeHandle(next) });
  }
  return { kind: 'txn', compares, ops, released, blocks };
}

function writeBlock(input: ReleaseInput, key: string, before: Block, after: Block, ops: Op[], blocks: Map<string, Block | null>): void {
  const q = input.quarantine(after.cidr);
  const block = stampReleases(before, after, q);
  if (isEmptyBlock(block) && isDisposable(block, q) && (block.affinity === null || releasable(input, key, block, blocks))) {
    ops.push({ type: 'delete', key });
    if (block.affinity !== null) ops.push({ type: 'delete', key: affinityKey(block.affinity, block.cidr) });
    blocks.set(key, null);
  } else {
    ops.push({ type: 'put', key, value: encodeBlock(block) });
    blocks.set(key, block);
  }
}

/** An empty block of the releasing node goes when another block of its pool has room. */
function releasable(input: ReleaseInput, key: string, block: Block, planned: ReadonlyMap<string, Block | null>): boolean {
  const p = input.policy;
  if (!p || block.affinity !== p.node) return false;
  const pool = p.snap.pools.find((x) => prefixContainsPrefix(x.cidr, block.cidr));
  if (!pool) return false;
  for (const [k, kb] of p.mine) {
    if (k === key || planned.get(k) === null || !kb.block || !prefixContainsPrefix(pool.cidr, kb.block.cidr)) continue;
    if (freeCount(kb.block, reservedOrdinals(kb.block.cidr, p.snap.autoExcluded)) > 0) return true;
  }
  return false;
}
