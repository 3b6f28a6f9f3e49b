/**
 * Decoding helpers shared by the record codecs: every failure is a CorruptRecordError naming
 * the key and the field, so `ipam check` can report it and the allocator can refuse to build
 * on it.
 */
import { type Entry, isWellFormed } from '../../store/index.js';
import { CorruptRecordError } from './errors.js';

/** Parses an entry's JSON value into an object; CorruptRecordError otherwise. */
export function parseRecord(entry: Entry): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(entry.value);
  } catch {
    throw new CorruptRecordError(entry.key, 'not JSON');
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new CorruptRecordError(entry.key, 'not a JSON object');
  // The stored text is well-formed, but a \uD800-style escape decodes to a lone surrogate, which
  // no key or value may hold: a record carrying one is refused here, before any field is used.
  if (SURROGATE_ESCAPE.test(entry.value) && !wellFormedDeep(v)) throw new CorruptRecordError(entry.key, 'a string holds a lone surrogate');
  return v as Record<string, unknown>;
}

const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

function wellFormedDeep(v: unknown): boolean {
  if (typeof v === 'string') return isWellFormed(v);
  if (v === null || typeof v !== 'object') return true;
  if (Array.isArray(v)) return v.every(wellFormedDeep);
  return Object.entries(v).every(([k, x]) => isWellFormed(k) && wellFormedDeep(x));
}

export function str(key: string, o: Record<string, unknown>, field: string): string {
  const v = o[field];
  if (typeof v !== 'string') throw new CorruptRecordError(key, `field "${field}" is ${JSON.stringify(v)}, not a string`);
  return v;
}

export function optStr(key: string, o: Record<string, unknown>, field: string): string | undefined {
  return o[field] === undefined ? undefined : str(key, o, field);
}

export function int(key: string, o: Record<string, unknown>, field: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const v = o[field];
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw new CorruptRecordError(key, `field "${field}" is ${JSON.stringify(v)}, not an integer from ${min} to ${max}`);
  }
  return v;
}

export function bool(key: string, o: Record<string, unknown>, field: string, dflt: boolean): boolean {
  const v = o[field];
  if (v === undefined) return dflt;
  if (typeof v !== 'boolean') throw new CorruptRecordError(key, `field "${field}" is ${JSON.stringify(v)}, not a boolean`);
  return v;
}

export function obj(key: string, o: Record<string, unknown>, field: string): Record<string, unknown> {
  const v = o[field];
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new CorruptRecordError(key, `field "${field}" is not an object`);
  return v as Record<string, unknown>;
}

/** Runs `fn` turning a TypeError/RangeError from a parser into CorruptRecordError for `key`. */
export function orCorrupt<T>(key: string, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof CorruptRecordError) throw e;
    throw new CorruptRecordError(key, e instanceof Error ? e.message : String(e), { cause: e });
  }
}
