/** Number and colour formatting for the dashboard (pure). */
import type { Count } from './types.js';

/** Thousands separators; capacities beyond 10^12 (exact decimal strings past 2^53) as 2^N. */
export function fmt(v: Count): string {
  const n = typeof v === 'string' && /^[0-9]+$/.test(v) ? Number(v) : v;
  if (typeof n !== 'number') return String(n);
  if (n >= 1e12) return `2^${Math.round(Math.log2(n))}`;
  return n.toLocaleString('en-US');
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
