/**
 * A route of an IPAM result, normalised one way for both back ends: `dst` as canonical text
 * with its host bits kept (`10.1.2.3/8`, `::/0` — as host-local prints it), `gw` canonical, and
 * the integer keys CNI 1.1.0 defines (`mtu`, `advmss`, `priority`, `table`, `scope`) kept; other
 * keys dropped. src/cni/result.ts prints only `dst`/`gw` for versions before 1.1.0.
 */
import { type Addr, formatAddr } from '../ip/addr.js';
import type { AddrWithLen } from '../ip/prefix.js';

export interface Route {
  readonly dst: string;
  readonly gw?: string;
  readonly [key: string]: unknown;
}

/** The integer-valued route keys of CNI 1.1.0, in the order they are kept. */
export const ROUTE_INT_KEYS = ['mtu', 'advmss', 'priority', 'table', 'scope'] as const;

export type RouteIntKey = (typeof ROUTE_INT_KEYS)[number];

/** The route from decoded parts (each edge reads them with its own error messages). */
export function makeRoute(dst: AddrWithLen, gw: Addr | undefined, ints: Partial<Record<RouteIntKey, number>>): Route {
  const out: Record<string, unknown> = { dst: `${formatAddr(dst.addr)}/${dst.len}` };
  if (gw) out.gw = formatAddr(gw);
  for (const k of ROUTE_INT_KEYS) if (ints[k] !== undefined) out[k] = ints[k];
  return out as unknown as Route;
}
