/**
 * A pool's used addresses over time, rebuilt from the allocation history's counts: how many
 * holds of the pool are open now, and how many began and ended in each step of a window. Pure.
 *
 * The samples fall on a regular grid `since + k·step`, k = 0…points (the last one at `since +
 * points·step`, the window's end), as a scraper's would: the value at an instant counts the
 * holds begun at or before it and not yet ended at it (history-db.ts: `from` inclusive, `until`
 * exclusive). Step k holds the changes with a time in (since + (k−1)·step, since + k·step];
 * changes past the grid (a writer's clock ahead of ours) count in the last step's level, as the
 * open count does.
 */

/** One point of the series. */
export interface UsageSample {
  /** Milliseconds since the epoch. */
  readonly at: number;
  /** Addresses held by pods at `at`. */
  readonly used: number;
}

/** What the history store counts for one pool (HistoryDb.poolUsage). */
export interface UsageCounts {
  /** Holds open now. */
  readonly open: number;
  /** Holds begun, by grid step k ≥ 1. */
  readonly starts: ReadonlyMap<number, number>;
  /** Holds ended, by grid step k ≥ 1. */
  readonly ends: ReadonlyMap<number, number>;
}

/** The grid step of a change at `t` (≥ 1 for t > since). */
export function gridStep(t: number, since: number, step: number): number {
  return Math.ceil((t - since) / step);
}

/**
 * The samples at `since + k·step`, k = 0…points, from the open count and the changes after
 * `since`. RangeError for a step or a point count that is not a positive integer.
 */
export function usageSeries(counts: UsageCounts, since: number, step: number, points: number): UsageSample[] {
  if (!Number.isInteger(step) || step < 1) throw new RangeError(`step must be a positive integer of milliseconds: got ${step}`);
  if (!Number.isInteger(points) || points < 1) throw new RangeError(`points must be a positive integer: got ${points}`);
  // Walk back from the end: a step's starts were not yet held before it, its ends still were.
  let level = counts.open;
  for (const [k, n] of counts.starts) if (k > points) level -= n;
  for (const [k, n] of counts.ends) if (k > points) level += n;
  const out: UsageSample[] = [];
  for (let k = points; k >= 0; k--) {
    out.push({ at: since + k * step, used: level });
    level += (counts.ends.get(k) ?? 0) - (counts.starts.get(k) ?? 0);
  }
  return out.reverse();
}
