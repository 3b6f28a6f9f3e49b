/**
 * Utilisation per pool and per block (`podipam ipam show`), read from one list of pools and
 * one list of blocks (not atomic together; exact on a quiet datastore). Capacity counts the
 * addresses that can be handed out — each block's network, gateway and (IPv4) broadcast
 * addresses excluded (src/alloc/block-addressing.ts) — so a full pool shows 100%.
 */
import { allocatedCount } from '../alloc/block.js';
import { usableCount } from '../alloc/block-addressing.js';
import { poolUsableCount } from '../alloc/block-layout.js';
import { formatPrefix, prefixContainsPrefix } from '../ip/index.js';
import { decodeBlock } from './block-record.js';
import type { IpamContext } from './ipam-context.js';
import { BLOCK_PREFIX } from './keys.js';
import { listPools } from './pools.js';
import { poolText } from './pool-record.js';

export interface PoolUsage {
  readonly name: string;
  readonly cidr: string;
  readonly blockSize: number;
  readonly nodeSelector: string;
  readonly disabled: boolean;
  readonly deleting: boolean;
  /** Addresses the pool can hand out: blocks × usable addresses per block (can exceed 2^53 for IPv6). */
  readonly capacity: bigint;
  readonly allocated: number;
  /** Blocks claimed in the pool. */
  readonly blocks: number;
}

export interface BlockUsage {
  readonly cidr: string;
  /** The pool containing the block ('' when none does). */
  readonly pool: string;
  /** The node the block is affine to, or null. */
  readonly node: string | null;
  /** Addresses the block can hand out (network, gateway and IPv4 broadcast excluded). */
  readonly capacity: number;
  /** Addresses held (an address at an excluded ordinal, written by an older version, counts too). */
  readonly allocated: number;
}

export interface IpamUsage {
  readonly pools: readonly PoolUsage[];
  readonly blocks: readonly BlockUsage[];
}

/** Reads pools and blocks and adds them up. Throws what the store throws, CorruptRecordError. */
export async function ipamUsage(ctx: IpamContext): Promise<IpamUsage> {
  const pools = await listPools(ctx);
  const blocks = (await ctx.store.list(BLOCK_PREFIX)).map(decodeBlock);
  const blockRows: BlockUsage[] = blocks.map((b) => ({
    cidr: formatPrefix(b.cidr),
    pool: pools.find((p) => prefixContainsPrefix(p.cidr, b.cidr))?.name ?? '',
    node: b.affinity,
    capacity: Number(usableCount(b.cidr)),
    allocated: allocatedCount(b),
  }));
  const poolRows = pools.map((p) => {
    const mine = blockRows.filter((b) => b.pool === p.name);
    return {
      ...poolText(p),
      capacity: poolUsableCount(p.cidr, p.blockSize),
      allocated: mine.reduce((n, b) => n + b.allocated, 0),
      blocks: mine.length,
    };
  });
  return { pools: poolRows, blocks: blockRows };
}
