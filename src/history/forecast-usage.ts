/**
 * When a pool will be full, from its usage over time: the least-squares slope of the samples
 * (addresses per hour, as Prometheus' `deriv`/`predict_linear` fit a line through a range of
 * samples), and the time until the addresses left run out at that rate. Pure.
 *
 * - `full`: nothing is left now (allocated ≥ capacity).
 * - `filling`: the slope is positive and the pool is full within `horizonMs` at that rate;
 *   `secondsToFull` = (capacity − allocated) / slope, `fullAt` = now + that.
 * - `not-filling`: the slope is zero or negative (a quiet or draining pool), or full only
 *   beyond the horizon (a big IPv6 pool).
 * - `unknown`: fewer than two samples, or the samples span less than MIN_SPAN_MS (no history
 *   yet to fit a line to).
 */
import type { UsageSample } from './usage-series.js';

export const FORECAST_STATES = ['filling', 'not-filling', 'full', 'unknown'] as const;
export type ForecastState = (typeof FORECAST_STATES)[number];

/** Samples spanning less than this fit no line. */
export const MIN_SPAN_MS = 1000;
/** Farther than this, a pool counts as not filling. */
export const DEFAULT_HORIZON_MS = 365 * 86_400_000;

export interface ForecastInput {
  /** The pool's usable addresses. */
  readonly capacity: number;
  /** Addresses allocated now (the level the forecast starts from). */
  readonly allocated: number;
  /** The instant "now" of the forecast. */
  readonly now: number;
  readonly horizonMs?: number;
}

export interface UsageForecast {
  readonly state: ForecastState;
  /** The fitted slope, addresses per hour (0 when unknown). */
  readonly ratePerHour: number;
  /** Seconds until full at that rate (`filling` only, else null; 0 when `full`). */
  readonly secondsToFull: number | null;
  /** The instant it is full (`filling`/`full`, else null). */
  readonly fullAt: number | null;
}

/** The least-squares slope of `used` over `at`, per millisecond; undefined for a degenerate fit. */
export function leastSquaresSlope(samples: readonly UsageSample[]): number | undefined {
  const n = samples.length;
  if (n < 2) return undefined;
  // Centre the times: epoch milliseconds squared lose precision in a double.
  const t0 = samples[0]!.at;
  let st = 0;
  let sv = 0;
  for (const s of samples) {
    st += s.at - t0;
    sv += s.used;
  }
  const mt = st / n;
  const mv = sv / n;
  let num = 0;
  let den = 0;
  for (const s of samples) {
    const dt = s.at - t0 - mt;
    num += dt * (s.used - mv);
    den += dt * dt;
  }
  return den === 0 ? undefined : num / den;
}

/** The forecast of a pool from its usage samples (see the module comment). */
export function forecastUsage(samples: readonly UsageSample[], input: ForecastInput): UsageForecast {
  const left = input.capacity - input.allocated;
  const span = samples.length < 2 ? 0 : samples[samples.length - 1]!.at - samples[0]!.at;
  const slope = span < MIN_SPAN_MS ? undefined : leastSquaresSlope(samples);
  const ratePerHour = slope === undefined ? 0 : slope * 3_600_000;
  if (left <= 0) return { state: 'full', ratePerHour, secondsToFull: 0, fullAt: input.now };
  if (slope === undefined) return { state: 'unknown', ratePerHour: 0, secondsToFull: null, fullAt: null };
  const ms = slope > 0 ? left / slope : Infinity;
  if (!(ms <= (input.horizonMs ?? DEFAULT_HORIZON_MS))) return { state: 'not-filling', ratePerHour, secondsToFull: null, fullAt: null };
  return { state: 'filling', ratePerHour, secondsToFull: ms / 1000, fullAt: Math.round(input.now + ms) };
}
