import type { GoJsonValue } from '../cni/go-json.js';

/** Go's byte-wise string order (sort.Strings, map keys in encoding/json). */
export function goCompare(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/**
 * A parsed JSON value as Go re-encodes a `map[string]interface{}`: every object's keys in
 * byte order, recursively (arrays keep their order). What libcni writes for configs it
 * re-marshals and for the cached `result` and `capabilityArgs`.
 */
export function goMapValue(v: unknown): GoJsonValue {
  if (Array.isArray(v)) return v.map(goMapValue);
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    const out: Record<string, GoJsonValue> = {};
    for (const k of Object.keys(o).sort(goCompare)) {
      // undefined is a struct member `omitempty` left out, not a value.
      if (o[k] !== undefined) out[k] = goMapValue(o[k]);
    }
    return out;
  }
  return v as GoJsonValue;
}
