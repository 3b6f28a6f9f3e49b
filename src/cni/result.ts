import type { Dns, IpamResult } from './types.js';
import type { Route } from '../model/route.js';
import { type GoJsonValue, goMarshalIndent } from './go-json.js';
import { parseCidr } from '../ip/prefix.js';
import { versionAtLeast } from './version.js';

/**
 * Converts an IPAM result (1.x shape) to the shape of `cniVersion`, field for field as libcni's
 * converters and Go's encoder produce it:
 * - 0.1.0 / 0.2.0: `{cniVersion, ip4:{ip, gateway, routes}, ip6:{…}, dns}` — only the first
 *   address of each family; each route goes to the family of its `dst`.
 * - 0.3.0 / 0.3.1 / 0.4.0: `{cniVersion, ips:[{version, address, gateway}], routes, dns}`.
 * - 1.0.0 / 1.1.0: `{cniVersion, ips:[{address, gateway}], routes, dns}`.
 * Empty `ips`/`routes` and empty DNS members are omitted, `dns` itself is always present (`{}`),
 * as the Go structs' `omitempty` tags do. Route keys beyond `dst`/`gw` (mtu, advmss, priority,
 * table, scope) appear only from 1.1.0, the version that defined them.
 */
export function resultForVersion(cniVersion: string, r: IpamResult): GoJsonValue {
  const version = cniVersion === '' ? '0.1.0' : cniVersion;
  const dns = dnsValue(r.dns);
  const rich = versionAtLeast(version, '1.1.0');
  if (!versionAtLeast(version, '0.3.0')) return legacyResult(version, r, dns);
  const withVersion = !versionAtLeast(version, '1.0.0');
  const ips = r.ips.map((ip) => ({
    version: withVersion ? String(parseCidr(ip.address).addr.family) : undefined,
    address: ip.address,
    gateway: ip.gateway || undefined,
  }));
  const routes = (r.routes ?? []).map((rt) => routeValue(rt, rich));
  return {
    cniVersion: version,
    ips: ips.length ? ips : undefined,
    routes: routes.length ? routes : undefined,
    dns,
  };
}

function legacyResult(version: string, r: IpamResult, dns: GoJsonValue): GoJsonValue {
  type Legacy = { ip: string; gateway?: string; routes?: GoJsonValue[] };
  let ip4: Legacy | undefined;
  let ip6: Legacy | undefined;
  for (const ip of r.ips) {
    const fam = parseCidr(ip.address).addr.family;
    const v: Legacy = { ip: ip.address, gateway: ip.gateway || undefined };
    if (fam === 4 && !ip4) ip4 = v;
    else if (fam === 6 && !ip6) ip6 = v;
  }
  for (const rt of r.routes ?? []) {
    const target = parseCidr(rt.dst).addr.family === 4 ? ip4 : ip6;
    if (target) (target.routes ??= []).push(routeValue(rt, false));
  }
  return { cniVersion: version, ip4: ip4 as GoJsonValue, ip6: ip6 as GoJsonValue, dns };
}

function routeValue(rt: Route, rich: boolean): GoJsonValue {
  const int = (k: string): number | undefined => {
    const v = rt[k];
    return typeof v === 'number' && Number.isInteger(v) ? v : undefined;
  };
  const nonZero = (k: string): number | undefined => int(k) || undefined;
  return {
    dst: rt.dst,
    gw: rt.gw || undefined,
    mtu: rich ? nonZero('mtu') : undefined,
    advmss: rich ? nonZero('advmss') : undefined,
    priority: rich ? nonZero('priority') : undefined,
    table: rich ? int('table') : undefined,
    scope: rich ? int('scope') : undefined,
  };
}

function dnsValue(d: Dns | undefined): GoJsonValue {
  const list = (l: readonly string[] | undefined) => (l && l.length ? [...l] : undefined);
  return {
    nameservers: list(d?.nameservers),
    domain: d?.domain || undefined,
    search: list(d?.search),
    options: list(d?.options),
  };
}

/** The bytes a plugin prints for a successful ADD: Go's indented JSON, no trailing newline. */
export function formatResult(cniVersion: string, r: IpamResult): string {
  return goMarshalIndent(resultForVersion(cniVersion, r));
}
