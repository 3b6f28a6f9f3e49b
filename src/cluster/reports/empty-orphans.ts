/**
 * Empty orphan blocks: blocks affine to no node that hold no address. Cluster GC leaves a
 * deleted node's block without affinity while other nodes' pods borrow from it, and a release
 * that empties such a block deletes it — unless the block still quarantines an address it freed
 * (src/alloc/block-quarantine.ts: deleting it would lose the release times and let a node claim
 * it and hand the address out at once). Nothing writes such a block again, so `ipam check` lists
 * it (`emptyOrphans`, with the end of its quarantine) and cluster GC deletes it once it
 * quarantines nothing (gc-findings.ts `releaseEmptyOrphanBlock`). Pure.
 */
import { type Block } from '../../alloc/block.js';
import { isDisposable, quarantinedOrdinals } from '../../alloc/block-quarantine.js';
import { formatPrefix } from '../../ip/index.js';
import { type Pool, quarantineFor } from '../records/index.js';

/** An empty orphan block as `ipam check` lists it. */
export interface EmptyOrphanBlock {
  readonly key: string;
  readonly block: string;
  /** When its last quarantined address may be handed out again (ISO time); absent: it quarantines nothing, GC deletes it. */
  readonly quarantinedUntil?: string;
}

/** True when `block` is an orphan that holds nothing and, by `pools`' reuseAfter at `now` (epoch ms), quarantines nothing: deleting it loses nothing. */
export function isSweepableOrphan(block: Block, pools: readonly Pool[], now: number): boolean {
  return block.affinity === null && isDisposable(block, quarantineFor(pools, block.cidr, now));
}

/** The empty orphan blocks among `blocks` (block key → block), with the end of each one's quarantine at `now`. */
export function emptyOrphansOf(blocks: Iterable<readonly [string, Block]>, pools: readonly Pool[], now: number): EmptyOrphanBlock[] {
  const out: EmptyOrphanBlock[] = [];
  for (const [key, b] of blocks) {
    if (b.affinity !== null || b.allocations.size > 0) continue;
    const ends = [...quarantinedOrdinals(b, quarantineFor(pools, b.cidr, now)).values()];
    const until = ends.length > 0 ? new Date(Math.max(...ends)).toISOString() : undefined;
    out.push({ key, block: formatPrefix(b.cidr), ...(until !== undefined ? { quarantinedUntil: until } : {}) });
  }
  return out;
}
