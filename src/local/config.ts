/**
 * The `local` back end's configuration: exactly host-local's keys (`ranges`, legacy
 * `subnet`/`rangeStart`/`rangeEnd`/`gateway`, `routes`, `dataDir`, `resolvConf`, plus
 * `runtimeConfig.ipRanges`/`ips`, `args.cni.ips` and CNI_ARGS `IP=`), validated once into typed
 * values. Every failure is a CniError naming the field and the value (code 7; 4 for CNI_ARGS).
 */
import { path } from '../cni/builtins.js';
import { CniCode, CniError } from '../cni/errors.js';
import type { NetConf, Route } from '../cni/ipam-backend.js';
import { checkKnownArgs } from '../cni/cni-args.js';
import { goQuote } from '../cni/go-json.js';
import type { AllocRangeSet } from '../alloc/range-allocator.js';
import { type Addr, formatAddr, parseAddr } from '../ip/addr.js';
import { parseCidr } from '../ip/prefix.js';
import { asObject, at, cidrValue, configError, optAddr, optArray, optInt, optObject, optString } from './decode.js';
import { resolveRangeSets } from './range-sets.js';

/** host-local's default state directory. */
export const DEFAULT_DATA_DIR = '/var/lib/cni/networks';

export interface LocalConfig {
  /** The network name: the directory under dataDir (already checked against the name class). */
  readonly name: string;
  readonly cniVersion: string;
  /** Absolute, normalised. */
  readonly dataDir: string;
  /** `<dataDir>/<name>`: everything this back end writes is inside it. */
  readonly dir: string;
  readonly rangeSets: readonly AllocRangeSet[];
  /** Routes, normalised as host-local prints them (dst keeps host bits, canonical text). */
  readonly routes: readonly Route[];
  readonly resolvConf?: string;
  /** Requested addresses, CNI_ARGS `IP` first, then `args.cni.ips`, then `runtimeConfig.ips`; no duplicates. */
  readonly requested: readonly Addr[];
}

/** Validates `conf.ipam` (and the request-carrying parts of conf and CNI_ARGS) for the local back end. */
export async function loadLocalConfig(conf: NetConf, cniArgs: ReadonlyMap<string, string> = new Map()): Promise<LocalConfig> {
  const ipam = conf.ipam;
  const dataDir = optString(ipam, 'dataDir', 'ipam') || DEFAULT_DATA_DIR;
  if (!path.isAbsolute(dataDir) || dataDir.includes('\0')) {
    throw configError('ipam.dataDir', `${JSON.stringify(dataDir)} must be an absolute path`);
  }
  const resolvConf = optString(ipam, 'resolvConf', 'ipam') || undefined;
  const routes = (optArray(ipam, 'routes', 'ipam') ?? []).map((r, i) => route(r, `ipam.routes[${i}]`));
  const requested = requestedAddrs(conf, cniArgs);
  const rangeSets = await resolveRangeSets(conf);
  const dir = path.join(path.normalize(dataDir), conf.name);
  return { name: conf.name, cniVersion: conf.cniVersion, dataDir: path.normalize(dataDir), dir, rangeSets, routes, resolvConf, requested };
}

function route(v: unknown, path: string): Route {
  const obj = asObject(v, path);
  const dstText = optString(obj, 'dst', path);
  if (dstText === undefined) throw configError(at(path, 'dst'), 'missing');
  const { addr, len } = cidrValue(dstText, at(path, 'dst'));
  const gw = optAddr(obj, 'gw', path);
  const out: Record<string, unknown> = { dst: `${formatAddr(addr)}/${len}` };
  if (gw) out.gw = formatAddr(gw);
  for (const k of ['mtu', 'advmss', 'priority', 'table', 'scope']) {
    const n = optInt(obj, k, path);
    if (n !== undefined) out[k] = n;
  }
  return out as unknown as Route;
}

/** Parses "ip" or "ip/len" (the length is ignored), as the Go `ip.IP` type does. */
function requestedAddr(text: unknown, path: string): Addr {
  if (typeof text !== 'string') throw configError(path, `must be an IP address string, got ${JSON.stringify(text)}`);
  try {
    return text.includes('/') ? parseCidr(text).addr : parseAddr(text);
  } catch {
    throw configError(path, `invalid IP address ${JSON.stringify(text)}`);
  }
}

function requestedAddrs(conf: NetConf, cniArgs: ReadonlyMap<string, string>): Addr[] {
  checkKnownArgs(cniArgs, ['IP']);
  const out: Addr[] = [];
  const ip = cniArgs.get('IP');
  if (ip) {
    try {
      out.push(ip.includes('/') ? parseCidr(ip).addr : parseAddr(ip));
    } catch {
      throw new CniError(CniCode.InvalidEnv, `ARGS: error parsing value of pair ${goQuote(`IP=${ip}`)}: invalid IP address ${ip}`);
    }
  }
  const args = optObject(conf.raw, 'args', '');
  const cni = args && optObject(args, 'cni', 'args');
  (cni && optArray(cni, 'ips', 'args.cni'))?.forEach((t, i) => out.push(requestedAddr(t, `args.cni.ips[${i}]`)));
  const rc = optObject(conf.raw, 'runtimeConfig', '');
  (rc && optArray(rc, 'ips', 'runtimeConfig'))?.forEach((t, i) => out.push(requestedAddr(t, `runtimeConfig.ips[${i}]`)));
  // host-local keys its requests by canonical text: a repeated address is one request.
  const seen = new Set<string>();
  return out.filter((a) => {
    const k = formatAddr(a);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}
