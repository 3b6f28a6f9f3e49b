/**
 * A node's headroom per family, pure: how many more addresses it can hand out by itself — what
 * a scheduler needs to know before it sends a pod there. Counted as the allocator
 * (plan/plan-assign.ts #fill) takes addresses, from the pools that are candidates for the
 * node (usable, of the family, selecting its labels, optionally only some named ones):
 *
 * - `free`: addresses of the node's own blocks in those pools that are not held, not reserved
 *   and not a block's network, gateway or IPv4 broadcast address (alloc/block.ts freeCount);
 * - `idle`: addresses the caller says are held but idle for the node (a warm pool's queue);
 * - `claimable`: the addresses of the blocks the node may still claim — none when
 *   autoAllocateBlocks is off; otherwise at most effectiveMaxBlocks (maxBlocksPerHost, else the
 *   safety cap) minus the blocks it owns in those pools, and at most the pools' unclaimed,
 *   not wholly reserved blocks. Blocks partly reserved count their unreserved addresses, and the
 *   smallest blocks are counted first (the node may claim those): a lower bound.
 *
 * `headroom` = free + idle + claimable. Borrowing is NOT counted: with strictAffinity off the
 * allocator may still take a free address from another node's block once its own are full
 * (`mayBorrow` says so), but that space is shared with every other node and not the node's to
 * promise — a conservative count is what scheduling needs. Unclaimed space comes from the
 * affinity records (`claimed`); a block without an affinity record (orphaned) counts as free
 * space until a claim of it fails. A family without a candidate pool is not reported.
 */
import { type Block, freeCount } from '../../alloc/block.js';
import { usableCount } from '../../alloc/block-addressing.js';
import { blockAt, blockCount, isWhollyReserved, reservedOrdinals } from '../../alloc/block-layout.js';
import { type Family, type IpRangeSet, type Prefix, familyBits, prefixContainsPrefix, prefixOf } from '../../ip/index.js';
import { selectorMatches } from '../../model/node-selector.js';
import { effectiveMaxBlocks, type IpamConfig, blockKey, type Pool, poolUsable } from '../records/index.js';

export interface FamilyHeadroom {
  readonly family: Family;
  /** free + idle + claimable. */
  readonly headroom: number;
  /** Free addresses in the node's own blocks of the candidate pools. */
  readonly free: number;
  /** Addresses held for the node but idle (a warm pool's queue), as the caller gave them. */
  readonly idle: number;
  /** Addresses of the blocks the node may still claim (a lower bound, see the header). */
  readonly claimable: number;
  readonly claimableBlocks: number;
  /** Blocks the node owns in the candidate pools, and the most it may own (effectiveMaxBlocks). */
  readonly blocks: number;
  readonly maxBlocks: number;
  /** What bounds `claimableBlocks`. */
  readonly claimLimit: 'autoAllocateBlocks off' | 'maxBlocksPerHost' | 'pool space';
  /** strictAffinity is off: other nodes' blocks may still serve (not counted). */
  readonly mayBorrow: boolean;
  /** The candidate pools, in the allocator's order. */
  readonly pools: readonly string[];
}

/** A pool's unclaimed space: blocks nobody claimed and that are not wholly reserved. */
export interface PoolSpace {
  /** Unclaimed blocks with every usable address free. */
  readonly fullBlocks: bigint;
  /** Usable addresses of such a block. */
  readonly blockCapacity: number;
  /** Unreserved usable addresses of each unclaimed, partly reserved block. */
  readonly partial: readonly number[];
}

export interface HeadroomSettings {
  readonly config: IpamConfig;
  /** Sorted by name (ClusterSnapshot.pools). */
  readonly pools: readonly Pool[];
  readonly reserved: IpRangeSet;
}

/**
 * The unclaimed space of every pool, from the CIDRs of every claimed block (affinity records,
 * or blocks' own records): computed once and shared by every node's headroom. O(claimed blocks
 * + reserved ranges) per pool, whatever the pool's size.
 */
export function poolSpaces(s: HeadroomSettings, claimed: Iterable<Prefix>): Map<string, PoolSpace> {
  const claimedKeys = new Map<string, Prefix>();
  for (const c of claimed) claimedKeys.set(blockKey(c), c);
  const out = new Map<string, PoolSpace>();
  for (const pool of s.pools) out.set(pool.name, poolSpace(pool, s.reserved, claimedKeys));
  return out;
}

function poolSpace(pool: Pool, reserved: IpRangeSet, claimed: ReadonlyMap<string, Prefix>): PoolSpace {
  const count = blockCount(pool.cidr, pool.blockSize);
  const first = blockAt(pool.cidr, pool.blockSize, 0n);
  const capacity = Number(usableCount(first));
  if (capacity === 0) return { fullBlocks: 0n, blockCapacity: 0, partial: [] };
  const size = 1n << BigInt(familyBits(pool.cidr.family) - pool.blockSize);
  const last = pool.cidr.family === 4 ? size - 2n : size - 1n; // the last usable ordinal
  const poolEnd = pool.cidr.base + size * count - 1n;
  let wholly = 0n;
  const edge = new Map<string, Prefix>();
  for (const r of reserved.ranges) {
    if (r.start.family !== pool.cidr.family || r.end.value < pool.cidr.base || r.start.value > poolEnd) continue;
    // Blocks whose usable span [base+2, base+last] lies inside [start, end] (the set's ranges are merged).
    const lo = ceilDiv(r.start.value - 2n - pool.cidr.base, size);
    const hi = floorDiv(r.end.value - last - pool.cidr.base, size);
    const from = lo < 0n ? 0n : lo;
    const to = hi > count - 1n ? count - 1n : hi;
    if (to >= from) wholly += to - from + 1n;
    // Only the blocks at the range's two ends can be partly reserved by it.
    for (const v of [r.start.value > pool.cidr.base ? r.start.value : pool.cidr.base, r.end.value < poolEnd ? r.end.value : poolEnd]) {
      const b = prefixOf({ family: pool.cidr.family, value: v }, pool.blockSize);
      if (!isWhollyReserved(b, reserved)) edge.set(blockKey(b), b);
    }
  }
  let claimedHere = 0n;
  for (const b of claimed.values()) {
    if (b.family === pool.cidr.family && b.len === pool.blockSize && prefixContainsPrefix(pool.cidr, b) && !isWhollyReserved(b, reserved)) claimedHere++;
  }
  const partial: number[] = [];
  for (const [key, b] of edge) {
    if (claimed.has(key)) continue;
    const free = freeCount({ cidr: b, affinity: null, allocations: new Map(), next: 0 }, reservedOrdinals(b, reserved));
    if (free < capacity) partial.push(free);
  }
  partial.sort((a, b) => a - b);
  const unclaimed = count - wholly - claimedHere;
  const full = unclaimed - BigInt(partial.length);
  return { fullBlocks: full > 0n ? full : 0n, blockCapacity: capacity, partial };
}

function ceilDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && a > 0n ? q + 1n : q;
}

function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && a < 0n ? q - 1n : q;
}

export interface NodeHeadroomInput {
  readonly node: string;
  /** The node's labels (its `nodes/<name>` record; {} without one). */
  readonly labels: Readonly<Record<string, string>>;
  /** Blocks affine to the node (others are ignored). */
  readonly blocks: readonly Block[];
  /** Only these pools, in this order (a warm pool's --pools); default every pool. */
  readonly onlyPools?: readonly string[];
  /** Addresses held for the node but idle, per family (a warm pool's idle queue). */
  readonly idle?: Partial<Record<Family, number>>;
}

/** The node's headroom for each family that has a candidate pool (IPv4 first). */
export function nodeHeadroom(s: HeadroomSettings, spaces: ReadonlyMap<string, PoolSpace>, n: NodeHeadroomInput): FamilyHeadroom[] {
  const out: FamilyHeadroom[] = [];
  const named = n.onlyPools ? n.onlyPools.flatMap((name) => s.pools.filter((p) => p.name === name)) : s.pools;
  for (const family of [4, 6] as const) {
    const cands = named.filter((p) => p.cidr.family === family && poolUsable(p) && selectorMatches(p.nodeSelector, n.labels));
    if (cands.length === 0) continue;
    let free = 0;
    let owned = 0;
    for (const b of n.blocks) {
      if (b.affinity !== n.node || !cands.some((p) => prefixContainsPrefix(p.cidr, b.cidr))) continue;
      owned++;
      free += freeCount(b, reservedOrdinals(b.cidr, s.reserved));
    }
    const maxBlocks = effectiveMaxBlocks(s.config);
    const quota = s.config.autoAllocateBlocks ? Math.max(0, maxBlocks - owned) : 0;
    // The smallest claimable blocks first: partly reserved ones, then full ones by capacity.
    const groups: { capacity: number; count: bigint }[] = [];
    for (const p of cands) {
      const sp = spaces.get(p.name);
      if (!sp) continue;
      for (const c of sp.partial) groups.push({ capacity: c, count: 1n });
      if (sp.fullBlocks > 0n) groups.push({ capacity: sp.blockCapacity, count: sp.fullBlocks });
    }
    groups.sort((a, b) => a.capacity - b.capacity);
    let claimableBlocks = 0;
    let claimable = 0;
    for (const g of groups) {
      if (claimableBlocks >= quota) break;
      if (g.capacity === 0) continue;
      const take = Number(g.count < BigInt(quota - claimableBlocks) ? g.count : BigInt(quota - claimableBlocks));
      claimableBlocks += take;
      claimable += take * g.capacity;
    }
    const idle = Math.max(0, n.idle?.[family] ?? 0);
    out.push({
      family,
      headroom: free + idle + claimable,
      free,
      idle,
      claimable,
      claimableBlocks,
      blocks: owned,
      maxBlocks,
      claimLimit: !s.config.autoAllocateBlocks ? 'autoAllocateBlocks off' : claimableBlocks >= quota ? 'maxBlocksPerHost' : 'pool space',
      mayBorrow: !s.config.strictAffinity,
      pools: cands.map((p) => p.name),
    });
  }
  return out;
}

/**
 * Every listed node's headroom from every block record (one pass, as `podipam serve`'s summary
 * reads them): the claimed space is every block that exists (orphans included), each node's own
 * blocks those affine to it.
 */
export function headroomByNode(
  s: HeadroomSettings,
  blocks: readonly Block[],
  nodes: readonly { readonly name: string; readonly labels: Readonly<Record<string, string>>; readonly idle?: Partial<Record<Family, number>> }[],
): Map<string, FamilyHeadroom[]> {
  const spaces = poolSpaces(
    s,
    blocks.map((b) => b.cidr),
  );
  const mine = new Map<string, Block[]>();
  for (const b of blocks) {
    if (b.affinity === null) continue;
    const list = mine.get(b.affinity);
    if (list) list.push(b);
    else mine.set(b.affinity, [b]);
  }
  return new Map(
    nodes.map((n) => [
      n.name,
      nodeHeadroom(s, spaces, { node: n.name, labels: n.labels, blocks: mine.get(n.name) ?? [], ...(n.idle ? { idle: n.idle } : {}) }),
    ]),
  );
}
