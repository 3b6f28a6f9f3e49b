/**
 * `ipam.routes`, the one parser every back end uses (local, cluster, the agent's warm pool):
 * an array of `{"dst": CIDR, "gw": IP, "mtu"|"advmss"|"priority"|"table"|"scope": integer}`,
 * read as Go's decoder fills host-local's structs (keys case-insensitive, `null` absent, "" an
 * absent gw), normalised by src/model/route.ts. Anything else is code 7 naming the field and
 * the value (`ipam.routes[0].dst: invalid CIDR address "x"`).
 */
import { type Route, ROUTE_INT_KEYS, type RouteIntKey, makeRoute } from '../model/route.js';
import { asObject, at, cidrValue, configError, optAddr, optArray, optInt, optString } from './config-decode.js';

/** The routes of `ipam` (the object at `path`, normally "ipam"); [] when it names none. */
export function parseRoutes(ipam: Readonly<Record<string, unknown>>, path = 'ipam'): Route[] {
  return (optArray(ipam, 'routes', path) ?? []).map((r, i) => route(r, `${at(path, 'routes')}[${i}]`));
}

function route(v: unknown, path: string): Route {
  const obj = asObject(v, path);
  const dstText = optString(obj, 'dst', path);
  if (dstText === undefined) throw configError(at(path, 'dst'), 'missing');
  const dst = cidrValue(dstText, at(path, 'dst'));
  const gw = optAddr(obj, 'gw', path);
  const ints: Partial<Record<RouteIntKey, number>> = {};
  for (const k of ROUTE_INT_KEYS) ints[k] = optInt(obj, k, path);
  return makeRoute(dst, gw, ints);
}
