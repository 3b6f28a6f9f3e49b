/**
 * A `prevResult` of any version read into the 1.x shape (the other direction of result.ts):
 * 0.3.0 and later list `ips[].address` (0.3.x/0.4.0 add a `version` we drop); 0.1.0/0.2.0
 * have `ip4`/`ip6` objects with `ip`, `gateway` and `routes`. Malformed members are skipped:
 * CHECK compares what it can read, it does not validate another plugin's output.
 */
import type { IpConfig, IpamResult } from './types.js';
import type { Route } from '../model/route.js';
import { type Addr, tryParseAddr } from '../ip/addr.js';
import { isObject } from './go-decode.js';

export function prevResultOf(prev: unknown): IpamResult | undefined {
  if (!isObject(prev)) return undefined;
  const ips: IpConfig[] = [];
  const routes: Route[] = [];
  const addRoutes = (v: unknown) => {
    if (Array.isArray(v)) for (const r of v) if (isObject(r) && typeof r.dst === 'string') routes.push(r as Route);
  };
  if (Array.isArray(prev.ips)) {
    for (const ip of prev.ips) {
      if (!isObject(ip) || typeof ip.address !== 'string') continue;
      ips.push(typeof ip.gateway === 'string' ? { address: ip.address, gateway: ip.gateway } : { address: ip.address });
    }
    addRoutes(prev.routes);
  } else {
    for (const fam of [prev.ip4, prev.ip6]) {
      if (!isObject(fam) || typeof fam.ip !== 'string') continue;
      ips.push(typeof fam.gateway === 'string' ? { address: fam.ip, gateway: fam.gateway } : { address: fam.ip });
      addRoutes(fam.routes);
    }
  }
  return { ips, ...(routes.length > 0 ? { routes } : {}), ...(isObject(prev.dns) ? { dns: prev.dns } : {}) };
}

/** An address of a prevResult: its text as written and the address it names. */
export interface PrevAddr {
  readonly text: string;
  readonly addr: Addr;
}

/** The addresses a prevResult lists (any version), those that parse. */
export function prevResultAddrs(prev: unknown): PrevAddr[] {
  return (prevResultOf(prev)?.ips ?? []).flatMap((ip) => {
    const addr = tryParseAddr(ip.address.split('/')[0]!);
    return addr ? [{ text: ip.address, addr }] : [];
  });
}
