/**
 * JSON text exactly as Go's encoding/json writes it, so podipam's stdout is byte-identical to
 * the reference plugins': `json.MarshalIndent(v, "", "    ")` for results and errors, compact
 * `json.Marshal` + "\n" for VERSION. Differences from JSON.stringify: Go escapes `<`, `>`, `&`,
 * U+2028 and U+2029, writes other control characters as `\u00XX` (lower-case hex) and never
 * writes `\b`/`\f` short forms (Go < 1.22, which built Debian's plugins).
 *
 * Values: plain objects (key order kept; `undefined` members skipped, as `omitempty` would),
 * arrays, strings, finite numbers, booleans, null.
 */
export type GoJsonValue = string | number | boolean | null | undefined | readonly GoJsonValue[] | { readonly [key: string]: GoJsonValue };

const HEX = '0123456789abcdef';

/** A Go-encoded JSON string literal. */
export function goString(s: string): string {
  let out = '"';
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    let esc: string | undefined;
    if (c < 0x20 || c === 0x22 || c === 0x5c || c === 0x3c || c === 0x3e || c === 0x26) {
      if (c === 0x22) esc = '\\"';
      else if (c === 0x5c) esc = '\\\\';
      else if (c === 0x0a) esc = '\\n';
      else if (c === 0x0d) esc = '\\r';
      else if (c === 0x09) esc = '\\t';
      else esc = '\\u00' + HEX[c >> 4] + HEX[c & 15];
    } else if (c === 0x2028 || c === 0x2029) {
      esc = '\\u202' + HEX[c & 15];
    } else if (c >= 0xd800 && c <= 0xdfff) {
      // A lone surrogate is invalid UTF-8 once encoded; Go writes U+FFFD for invalid bytes.
      const pair = c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00;
      if (pair) {
        i++;
        continue;
      }
      esc = '\\ufffd';
    }
    if (esc !== undefined) {
      out += s.slice(start, i) + esc;
      start = i + 1;
    }
  }
  return out + s.slice(start) + '"';
}

function encode(v: GoJsonValue, indent: string, depth: number): string {
  if (v === null || v === undefined) return 'null';
  switch (typeof v) {
    case 'string':
      return goString(v);
    case 'boolean':
      return v ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(v)) throw new TypeError(`json: unsupported value: ${v}`);
      return String(v);
  }
  const nl = indent ? '\n' + indent.repeat(depth + 1) : '';
  const close = indent ? '\n' + indent.repeat(depth) : '';
  const colon = indent ? ': ' : ':';
  if (Array.isArray(v)) {
    if (v.length === 0) return '[]';
    return '[' + v.map((x) => nl + encode(x, indent, depth + 1)).join(',') + close + ']';
  }
  const parts: string[] = [];
  for (const [k, x] of Object.entries(v as Record<string, GoJsonValue>)) {
    if (x === undefined) continue;
    parts.push(nl + goString(k) + colon + encode(x, indent, depth + 1));
  }
  if (parts.length === 0) return '{}';
  return '{' + parts.join(',') + close + '}';
}

/**
 * What JSON.stringify writes differently from Go, or may (a `null` may stand for a number Go
 * refuses): any of these in its text and the text is encoded here instead.
 */
const NOT_AS_GO = /[<>&\u2028\u2029]|\\[bfu]|null/;

/**
 * `json.MarshalIndent(v, "", "    ")`: what Go plugins print for results and errors. V8's
 * JSON.stringify writes the same bytes for the usual result (same member order, `undefined`
 * skipped, same escapes of `"`, `\\`, `\n`, `\r`, `\t`) at a fraction of the cost on a pod's
 * path; whatever it might write otherwise (NOT_AS_GO) is encoded as Go does, here.
 */
export function goMarshalIndent(v: GoJsonValue): string {
  const fast = JSON.stringify(v, null, 4) as string | undefined;
  return fast !== undefined && !NOT_AS_GO.test(fast) ? fast : encode(v, '    ', 0);
}

/** goMarshalIndent without the JSON.stringify path: the encoder itself, for the property that both write the same. */
export function goMarshalIndentEncoded(v: GoJsonValue): string {
  return encode(v, '    ', 0);
}

/** `json.Marshal(v)`: compact. */
export function goMarshal(v: GoJsonValue): string {
  return encode(v, '', 0);
}

/** Go's `%q` of a string (strconv.Quote), for messages that quote values as Go does. */
export function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (c === 7) out += '\\a';
    else if (c === 8) out += '\\b';
    else if (c === 12) out += '\\f';
    else if (c === 10) out += '\\n';
    else if (c === 13) out += '\\r';
    else if (c === 9) out += '\\t';
    else if (c === 11) out += '\\v';
    else if (c < 0x20 || c === 0x7f) out += '\\x' + HEX[c >> 4] + HEX[c & 15];
    else if (c >= 0xd800 && c <= 0xdfff) out += '\\ufffd';
    else out += ch;
  }
  return out + '"';
}

/** Go's `%q` of a []string: `["a" "b"]`. */
export function goQuoteList(list: readonly string[]): string {
  return '[' + list.map(goQuote).join(' ') + ']';
}
