/**
 * A pool's forecast as the API answers it (`GET /api/v1/pools/NAME/forecast`): times in RFC
 * 3339 (UTC), spans as durations ("6h"), the capacity exact (a bigint: a decimal string past
 * 2^53, src/util/exact-json.ts).
 */
import type { PoolForecast } from '../../history/pool-forecasts.js';
import { formatSpan } from '../../util/format-span.js';
import { formatTime } from '../../history/parse-time.js';

export function forecastJson(f: PoolForecast, capacity: bigint): Record<string, unknown> {
  const m = f.method;
  return {
    pool: f.pool,
    capacity,
    allocated: f.allocated,
    trend: {
      state: f.forecast.state,
      ratePerHour: f.forecast.ratePerHour,
      secondsToFull: f.forecast.secondsToFull,
      fullAt: f.forecast.fullAt === null ? null : formatTime(f.forecast.fullAt),
    },
    method: {
      fit: m.fit,
      source: m.source,
      window: formatSpan(m.windowMs),
      since: formatTime(m.since),
      until: formatTime(m.until),
      samples: m.samples,
      step: formatSpan(m.stepMs),
      text: m.text,
    },
    series: f.series.map((s) => ({ at: formatTime(s.at), used: s.used })),
  };
}
