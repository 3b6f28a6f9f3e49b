/**
 * YAML for JSON data (what `-o yaml` prints): the value after the exact-JSON rule
 * (exact-json.ts: bigints as numbers or decimal strings), in block style — mappings as
 * `key: value`, sequences as `- item` — with every string that YAML could read as anything
 * else (a number, a boolean, null, or text with YAML syntax) double-quoted as JSON writes it,
 * which YAML reads back unchanged. No dependency: the data is plain JSON.
 */
import { exactJson } from './exact-json.js';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** Strings YAML reads back as the same string when written bare. */
const PLAIN = /^[A-Za-z_][A-Za-z0-9_./()-]*$/;
/** Words YAML 1.1 or 1.2 reads as booleans or null. */
const RESERVED = /^(?:true|false|null|yes|no|on|off|y|n|~)$/i;

function scalar(v: null | boolean | number | string): string {
  if (typeof v !== 'string') return String(v);
  return PLAIN.test(v) && !RESERVED.test(v) ? v : JSON.stringify(v);
}

/** Lines of `v` at `indent`; an empty collection or a scalar is one line. */
function lines(v: Json, indent: string): string[] {
  if (Array.isArray(v)) {
    if (v.length === 0) return ['[]'];
    return v.flatMap((item) => {
      const [first, ...rest] = lines(item, `${indent}  `);
      return [`${indent}- ${(first as string).trimStart()}`, ...rest];
    });
  }
  if (v !== null && typeof v === 'object') {
    const keys = Object.keys(v);
    if (keys.length === 0) return ['{}'];
    return keys.flatMap((k) => {
      const item = v[k] as Json;
      const key = `${indent}${scalar(k)}:`;
      if (item !== null && typeof item === 'object' && (Array.isArray(item) ? item.length > 0 : Object.keys(item).length > 0))
        return [key, ...lines(item, `${indent}  `)];
      return [`${key} ${lines(item, '')[0] as string}`];
    });
  }
  return [`${indent}${scalar(v)}`];
}

/** `value` as a YAML document (trailing newline). */
export function yamlText(value: unknown): string {
  const json = exactJson(value);
  const data = (json === undefined ? null : JSON.parse(json)) as Json;
  return `${lines(data, '').join('\n')}\n`;
}
