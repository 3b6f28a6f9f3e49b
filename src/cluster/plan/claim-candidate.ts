/**
 * Choosing the next block a node claims: the first block, in the node's probe order through
 * the candidate pools (see blockProbeOrder), that nobody holds and that is not wholly
 * reserved, nor overlapped by a known block of another of the pool's sizes. The walk resumes
 * just past the furthest position of a block the node already owns in the pool, wrapping round
 * to the earlier positions last, so a claim costs a few probes however many blocks the node
 * holds (restarting at the first position made filling a node's blocks quadratic). Pure; the claim's
 * compares (the block's key and each of its `guards`, the keys of other sizes that would
 * overlap it, at revision 0) prove the choice — see src/alloc/overlapping-blocks.ts.
 */
import { blockAt, blockCount, blockProbeOrder, blockProbePositions, isWhollyReserved } from '../../alloc/block-layout.js';
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
 * `resumeAt(pool)`: the position in the node's probe order where the walk starts (one past the
 * furthest block of the pool the node holds: claimPosition). `taken(key)`: true when the block exists (or this plan creates it), false when it is known
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
  resumeAt: (pool: Pool) => bigint = () => 0n,
): ClaimCandidate | 'unknown' | undefined {
  for (const pool of pools) {
    if (isWhollyReserved(pool.cidr, reserved)) continue;
    const count = blockCount(pool.cidr, pool.blockSize);
    const seed = `${node}/${pool.name}`;
    let probes = 0;
    for (const idx of blockProbeOrder(count, seed, resumeAt(pool))) {
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

/**
 * The position of a block in `node`'s probe order through `pool` (blockProbeOrder), -1 for a
 * block not of the pool's size and family or outside it: a claim resumes one past the furthest
 * position of the blocks the node holds, so it costs a few probes however many it holds.
 */
export function claimPosition(pool: Pool, node: string): (cidr: Prefix) => bigint {
  const count = blockCount(pool.cidr, pool.blockSize);
  const shift = BigInt((pool.cidr.family === 4 ? 32 : 128) - pool.blockSize);
  let position: ((index: bigint) => bigint) | undefined;
  return (b) => {
    if (b.len !== pool.blockSize || b.family !== pool.cidr.family) return -1n;
    const idx = (b.base - pool.cidr.base) >> shift;
    if (idx < 0n || idx >= count) return -1n;
    return (position ??= blockProbePositions(count, `${node}/${pool.name}`))(idx);
  };
}
