/**
 * Request validation at the API edge: each check names the field and the value it got, so a
 * client sees `field "blockSize" must be an integer between 20 and 32: got "x"`.
 */
import { badField, HttpError } from './http-error.js';
import { HANDLE_PATTERN } from '../../model/handle-id.js';
import { DNS_SUBDOMAIN } from '../../model/node-name.js';
import { isLabelKey, isLabelValue } from '../../model/labels.js';

export type Body = Readonly<Record<string, unknown>>;

function show(v: unknown): string {
  const s = JSON.stringify(v);
  return s === undefined ? String(v) : s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

/** How deeply a request body may nest arrays and objects (ours nest three levels at most). */
export const MAX_JSON_DEPTH = 64;

/** The deepest nesting of arrays/objects in JSON text, stopping early beyond `limit`. */
export function jsonDepth(text: string, limit: number): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max && (max = depth) > limit) return max;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return max;
}

/**
 * Parses a request body as a JSON object. Empty bodies are `{}`. Nesting deeper than
 * MAX_JSON_DEPTH is refused before parsing: code that walks a value (our messages print
 * values) must never meet a depth that overflows the stack.
 */
export function parseJsonObject(text: string): Body {
  if (text.trim() === '') return {};
  if (jsonDepth(text, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) {
    throw new HttpError(400, 'invalid_json', `request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`);
  }
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new HttpError(400, 'invalid_json', `request body is not valid JSON: ${(e as Error).message}`, undefined, { cause: e });
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    throw new HttpError(400, 'invalid_json', `request body must be a JSON object: got ${show(v)}`);
  }
  return v as Body;
}

export function requireString(body: Body, field: string, pattern?: RegExp, hint?: string): string {
  const v = body[field];
  if (v === undefined || v === null || v === '') throw badField(field, `field "${field}" is required`);
  return checkString(v, field, pattern, hint);
}

export function optionalString(body: Body, field: string, pattern?: RegExp, hint?: string): string | undefined {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  return checkString(v, field, pattern, hint);
}

function checkString(v: unknown, field: string, pattern?: RegExp, hint?: string): string {
  if (typeof v !== 'string') throw badField(field, `field "${field}" must be a string: got ${show(v)}`);
  if (pattern && !pattern.test(v)) throw badField(field, `field "${field}" must be ${hint ?? `like ${pattern}`}: got ${show(v)}`);
  return v;
}

export function optionalInt(body: Body, field: string, min: number, max: number): number | undefined {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw badField(field, `field "${field}" must be an integer between ${min} and ${max}: got ${show(v)}`);
  }
  return v;
}

export function optionalBool(body: Body, field: string): boolean | undefined {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'boolean') throw badField(field, `field "${field}" must be true or false: got ${show(v)}`);
  return v;
}

export function optionalStringArray(body: Body, field: string, pattern?: RegExp, hint?: string): string[] | undefined {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw badField(field, `field "${field}" must be an array of strings: got ${show(v)}`);
  return v.map((x, i) => checkString(x, `${field}[${i}]`, pattern, hint));
}

/** A map of string to string (labels). */
export function optionalStringMap(body: Body, field: string): Record<string, string> | undefined {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'object' || Array.isArray(v)) throw badField(field, `field "${field}" must be an object of strings: got ${show(v)}`);
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    if (!isLabelKey(k)) throw badField(`${field}.${k}`, `label key ${show(k)} in "${field}" is not a valid label name`);
    if (typeof x !== 'string' || !isLabelValue(x))
      throw badField(`${field}.${k}`, `label "${k}" in "${field}" must be a label value (63 characters of [A-Za-z0-9_.-]): got ${show(x)}`);
    out[k] = x;
  }
  return out;
}

/** Query parameter helpers: same messages, `field` is the parameter name. */
export function queryInt(q: URLSearchParams, name: string, dflt: number, min: number, max: number): number {
  const s = q.get(name);
  if (s === null || s === '') return dflt;
  const n = Number(s);
  if (!/^[0-9]+$/.test(s) || n < min || n > max) {
    throw badField(name, `query parameter "${name}" must be an integer between ${min} and ${max}: got ${show(s)}`);
  }
  return n;
}

/** Kubernetes object names (RFC 1123 subdomain), used for nodes and pools: the model's one rule (src/model/node-name.ts). */
export const NAME = DNS_SUBDOMAIN;
export const NAME_HINT = 'a lower-case name of letters, digits, "-" and "." (RFC 1123), starting and ending with a letter or digit';
/** A handle id: what the CNI plugin writes (`<network>:<containerId>:<ifname>`, handle-id.ts), old dotted ids, or any id of the same characters. */
export const HANDLE = HANDLE_PATTERN;
export const HANDLE_HINT = 'a handle id of 1-1024 printable characters without "/" or white space (e.g. "k8s-pod-network:<containerId>:eth0")';
