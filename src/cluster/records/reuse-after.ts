/**
 * A pool's `reuseAfter`: how long an address released anywhere stays out of every hand-out in
 * the cluster (src/alloc/block-quarantine.ts). Written as a duration ("0", "500ms", "30s",
 * "5m", "1h"; a bare number is seconds), stored and used as milliseconds; 0 (the default) turns
 * the quarantine off. Bounded by MAX_REUSE_AFTER_MS: a typo must not take a pool's freed
 * addresses away for days.
 */

/** Longest quarantine a pool may set: one hour. */
export const MAX_REUSE_AFTER_MS = 3_600_000;

/** Parses a reuseAfter as typed (CLI, API, pool spec); TypeError/RangeError naming the field and value. */
export function parseReuseAfter(value: unknown): number {
  if (typeof value !== 'string')
    throw new TypeError(`invalid pool reuseAfter ${JSON.stringify(value)}: expected a duration such as "0", "500ms", "30s" or "5m"`);
  const m = /^([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)?$/.exec(value.trim());
  if (!m) throw new TypeError(`invalid pool reuseAfter ${JSON.stringify(value)}: expected a duration such as "0", "500ms", "30s" or "5m"`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? 's') as 'ms' | 's' | 'm' | 'h'];
  const ms = Math.round(Number(m[1]) * unit);
  if (ms > MAX_REUSE_AFTER_MS) throw new RangeError(`invalid pool reuseAfter ${JSON.stringify(value)}: at most 1h`);
  return ms;
}

/** A reuseAfter as printed: "off", "500ms", "30s", "1m30s". */
export function reuseAfterText(ms: number): string {
  if (ms <= 0) return 'off';
  if (ms % 1000 !== 0) return `${ms}ms`;
  const s = ms / 1000;
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const r = s % 60;
  return `${h > 0 ? `${h}h` : ''}${m > 0 ? `${m}m` : ''}${r > 0 || s === 0 ? `${r}s` : ''}`;
}
