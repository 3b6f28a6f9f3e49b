/**
 * The one utilisation computation of the cluster store, in exact integers (bigint): what
 * `podipam ipam show`, the API's pools/blocks/nodes and the dashboard all show. One paged
 * pass over `pools/` and one over `blocks/` (not atomic together; exact on a quiet datastore).
 * Capacity counts the addresses that can be handed out — each block's network, gateway and
 * (IPv4) broadcast addresses excluded (src/alloc/block-addressing.ts) — so a full pool shows
 * 100%.
 */
import { type Block, addrOfOrdinal, allocatedCount } from '../../alloc/block.js';
import { usableCount } from '../../alloc/block-addressing.js';
import { blockAt, blockCount, poolUsableCount } from '../../alloc/block-layout.js';
import { compareKeys } from '../../store/key-order.js';
import { listAll } from '../../store/list-all.js';
import { type Addr, type Prefix, prefixContainsPrefix } from '../../ip/index.js';
import { decodeBlock, BLOCK_PREFIX, POOL_PREFIX, decodePool, type Pool } from '../records/index.js';
import type { IpamContext } from './ipam-context.js';

export interface PoolUtilisation {
  readonly pool: Pool;
  /** Addresses the pool can hand out: block slots × usable addresses per block. */
  readonly capacity: bigint;
  /** Addresses allocated in the pool's blocks. */
  readonly allocated: bigint;
  /** Of `allocated`, those the caller's `isIdle` calls idle (0 without it). */
  readonly idle: bigint;
  /** Blocks claimed in the pool. */
  readonly blocks: number;
  /** Blocks the pool can be cut into. */
  readonly blockSlots: bigint;
  /** Usable addresses per block. */
  readonly blockCapacity: bigint;
}

export interface BlockUtilisation {
  readonly cidr: Prefix;
  /** The pool holding the block, or null when no pool covers it (its pool was deleted). */
  readonly pool: string | null;
  /** The node the block is affine to, or null. */
  readonly node: string | null;
  /** Usable addresses in the block. */
  readonly capacity: bigint;
  /** Addresses held (one at an excluded ordinal, written by an older version, counts too). */
  readonly allocated: bigint;
  /** Of `allocated`, those the caller's `isIdle` calls idle (0 without it). */
  readonly idle: bigint;
}

/** A node as its blocks show it (affinity): node records are the controller's. */
export interface NodeUtilisation {
  readonly node: string;
  readonly blocks: number;
  readonly allocated: bigint;
  /** Of `allocated`, those the caller's `isIdle` calls idle (0 without it). */
  readonly idle: bigint;
}

export interface Utilisation {
  /** In key (name) order. */
  readonly pools: readonly PoolUtilisation[];
  /** In key order. */
  readonly blocks: readonly BlockUtilisation[];
  /** Nodes some block is affine to, by name. */
  readonly nodes: readonly NodeUtilisation[];
  readonly totals: { readonly blocks: number; readonly allocated: bigint; readonly capacity: bigint };
  /** Keys of records that did not decode and were left out (`skipCorrupt`; ipam check reports them). */
  readonly skipped: readonly string[];
}

export interface UtilisationOptions {
  /** Leave out records that do not decode (listed in `skipped`) instead of throwing CorruptRecordError. */
  readonly skipCorrupt?: boolean;
  /**
   * Which allocations are held but idle (a node agent's warm pool: src/server/warm-usage.ts
   * knows its handles); counted in each block's and node's `idle`.
   */
  readonly isIdle?: (handle: string, addr: Addr) => boolean;
  /** Called with each decoded block (the same pass serves node-headroom.ts headroomByNode). */
  readonly onBlock?: (b: Block) => void;
}

/** Reads pools and blocks and adds them up. Throws what the store throws; CorruptRecordError unless skipCorrupt. */
export async function clusterUtilisation(ctx: IpamContext, options: UtilisationOptions = {}): Promise<Utilisation> {
  const skipped: string[] = [];
  const decoded = <T>(key: string, decode: () => T): T | undefined => {
    try {
      return decode();
    } catch (e) {
      if (!options.skipCorrupt) throw e;
      skipped.push(key);
      return undefined;
    }
  };
  const [poolEntries, blockEntries] = await Promise.all([listAll(ctx.store, POOL_PREFIX), listAll(ctx.store, BLOCK_PREFIX)]);
  const pools = poolEntries.flatMap((e) => decoded(e.key, () => [decodePool(e)]) ?? []);
  const perPool = new Map<string, { allocated: bigint; idle: bigint; blocks: number }>(pools.map((p) => [p.name, { allocated: 0n, idle: 0n, blocks: 0 }]));
  const perNode = new Map<string, { blocks: number; allocated: bigint; idle: bigint }>();
  const isIdle = options.isIdle;
  const blocks: BlockUtilisation[] = [];
  for (const e of blockEntries) {
    const b = decoded(e.key, () => decodeBlock(e));
    if (b === undefined) continue;
    options.onBlock?.(b);
    const allocated = BigInt(allocatedCount(b));
    let idle = 0n;
    if (isIdle) for (const [o, handle] of b.allocations) if (isIdle(handle, addrOfOrdinal(b.cidr, o))) idle++;
    const pool = pools.find((p) => p.cidr.family === b.cidr.family && prefixContainsPrefix(p.cidr, b.cidr));
    if (pool) {
      const c = perPool.get(pool.name) as { allocated: bigint; idle: bigint; blocks: number };
      c.allocated += allocated;
      c.idle += idle;
      c.blocks += 1;
    }
    if (b.affinity !== null) {
      const n = perNode.get(b.affinity) ?? { blocks: 0, allocated: 0n, idle: 0n };
      n.blocks += 1;
      n.allocated += allocated;
      n.idle += idle;
      perNode.set(b.affinity, n);
    }
    blocks.push({ cidr: b.cidr, pool: pool?.name ?? null, node: b.affinity, capacity: usableCount(b.cidr), allocated, idle });
  }
  const poolRows: PoolUtilisation[] = pools.map((p) => {
    const c = perPool.get(p.name) as { allocated: bigint; idle: bigint; blocks: number };
    return {
      pool: p,
      capacity: poolUsableCount(p.cidr, p.blockSize),
      allocated: c.allocated,
      idle: c.idle,
      blocks: c.blocks,
      blockSlots: blockCount(p.cidr, p.blockSize),
      blockCapacity: usableCount(blockAt(p.cidr, p.blockSize, 0n)),
    };
  });
  const nodes = [...perNode].sort((a, b) => compareKeys(a[0], b[0])).map(([node, n]) => ({ node, ...n }));
  return {
    pools: poolRows,
    blocks,
    nodes,
    totals: {
      blocks: blocks.length,
      allocated: poolRows.reduce((s, p) => s + p.allocated, 0n),
      capacity: poolRows.reduce((s, p) => s + p.capacity, 0n),
    },
    skipped,
  };
}
