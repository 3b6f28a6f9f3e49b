/**
 * Choosing the next block a node claims: the first block, in the node's probe order through
 * the candidate pools (see blockProbeOrder), that nobody holds and that is not wholly
 * reserved, nor overlapped by a known block of another of the pool's sizes. Pure; the claim's
 * compares (the block's key and each of its `guards`, the keys of other sizes that would
 * overlap it, at revision 0) prove the choice — see src/alloc/overlapping-blocks.ts.
 */
import { blockAt, blockCount, blockProbeOrder, isWhollyReserved } from '../../alloc/block-layout.js';
import { overlappingBlocks } from '../../alloc/overlapping-blocks.js';
import type { IpRangeSet, Prefix } from '../../ip/index.js';
import { blockKey, type Pool } from '../records/index.js';

/** Most candidate blocks examined per pool (bounds the search in huge, heavily reserved pools). */
const MAX_PROBES = 65_536;

export interface ClaimCandidate {
  readonly key: string;
  readonly cidr: Prefix;
  /** Keys of the blocks of the pool's other sizes that would overlap it (each compared at revision 0). */
  readonly guards: readonly string[];
}

/** The keys of blocks of the pool's former sizes that would overlap `cidr`. */
export function claimGuards(pool: Pool, cidr: Prefix): string[] {
  return pool.formerBlockSizes.length === 0 ? [] : overlappingBlocks(cidr, pool.formerBlockSizes).map(blockKey);
}

/**
 * `taken(key)`: true when the block exists (or this plan creates it), false when it is known
 * to be absent, undefined when unknown. An unknown block is returned when `guess` is true
 * (the txn's compare then proves it absent); otherwise the search stops there with 'unknown'
 * — the caller should list the blocks. undefined: no claimable block in any pool.
 */
export function findClaimableBlock(
  pools: readonly Pool[],
  reserved: IpRangeSet,
  node: string,
  taken: (key: string) => boolean | undefined,
  guess: boolean,
): ClaimCandidate | 'unknown' | undefined {
  for (const pool of pools) {
    if (isWhollyReserved(pool.cidr, reserved)) continue;
    let probes = 0;
    for (const idx of blockProbeOrder(blockCount(pool.cidr, pool.blockSize), `${node}/${pool.name}`)) {
      if (++probes > MAX_PROBES) break;
      const cidr = blockAt(pool.cidr, pool.blockSize, idx);
      const key = blockKey(cidr);
      const t = taken(key);
      if (t === true || isWhollyReserved(cidr, reserved)) continue;
      const guards = claimGuards(pool, cidr);
      const g = guards.map(taken);
      if (g.includes(true)) continue;
      if ((t === undefined || g.includes(undefined)) && !guess) return 'unknown';
      return { key, cidr, guards };
    }
  }
  return undefined;
}
