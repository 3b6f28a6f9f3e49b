/**
 * The reuse quarantine of a block, pure: a pool's `reuseAfter` keeps an address released
 * anywhere from being handed to another holder anywhere before that time. The release time is
 * recorded in the address's own block (`Block.released`), written by the transaction that frees
 * it, so a planner that is about to write the block (and compares its revision) already knows
 * which of its free ordinals are still quarantined: no extra read on the ADD path.
 *
 * Clocks: the releasing process writes its own clock's time; the process that hands addresses
 * out compares with its own clock. An ordinal is quarantined until `releasedAt + reuseAfter +
 * CLOCK_SKEW_MARGIN_MS`: clocks that agree within the margin (NTP-synchronised nodes agree to
 * milliseconds) never shorten the quarantine. A releaser whose clock runs behind by more than
 * the margin shortens it by the excess; one whose clock runs ahead lengthens it by that much
 * (an entry in the future is honoured as written: it ends by itself once the clocks' difference
 * has passed, and the next write of the block after that drops it).
 *
 * Size: entries are dropped by the next write of the block once their quarantine is over (and
 * when their ordinal is assigned), so a block lists at most the ordinals freed within the last
 * `reuseAfter` — at most its capacity.
 */
import { type Block } from './block.js';
import { isUsableOrdinal } from './block-addressing.js';

/** Added to every quarantine: the clock difference between nodes it tolerates. */
export const CLOCK_SKEW_MARGIN_MS = 1000;

/** A pool's quarantine as a writer applies it: its `reuseAfter` (0: off) and the writer's clock. */
export interface Quarantine {
  readonly reuseAfterMs: number;
  /** Epoch ms. */
  readonly now: number;
}

/** When an ordinal released at `releasedAt` may be handed out again. */
export function quarantineEnd(releasedAt: number, reuseAfterMs: number): number {
  return releasedAt + reuseAfterMs + CLOCK_SKEW_MARGIN_MS;
}

/** Free ordinals still quarantined at `q.now`, each with the end of its quarantine (none when the pool's quarantine is off). */
export function quarantinedOrdinals(block: Block, q: Quarantine): Map<number, number> {
  const out = new Map<number, number>();
  if (q.reuseAfterMs <= 0 || !block.released) return out;
  for (const [o, at] of block.released) {
    const end = quarantineEnd(at, q.reuseAfterMs);
    if (end > q.now && !block.allocations.has(o)) out.set(o, end);
  }
  return out;
}

/**
 * The block `after` as a write should store it, given the block `before` it was planned from:
 * every ordinal `before` allocated and `after` does not is recorded as released at `q.now`
 * (when the pool's quarantine is on), and entries whose quarantine is over (or whose ordinal is
 * allocated) are dropped. `before` null: a new block (nothing was released from it).
 */
export function stampReleases(before: Block | null, after: Block, q: Quarantine): Block {
  const released = new Map<number, number>();
  for (const [o, at] of after.released ?? []) {
    if (!after.allocations.has(o) && q.reuseAfterMs > 0 && quarantineEnd(at, q.reuseAfterMs) > q.now) released.set(o, at);
  }
  if (before && q.reuseAfterMs > 0) for (const o of before.allocations.keys()) if (!after.allocations.has(o)) released.set(o, q.now);
  if (released.size === 0 && (after.released?.size ?? 0) === 0) return after;
  if (released.size === 0) {
    const { released: _gone, ...rest } = after;
    return rest;
  }
  return { ...after, released };
}

/** True when the block holds no address and quarantines none: deleting it loses nothing. */
export function isDisposable(block: Block, q: Quarantine): boolean {
  return block.allocations.size === 0 && quarantinedOrdinals(block, q).size === 0;
}

/**
 * What the quarantine keeps back among the block's free usable ordinals outside `reserved`:
 * how many, and the earliest end of their quarantines (undefined: none).
 */
export function quarantineHeld(block: Block, q: Quarantine, reserved: ReadonlySet<number>): { count: number; until: number | undefined } {
  let count = 0;
  let until: number | undefined;
  for (const [o, end] of quarantinedOrdinals(block, q)) {
    if (reserved.has(o) || !isUsableOrdinal(block.cidr, o)) continue;
    count++;
    until = until === undefined ? end : Math.min(until, end);
  }
  return { count, until };
}
