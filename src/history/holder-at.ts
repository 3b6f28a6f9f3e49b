/**
 * Who held an address at an instant, from the holds of that address and the history's gaps (pure;
 * sqlite-history-db.ts feeds it the rows that may matter).
 *
 * A hold covers `t` when `from ≤ t < until` (from inclusive, until exclusive). A time known only
 * to lie in (earliest, at] makes the open interval (earliest, at) uncertain for that hold: a start
 * there may or may not have happened yet, an end likewise. A gap {from, until} makes the open
 * interval (from, until) uncertain for every address (the state at both ends is known: the
 * follower's last position, the relist).
 *
 * The answer: known + the hold when a hold certainly covers `t` (when, against the datastore's
 * rule, several do: the one that began last); otherwise unknown when `t` lies in a hold's
 * uncertain interval (the gap given is that interval, its cause says whose bound it is), in a gap,
 * or before the retention horizon; otherwise known + none.
 */
import type { HistoryGap, Hold, HolderAt } from '../model/history.js';

/** Whether `h` certainly covers `t`. */
export function holdCovers(h: Hold, t: number): boolean {
  if (t < h.from.at) return false;
  if (h.until === undefined) return true;
  return h.until.earliest === undefined ? t < h.until.at : t <= h.until.earliest;
}

/** The uncertain interval of `h` containing `t`, as a gap; undefined when `t` is in neither. */
export function holdUncertainAt(h: Hold, t: number): HistoryGap | undefined {
  const f = h.from;
  if (f.earliest !== undefined && f.earliest < t && t < f.at) {
    return { from: f.earliest, until: f.at, cause: `the hold of ${h.address} by ${h.handle} began at an unknown time in this interval` };
  }
  const u = h.until;
  // A hold cannot end before it began: before a start known to lie in (earliest, at], an
  // uncertain end is no uncertainty (the address was not held yet).
  const endLow = u?.earliest === undefined ? undefined : f.earliest === undefined ? u.earliest : Math.max(u.earliest, f.earliest);
  const begun = f.earliest === undefined ? f.at <= t : f.earliest < t;
  if (u !== undefined && endLow !== undefined && begun && endLow < t && t < u.at) {
    return { from: endLow, until: u.at, cause: `the hold of ${h.address} by ${h.handle} ended at an unknown time in this interval` };
  }
  return undefined;
}

/** Whether `t` lies inside gap `g` (both ends excluded: the state there is known). */
export function gapContains(g: HistoryGap, t: number): boolean {
  return g.from < t && t < g.until;
}

export function holderAtOf(holds: readonly Hold[], gaps: readonly HistoryGap[], t: number, horizon?: number): HolderAt {
  let best: Hold | undefined;
  for (const h of holds) if (holdCovers(h, t) && (best === undefined || h.from.at >= best.from.at)) best = h;
  if (best !== undefined) return { known: true, hold: best };
  for (const h of holds) {
    const gap = holdUncertainAt(h, t);
    if (gap !== undefined) return { known: false, gap };
  }
  const gap = gaps.find((g) => gapContains(g, t));
  if (gap !== undefined) return { known: false, gap };
  if (horizon !== undefined && t < horizon) {
    return { known: false, gap: { from: 0, until: horizon, cause: 'purged: the history keeps nothing that ended before this instant' } };
  }
  return { known: true, hold: undefined };
}
