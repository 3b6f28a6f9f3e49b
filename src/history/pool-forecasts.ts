/**
 * Every pool's usage over a window and its forecast, read from the allocation history: the
 * series the history's holds give (usage-series.ts) and the fitted trend (forecast-usage.ts)
 * from the level the caller reads now (the datastore's allocated count). The readers: `podipam
 * pool list -o wide`, `GET /api/v1/pools/NAME/forecast` and the dashboard.
 *
 * The window ends now and starts `windowMs` earlier, or at the end of the latest gap of the
 * history inside it (serve was away, history began, a restore): the trend is fitted to what the
 * history knows only. It holds the addresses pods held (a warm pool's idle addresses are held by
 * nobody, history/README.md), so the rate is that of pods; the time to full is the addresses
 * left now (capacity − allocated, warm idle ones counted as taken) at that rate.
 */
import type { HistoryDb } from './history-db.js';
import { forecastUsage, type UsageForecast } from './forecast-usage.js';
import { usageSeries, type UsageSample } from './usage-series.js';
import { formatSpan } from '../util/format-span.js';

export { formatSpan };

/** The default window: 6 hours. */
export const DEFAULT_WINDOW_MS = 6 * 3_600_000;
/**
 * Windows accepted: 10 seconds to 30 days. The history keeps milliseconds and the grid has
 * DEFAULT_POINTS steps whatever the window, so seconds of a burst watched live are fitted as
 * finely as hours are.
 */
export const MIN_WINDOW_MS = 10_000;
export const MAX_WINDOW_MS = 30 * 86_400_000;
/** Steps of the grid the series is sampled on (samples: one more). */
export const DEFAULT_POINTS = 60;

/** A pool as the caller sees it now. */
export interface PoolLevel {
  readonly name: string;
  readonly capacity: number;
  readonly allocated: number;
}

/** How a forecast was made, stated next to it. */
export interface ForecastMethod {
  readonly fit: 'least-squares';
  readonly source: 'history';
  /** The window asked for, ms. */
  readonly windowMs: number;
  /** The samples' first and last instants (the window, shortened by a gap). */
  readonly since: number;
  readonly until: number;
  readonly samples: number;
  readonly stepMs: number;
  /** One sentence for people. */
  readonly text: string;
}

export interface PoolForecast {
  readonly pool: string;
  readonly capacity: number;
  readonly allocated: number;
  readonly method: ForecastMethod;
  readonly series: readonly UsageSample[];
  readonly forecast: UsageForecast;
}

/** "6h", "90m", "45s", "7d" → ms; RangeError naming `name` and the value, or a window out of bounds. */
export function parseWindow(name: string, text: string): number {
  const m = /^([1-9][0-9]{0,6})(s|m|h|d)$/.exec(text.trim());
  const ms = m ? Number(m[1]) * { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 's' | 'm' | 'h' | 'd'] : NaN;
  if (!(ms >= MIN_WINDOW_MS && ms <= MAX_WINDOW_MS))
    throw new RangeError(`${name} must be a duration from 10s to 30d such as 30m, 6h or 7d: got ${JSON.stringify(text)}`);
  return ms;
}

/** The forecast of each pool in `pools`, in their order (a pool the history never saw: a flat series at 0). */
export function poolForecasts(
  db: HistoryDb,
  pools: readonly PoolLevel[],
  opts: { readonly now: number; readonly windowMs?: number; readonly points?: number },
): PoolForecast[] {
  const { now } = opts;
  const windowMs = opts.windowMs ?? DEFAULT_WINDOW_MS;
  const points = opts.points ?? DEFAULT_POINTS;
  let since = now - windowMs;
  for (const g of db.gaps({ since, until: now })) since = Math.max(since, Math.min(g.until, now));
  const span = now - since;
  const stepMs = Math.max(1, Math.ceil(span / points));
  const steps = Math.max(0, Math.floor(span / stepMs));
  const start = now - steps * stepMs;
  const usage = steps > 0 ? db.poolUsage(start, stepMs) : new Map();
  const method = (samples: number): ForecastMethod => ({
    fit: 'least-squares',
    source: 'history',
    windowMs,
    since: start,
    until: now,
    samples,
    stepMs,
    text: `least-squares slope of the addresses pods held (allocation history), ${samples} samples over the last ${formatSpan(now - start)}${since > now - windowMs ? ` (of ${formatSpan(windowMs)} asked: history knows no more)` : ''}; time to full = (capacity - allocated) / slope`,
  });
  return pools.map((p) => {
    const counts = usage.get(p.name) ?? { open: 0, starts: new Map(), ends: new Map() };
    const series = steps > 0 ? usageSeries(counts, start, stepMs, steps) : [{ at: now, used: counts.open }];
    return {
      pool: p.name,
      capacity: p.capacity,
      allocated: p.allocated,
      method: method(series.length),
      series,
      forecast: forecastUsage(series, { capacity: p.capacity, allocated: p.allocated, now }),
    };
  });
}
