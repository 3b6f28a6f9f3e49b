/**
 * `ipam.routes`, the one parser every back end uses (local, cluster, the warm pool): an array
 * of `{"dst": CIDR, "gw": IP, "mtu"|"advmss"|"priority"|"table"|"scope": integer}`, read as
 * Go's decoder fills host-local's structs (keys case-insensitive, `null` absent, "" an absent
 * gw; src/model/go-decode.ts), normalised by src/model/route.ts. Anything else is a
 * ConfigValueError naming the field and the value (`ipam.routes[0].dst: invalid CIDR address
 * "x"`), code 7 at the CNI edge.
 */
import { type Route, ROUTE_INT_KEYS, type RouteIntKey, makeRoute } from './route.js';
import { goField, isObject, jsonTypeName } from './go-decode.js';
import { ConfigValueError } from './config-value-error.js';
import { type Addr, tryParseAddr } from '../ip/addr.js';
import { type AddrWithLen, parseCidr } from '../ip/prefix.js';

/** The routes of `ipam` (the object at `path`, normally "ipam"); [] when it names none. */
export function parseRoutes(ipam: Readonly<Record<string, unknown>>, path = 'ipam'): Route[] {
  const v = goField(ipam, 'routes');
  if (v === undefined) return [];
  if (!Array.isArray(v)) throw new ConfigValueError(at(path, 'routes'), `must be an array, got ${show(v)}`);
  return v.map((r, i) => route(r, `${at(path, 'routes')}[${i}]`));
}

function route(v: unknown, path: string): Route {
  if (!isObject(v)) throw new ConfigValueError(path, `must be an object, got ${show(v)}`);
  const dstText = optString(v, 'dst', path);
  if (dstText === undefined) throw new ConfigValueError(at(path, 'dst'), 'missing');
  const dst = cidr(dstText, at(path, 'dst'));
  const gw = optAddr(v, 'gw', path);
  const ints: Partial<Record<RouteIntKey, number>> = {};
  for (const k of ROUTE_INT_KEYS) {
    const n = goField(v, k);
    if (n !== undefined && !(typeof n === 'number' && Number.isSafeInteger(n))) throw new ConfigValueError(at(path, k), `must be an integer, got ${show(n)}`);
    ints[k] = n;
  }
  return makeRoute(dst, gw, ints);
}

function at(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

function show(v: unknown): string {
  return `${jsonTypeName(v)} ${JSON.stringify(v)}`;
}

function optString(obj: Readonly<Record<string, unknown>>, key: string, path: string): string | undefined {
  const v = goField(obj, key);
  if (v === undefined || typeof v === 'string') return v;
  throw new ConfigValueError(at(path, key), `must be a string, got ${show(v)}`);
}

/** "" reads as absent (Go's net.IP.UnmarshalText). */
function optAddr(obj: Readonly<Record<string, unknown>>, key: string, path: string): Addr | undefined {
  const s = optString(obj, key, path);
  if (s === undefined || s === '') return undefined;
  const a = tryParseAddr(s);
  if (!a) throw new ConfigValueError(at(path, key), `invalid IP address ${JSON.stringify(s)}`);
  return a;
}

function cidr(v: string, path: string): AddrWithLen {
  try {
    return parseCidr(v);
  } catch {
    throw new ConfigValueError(path, `invalid CIDR address ${JSON.stringify(v)}`);
  }
}
