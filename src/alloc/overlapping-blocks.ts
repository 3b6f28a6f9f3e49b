/**
 * Blocks of different sizes in one pool, and the proof that a new block overlaps none.
 *
 * A pool's block size can change (`pool set --block-size`): new blocks get the new size, the
 * existing ones keep theirs. The claim of a new block was proven by one compare — its own key
 * at revision 0 — which says nothing about a block of another size covering part of it (the
 * /25-over-/26 overlap Calico shipped after such a change). The proof here:
 *
 * 1. The pool record lists every size its blocks may have (`blockSize` and
 *    `formerBlockSizes`). `pool set` writes that list from the blocks it lists plus the size
 *    it replaces, in a config transaction.
 * 2. Every claim compares the config key at the revision its plan read; that transaction bumps
 *    the config, so a claim planned on the old view (a stale instance, still on the old size)
 *    fails and re-plans on the new one. Hence at any config revision exactly one size is being
 *    claimed, and blocks of every other size already exist (made at earlier revisions): each
 *    of them has one of the listed sizes.
 * 3. A claim of a block B of size N also compares, at revision 0, every key of a listed size
 *    that would overlap B: for a larger block size S < N the one /S containing B, for a smaller
 *    size S > N the 2^(S−N) /S inside B. Two prefixes overlap only if one contains the other,
 *    so these keys are all the blocks that could overlap B; all absent at commit proves B
 *    overlaps nothing. Two nodes claiming at once either claim the same key (one compare
 *    fails) or disjoint blocks of the same size.
 *
 * The sizes of one pool are kept within MAX_BLOCK_SIZE_SPREAD bits of each other, so a claim
 * adds at most 2+4+8+16 = 30 compares (the new size the largest block, the four smaller sizes
 * all present; etcd allows 128 per transaction — a request claims one block per family).
 * Pure.
 */
import { type Prefix, formatPrefix, prefixOf, subPrefix } from '../ip/index.js';

/** Most bits between the largest and smallest block size of one pool. */
export const MAX_BLOCK_SIZE_SPREAD = 4;

/**
 * The blocks of each size in `sizes` other than `block`'s own that overlap `block`, larger
 * ones first. RangeError when a size differs from the block's by more than the spread.
 */
export function overlappingBlocks(block: Prefix, sizes: readonly number[]): Prefix[] {
  const out: Prefix[] = [];
  for (const s of [...new Set(sizes)].sort((a, b) => a - b)) {
    if (s === block.len) continue;
    if (Math.abs(s - block.len) > MAX_BLOCK_SIZE_SPREAD) {
      throw new RangeError(`block size /${s} is more than ${MAX_BLOCK_SIZE_SPREAD} bits from block ${formatPrefix(block)}`);
    }
    if (s < block.len) out.push(prefixOf({ family: block.family, value: block.base }, s));
    else for (let i = 0n; i < 1n << BigInt(s - block.len); i++) out.push(subPrefix(block, s, i));
  }
  return out;
}

/**
 * Throws RangeError naming the value unless the sizes a pool's blocks would have after
 * choosing `next` (with `present`, the sizes of blocks it still has) lie within
 * MAX_BLOCK_SIZE_SPREAD bits of each other.
 */
export function checkBlockSizeSpread(pool: string, next: number, present: readonly number[]): void {
  const all = [next, ...present];
  const lo = Math.min(...all);
  const hi = Math.max(...all);
  if (hi - lo > MAX_BLOCK_SIZE_SPREAD) {
    const far = next === lo ? hi : lo;
    const pLo = Math.min(...present);
    const pHi = Math.max(...present);
    throw new RangeError(
      `Cannot use 'blockSize' ${next} for pool "${pool}": it still has /${far} blocks, and the block sizes of one pool must lie within ${MAX_BLOCK_SIZE_SPREAD} bits of each other (choose a size from ${pHi - MAX_BLOCK_SIZE_SPREAD} to ${pLo + MAX_BLOCK_SIZE_SPREAD}, or release and remove those blocks first)`,
    );
  }
}
