/** Number and colour formatting for the dashboard (pure). */
import { powerText } from '../../util/count-text.js';
import type { Count } from './types.js';

/**
 * A count as the CLI prints it (powerText: 2^N, M*2^N from 2^32 up — an IPv6 pool's usable
 * 31*2^67, not a rounded 2^72), else with thousands separators. Exact: counts past 2^53
 * arrive as decimal strings and are read as bigint.
 */
export function fmt(v: Count): string {
  if (typeof v === 'string' ? !/^[0-9]+$/.test(v) : !Number.isSafeInteger(v)) return String(v);
  const big = BigInt(v);
  return powerText(big) ?? big.toLocaleString('en-US');
}

/** a / b in percent (0 when b is not positive); b may be an exact decimal string. */
export function pct(a: number, b: Count): number {
  const d = Number(b);
  return d > 0 ? (100 * a) / d : 0;
}

export function pctText(p: number): string {
  if (p === 0) return '0%';
  if (p < 0.1) return '<0.1%';
  return `${p < 10 ? p.toFixed(1) : String(Math.round(p))}%`;
}

/** Fill fraction 0..1 → green (empty) → amber (half) → red (full). */
export function fillColor(f: number): string {
  const lo = f < 0.5;
  const t = lo ? f / 0.5 : (f - 0.5) / 0.5;
  const h = lo ? 152 - (152 - 45) * t : 45 - 45 * t;
  const s = lo ? 55 + 35 * t : 90 - 15 * t;
  const l = lo ? 86 - 28 * t : 58 - 6 * t;
  return `hsl(${h.toFixed(0)} ${s.toFixed(0)}% ${l.toFixed(0)}%)`;
}
