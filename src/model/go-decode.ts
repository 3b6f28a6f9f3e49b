/**
 * Reading JSON objects the way Go's encoding/json fills a struct, so configs that the Go
 * plugins accept are accepted here: a key matches its field case-insensitively (the last
 * matching key wins) and `null` means "absent".
 */

/** A plain JSON object (not an array, not null). */
export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The value of field `name` in `obj` as Go would decode it; `undefined` when absent or null. */
export function goField(obj: Readonly<Record<string, unknown>>, name: string): unknown {
  let found: unknown;
  const lower = name.toLowerCase();
  for (const k of Object.keys(obj)) {
    if (k === name || k.toLowerCase() === lower) found = obj[k];
  }
  return found === null ? undefined : found;
}

/** The JSON type name Go prints in "cannot unmarshal X into …" errors. */
export function jsonTypeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'object') return 'object';
  return typeof v;
}
