/**
 * The CLI's one parser of integer, duration, boolean and listen-address flag values: each failure is a
 * UsageError naming the flag and the value (and the bounds), printed without a stack (exit 2).
 */
import { UsageError } from './usage-error.js';

export interface IntBounds {
  readonly min?: number;
  readonly max?: number;
}

/**
 * A decimal integer (an optional "-", digits), within [min, max] when given:
 * `invalid FLAG "TEXT": not an integer` (with both bounds: `must be an integer from MIN to
 * MAX`) or `invalid FLAG "TEXT": must be from MIN to MAX`.
 */
export function parseIntFlag(flag: string, text: string, bounds: IntBounds = {}): number {
  const { min, max } = bounds;
  const n = Number(text);
  if (!/^-?[0-9]+$/.test(text) || !Number.isSafeInteger(n)) {
    const what = min !== undefined && max !== undefined ? `must be an integer from ${min} to ${max}` : 'not an integer';
    throw new UsageError(`invalid ${flag} ${JSON.stringify(text)}: ${what}`);
  }
  if ((min !== undefined && n < min) || (max !== undefined && n > max)) {
    throw new UsageError(`invalid ${flag} ${JSON.stringify(text)}: must be from ${min ?? '-∞'} to ${max ?? '∞'}`);
  }
  return n;
}

/** parseIntFlag for a flag that may be absent (undefined stays undefined). */
export function parseOptionalIntFlag(flag: string, text: string | undefined, bounds: IntBounds = {}): number | undefined {
  return text === undefined ? undefined : parseIntFlag(flag, text, bounds);
}

/** Parses "true"/"false"; UsageError naming the option and value. */
export function boolOption(name: string, text: string | undefined): boolean | undefined {
  if (text === undefined) return undefined;
  if (text === 'true') return true;
  if (text === 'false') return false;
  throw new UsageError(`invalid ${name} ${JSON.stringify(text)}: use true or false`);
}

/** "90s", "15m", "2h", "90d", "500ms" or plain seconds → milliseconds. */
export function parseDuration(flag: string, text: string): number {
  const m = /^([0-9]+(?:\.[0-9]+)?)(ms|s|m|h|d)?$/.exec(text.trim());
  if (!m) throw new UsageError(`invalid ${flag} ${JSON.stringify(text)}: expected a duration such as 500ms, 30s, 15m, 1h or 90d`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[(m[2] ?? 's') as 'ms' | 's' | 'm' | 'h' | 'd'];
  return Math.round(Number(m[1]) * unit);
}

/** "HOST:PORT", "[V6]:PORT" or "PORT" (loopback). */
export function parseListen(text: string): { host: string; port: number } {
  const m = /^\[([0-9a-fA-F:.]+)\]:([0-9]{1,5})$/.exec(text) ?? /^([^:[\]]*):([0-9]{1,5})$/.exec(text) ?? /^()([0-9]{1,5})$/.exec(text);
  const port = m ? Number(m[2]) : NaN;
  if (!m || port > 65535)
    throw new UsageError(`invalid --listen ${JSON.stringify(text)}: expected HOST:PORT, e.g. 127.0.0.1:7420 or [::1]:7420 or 0.0.0.0:7420`);
  return { host: m[1] === '' ? '127.0.0.1' : (m[1] as string), port };
}
