/**
 * The addresses a CNI request asks for, by the conventions: CNI_ARGS `IP=` (unknown args refused
 * unless IgnoreUnknown), then `args.cni.ips`, then `runtimeConfig.ips` — all three merged, as
 * host-local does, prefix lengths ignored, a repeated address one request. Bad input is CNI
 * code 4 (CNI_ARGS, with host-local's text) or 7 naming the field and value.
 */
import { checkKnownArgs } from '../cni/cni-args.js';
import { configError, optArray, optObject } from './config-decode.js';
import { CniCode, CniError } from '../cni/errors.js';
import { goQuote } from '../cni/go-json.js';
import type { NetConf } from '../cni/types.js';
import { type Addr, formatAddr, parseAddr } from '../ip/addr.js';
import { parseCidr } from '../ip/prefix.js';

function requestedAddr(text: unknown, path: string): Addr {
  if (typeof text !== 'string') throw configError(path, `must be an IP address string, got ${JSON.stringify(text)}`);
  try {
    return text.includes('/') ? parseCidr(text).addr : parseAddr(text);
  } catch {
    throw configError(path, `invalid IP address ${JSON.stringify(text)}`);
  }
}

export function requestedAddrs(conf: NetConf, cniArgs: ReadonlyMap<string, string>): Addr[] {
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
