/**
 * Choosing the next block a node claims: the first block, in the node's probe order through
 * the candidate pools (see blockProbeOrder), that nobody holds and that is not wholly
 * reserved. Pure; the claim's compare (block revision 0) proves the choice.
 */
import { blockAt, blockCount, blockProbeOrder, isWhollyReserved } from '../../alloc/block-layout.js';
import type { IpRangeSet, Prefix } from '../../ip/index.js';
import { blockKey } from '../keys.js';
import type { Pool } from '../pool-record.js';

/** Most candidate blocks examined per pool (bounds the search in huge, heavily reserved pools). */
const MAX_PROBES = 65_536;

export interface ClaimCandidate {
  readonly key: string;
  readonly cidr: Prefix;
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
      if (t === undefined && !guess) return 'unknown';
      return { key, cidr };
    }
  }
  return undefined;
}
