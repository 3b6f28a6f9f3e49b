/**
 * Typed reads of host-local's config values, failing with code 7 and a message that names the
 * field (as a JSON path) and the value. Values are read as Go's decoder would fill host-local's
 * structs: case-insensitive keys, `null` as absent, "" as an absent IP.
 */
import { CniCode, CniError } from '../cni/errors.js';
import { goField, isObject, jsonTypeName } from '../cni/go-decode.js';
import { type Addr, tryParseAddr } from '../ip/addr.js';
import { type AddrWithLen, parseCidr } from '../ip/prefix.js';
import type { Route } from '../model/route.js';
import { parseRoutes as parseModelRoutes } from '../model/parse-routes.js';
import { ConfigValueError } from '../model/config-value-error.js';

export { goField, isObject };

/** A config error (code 7) about the value at `path`. */
export function configError(path: string, problem: string): CniError {
  return new CniError(CniCode.InvalidConfig, `${path}: ${problem}`);
}

/** `ipam.routes` read by the one route parser (src/model/parse-routes.ts); a bad value is code 7. */
export function parseRoutes(ipam: Readonly<Record<string, unknown>>, path = 'ipam'): Route[] {
  try {
    return parseModelRoutes(ipam, path);
  } catch (e) {
    throw e instanceof ConfigValueError ? configError(e.path, e.problem) : e;
  }
}

/** `path.key`, or `key` at the top level. */
export function at(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

function show(v: unknown): string {
  return `${jsonTypeName(v)} ${JSON.stringify(v)}`;
}

export function optString(obj: Readonly<Record<string, unknown>>, key: string, path: string): string | undefined {
  const v = goField(obj, key);
  if (v === undefined || typeof v === 'string') return v;
  throw configError(at(path, key), `must be a string, got ${show(v)}`);
}

export function optObject(obj: Readonly<Record<string, unknown>>, key: string, path: string): Readonly<Record<string, unknown>> | undefined {
  const v = goField(obj, key);
  if (v === undefined || isObject(v)) return v;
  throw configError(at(path, key), `must be an object, got ${show(v)}`);
}

export function optArray(obj: Readonly<Record<string, unknown>>, key: string, path: string): readonly unknown[] | undefined {
  const v = goField(obj, key);
  if (v === undefined || Array.isArray(v)) return v;
  throw configError(at(path, key), `must be an array, got ${show(v)}`);
}

/** An element that must be an object. */
export function asObject(v: unknown, path: string): Readonly<Record<string, unknown>> {
  if (isObject(v)) return v;
  throw configError(path, `must be an object, got ${show(v)}`);
}

/** An optional IP address field; "" and null read as absent (Go's net.IP.UnmarshalText). */
export function optAddr(obj: Readonly<Record<string, unknown>>, key: string, path: string): Addr | undefined {
  const s = optString(obj, key, path);
  if (s === undefined || s === '') return undefined;
  const a = tryParseAddr(s);
  if (!a) throw configError(at(path, key), `invalid IP address ${JSON.stringify(s)}`);
  return a;
}

/** A CIDR ("10.1.0.0/24", host bits allowed) at `path`. */
export function cidrValue(v: unknown, path: string): AddrWithLen {
  if (typeof v !== 'string') throw configError(path, `must be a CIDR string, got ${show(v)}`);
  try {
    return parseCidr(v);
  } catch {
    throw configError(path, `invalid CIDR address ${JSON.stringify(v)}`);
  }
}

/** An integer field (routes' mtu, table, …), or undefined. */
export function optInt(obj: Readonly<Record<string, unknown>>, key: string, path: string): number | undefined {
  const v = goField(obj, key);
  if (v === undefined || (typeof v === 'number' && Number.isSafeInteger(v))) return v;
  throw configError(at(path, key), `must be an integer, got ${show(v)}`);
}
