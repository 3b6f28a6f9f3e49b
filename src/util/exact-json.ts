/**
 * JSON with exact large integers, the one rule for the API and the CLI's `--json`: a bigint
 * is a JSON number when a double holds it exactly (|v| ≤ 2^53 − 1) and a decimal string
 * beyond (IPv6 pool sizes), so no consumer ever sees a rounded value such as 4.72e21.
 */

/** A JSON.stringify replacer applying the rule above. */
export function exactReplacer(_key: string, v: unknown): unknown {
  if (typeof v !== 'bigint') return v;
  return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= -BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v.toString();
}

/** `JSON.stringify(value, exactReplacer, indent)`. */
export function exactJson(value: unknown, indent?: number): string {
  return JSON.stringify(value, exactReplacer, indent);
}
