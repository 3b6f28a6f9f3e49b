/**
 * `podipam pool list -o wide`'s TREND and FULL-IN columns: each pool's forecast from the
 * allocation history serve keeps (src/history/pool-forecasts.ts), the file opened read-only
 * (the datastore's own by default, as `ipam history` finds it; `--history-db FILE`). Without a
 * history file the columns say "-" and the footnote says why; the listing still prints.
 */
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { poolForecasts, type PoolLevel } from '../history/pool-forecasts.js';
import { formatSpan } from '../util/format-span.js';
import type { UsageForecast } from '../history/forecast-usage.js';
import { historyFile } from './history.js';

export interface PoolTrends {
  /** Pool name → its TREND and FULL-IN cells. */
  readonly cells: ReadonlyMap<string, { readonly trend: string; readonly fullIn: string }>;
  /** The method (window, fit, source), or why there is none. */
  readonly footnote: string;
}

/** "+12.5/h", "-3/h", "0/h". */
export function trendText(f: UsageForecast): string {
  if (f.state === 'unknown') return '?';
  const r = Math.abs(f.ratePerHour) < 0.05 ? 0 : f.ratePerHour;
  return `${r > 0 ? '+' : ''}${Number(r.toFixed(1))}/h`;
}

/** "3h20m", "not filling", "full", "unknown". */
export function fullInText(f: UsageForecast): string {
  if (f.state === 'filling') return formatSpan((f.secondsToFull ?? 0) * 1000);
  return f.state === 'not-filling' ? 'not filling' : f.state;
}

export async function poolTrends(cmd: Command, opts: { historyDb?: string }, pools: readonly PoolLevel[], windowMs: number): Promise<PoolTrends> {
  const file = await historyFile(opts, cmd);
  if (!existsSync(file))
    return { cells: new Map(), footnote: `TREND, FULL-IN: no history at ${file} (podipam serve keeps it; give its file with --history-db FILE)` };
  const { openHistoryDb } = await import('../history/sqlite-history-db.js');
  const db = openHistoryDb(file, { readonly: true });
  try {
    const fs = poolForecasts(db, pools, { now: Date.now(), windowMs });
    const cells = new Map(fs.map((f) => [f.pool, { trend: trendText(f.forecast), fullIn: fullInText(f.forecast) }] as const));
    const m = fs[0]?.method;
    return { cells, footnote: m === undefined ? '' : `TREND, FULL-IN: ${m.text} (${file})` };
  } finally {
    db.close();
  }
}
