/**
 * The range sets of a host-local config, collected and canonicalised with host-local's rules and
 * messages (`LoadIPAMConfig` + `RangeSet.Canonicalize` + `Range.Canonicalize`):
 * `runtimeConfig.ipRanges` first, then the legacy top-level `subnet` range, then `ranges`.
 * This is the one place range sets come from, so `"subnet": "usePodCidr"` is resolved here.
 */
import { CniCode, CniError } from '../cni/errors.js';
import { cniErrorOf } from '../cni/cni-error-of.js';
import { defaultNodeName } from '../model/node-name.js';
import type { NetConf } from '../cni/types.js';
import { type AllocRange, type AllocRangeSet, allocRangesOverlap, rangeSetsOverlap } from '../local/range-allocator.js';
import { type Addr, familyBits, formatAddr } from '../ip/addr.js';
import { type Prefix, formatAddrWithLen, formatPrefix, prefixContains, prefixLast, prefixOf } from '../ip/prefix.js';
import { versionAtLeast } from '../cni/version.js';
import { DEFAULT_DATA_DIR } from '../local/local-config.js';
import { asObject, cidrValue, configError, goField, optAddr, optArray, optObject } from './config-decode.js';

/** The `subnet` value that asks for the node's pod CIDR (spec.podCIDR: the first one recorded). */
export const USE_POD_CIDR = 'usePodCidr';
/** The `subnet` value that asks for the node's IPv6 pod CIDR (as Calico's host-local wrapper spells it). */
export const USE_POD_CIDR_IPV6 = 'usePodCidrIPv6';

const isPodCidrToken = (s: string) => s === USE_POD_CIDR || s === USE_POD_CIDR_IPV6;

/** A range as written in the config, before canonicalisation. */
interface RawRange {
  readonly path: string;
  readonly subnet: string;
  readonly obj: Readonly<Record<string, unknown>>;
}

/**
 * Every range set of `conf`, validated and canonicalised. Throws CniError 7 with host-local's
 * text (`invalid range set 0: …`, `range set 0 overlaps with 1`, `no IP ranges specified`, …)
 * or a message naming the field and value for ill-typed input.
 */
export async function resolveRangeSets(conf: NetConf): Promise<AllocRangeSet[]> {
  let raw = collect(conf);
  if (raw.some((set) => set.some((r) => isPodCidrToken(r.subnet)))) {
    const subnets = await expandPodCidr(conf);
    raw = raw.map((set) => set.map((r) => (isPodCidrToken(r.subnet) ? { ...r, subnet: subnets(r) } : r)));
  }
  if (raw.length === 0) throw new CniError(CniCode.InvalidConfig, 'no IP ranges specified');
  const sets: AllocRangeSet[] = raw.map((set, i) => {
    try {
      return canonicalizeSet(set);
    } catch (e) {
      if (e instanceof CniError) throw e;
      throw new CniError(CniCode.InvalidConfig, `invalid range set ${i}: ${(e as Error).message}`, undefined, { cause: e });
    }
  });
  const v4 = sets.filter((s) => s[0]!.rangeStart.family === 4).length;
  if ((v4 > 1 || sets.length - v4 > 1) && !versionAtLeast(conf.cniVersion, '0.3.0')) {
    throw new CniError(CniCode.InvalidConfig, `CNI version ${conf.cniVersion} does not support more than 1 address per family`);
  }
  for (let i = 0; i < sets.length - 1; i++) {
    for (let j = i + 1; j < sets.length; j++) {
      if (rangeSetsOverlap(sets[i]!, sets[j]!)) {
        throw new CniError(CniCode.InvalidConfig, `range set ${i} overlaps with ${j}`);
      }
    }
  }
  return sets;
}

/**
 * `"subnet": "usePodCidr"` / `"usePodCidrIPv6"`: the node's pod CIDR(s) as the node-CIDR
 * controller recorded them in podipam's datastore (`ipam.datastore` + `ipam.nodeName`), cached
 * in `<dataDir>/podcidr-<node>.json` so pods still start while the datastore is unreachable.
 * Returns the function that gives each such range its subnet text. A node not registered yet,
 * without a CIDR yet, or an unreachable datastore with no cache is CNI code 11 (try again later).
 */
async function expandPodCidr(conf: NetConf): Promise<(r: RawRange) => string> {
  const ds = goField(conf.ipam, 'datastore');
  const node = goField(conf.ipam, 'nodeName') ?? defaultNodeName();
  if (typeof ds !== 'string' || ds === '' || typeof node !== 'string' || node === '') {
    throw new CniError(CniCode.InvalidConfig, 'usePodCidr needs datastore and nodeName');
  }
  const dataDir = goField(conf.ipam, 'dataDir');
  const cacheDir = typeof dataDir === 'string' && dataDir !== '' ? dataDir : DEFAULT_DATA_DIR;
  const { resolvePodCidrs } = await import('../local/pod-cidr-source.js');
  const { StoreUrlError } = await import('../store/errors.js');
  let cidrs: Prefix[];
  try {
    cidrs = await resolvePodCidrs({ datastore: ds, nodeName: node, cacheDir });
  } catch (e) {
    // Not registered yet, no CIDR yet, datastore unreachable: transient (11); a bad URL: 7.
    if (e instanceof TypeError && !(e instanceof StoreUrlError)) throw configError('ipam.nodeName', e.message);
    throw cniErrorOf(e);
  }
  return (r) => {
    const p = r.subnet === USE_POD_CIDR ? cidrs[0] : cidrs.find((c) => c.family === 6);
    if (!p) {
      throw new CniError(
        CniCode.TryAgainLater,
        `${r.path}.subnet: ${r.subnet}: node "${node}" has no IPv6 pod CIDR in datastore ${ds} (pod CIDRs: ${cidrs.map(formatPrefix).join(', ')})`,
      );
    }
    return formatPrefix(p);
  };
}

function collect(conf: NetConf): RawRange[][] {
  const out: RawRange[][] = [];
  const rc = conf.raw && optObject(conf.raw, 'runtimeConfig', '');
  const runtime = rc ? optArray(rc, 'ipRanges', 'runtimeConfig') : undefined;
  const add = (sets: readonly unknown[] | undefined, path: string) => {
    sets?.forEach((set, i) => {
      if (!Array.isArray(set)) throw configError(`${path}[${i}]`, `must be an array of ranges, got ${JSON.stringify(set)}`);
      out.push(set.map((r, j) => rawRange(r, `${path}[${i}][${j}]`)));
    });
  };
  add(runtime, 'runtimeConfig.ipRanges');
  // The legacy single range counts only when it has a subnet (host-local ignores a lone rangeStart).
  const legacySubnet = goField(conf.ipam, 'subnet');
  if (legacySubnet !== undefined) out.push([rawRange(conf.ipam, 'ipam')]);
  add(optArray(conf.ipam, 'ranges', 'ipam'), 'ipam.ranges');
  return out;
}

function rawRange(v: unknown, path: string): RawRange {
  const obj = asObject(v, path);
  const subnet = goField(obj, 'subnet');
  if (subnet === undefined) throw configError(`${path}.subnet`, 'missing');
  if (typeof subnet !== 'string') throw configError(`${path}.subnet`, `must be a CIDR string, got ${JSON.stringify(subnet)}`);
  return { path, subnet, obj };
}

function canonicalizeSet(set: readonly RawRange[]): AllocRangeSet {
  if (set.length === 0) throw new Error('empty range set');
  const out: AllocRange[] = [];
  for (const r of set) {
    const c = canonicalizeRange(r);
    if (out.length > 0 && c.rangeStart.family !== out[0]!.rangeStart.family) throw new Error('mixed address families');
    out.push(c);
  }
  for (let i = 0; i < out.length - 1; i++) {
    for (let j = i + 1; j < out.length; j++) {
      if (allocRangesOverlap(out[i]!, out[j]!)) throw new Error(`subnets ${span(out[i]!)} and ${span(out[j]!)} overlap`);
    }
  }
  return out;
}

function span(r: AllocRange): string {
  return `${formatAddr(r.rangeStart)}-${formatAddr(r.rangeEnd)}`;
}

/** host-local's `Range.Canonicalize`, same checks in the same order, same texts. */
function canonicalizeRange(r: RawRange): AllocRange {
  const { addr, len } = cidrValue(r.subnet, `${r.path}.subnet`);
  const bits = familyBits(addr.family);
  const written = formatAddrWithLen(addr, len);
  if (len > bits - 2) throw new Error(`Network ${written} too small to allocate from`);
  const subnet = prefixOf(addr, len);
  if (subnet.base !== addr.value) {
    throw new Error(
      `Network has host bits set. For a subnet mask of length ${len} the network address is ${formatAddr({ family: addr.family, value: subnet.base })}`,
    );
  }
  const net = formatAddrWithLen({ family: addr.family, value: subnet.base }, len);
  const first: Addr = { family: addr.family, value: subnet.base + 1n };
  const gateway = optAddr(r.obj, 'gateway', r.path) ?? first;
  if (gateway.family !== addr.family) {
    throw configError(`${r.path}.gateway`, `${formatAddr(gateway)} is not an IPv${addr.family} address like subnet ${net}`);
  }
  const start = optAddr(r.obj, 'rangeStart', r.path);
  const end = optAddr(r.obj, 'rangeEnd', r.path);
  // host-local checks each bound against the subnet and against the other bound if given.
  const inside = (a: Addr) => prefixContains(subnet, a) && (!start || a.value >= start.value) && (!end || a.value <= end.value);
  if (start && !inside(start)) throw new Error(`RangeStart ${formatAddr(start)} not in network ${net}`);
  const rangeStart = start ?? first;
  if (end && !(prefixContains(subnet, end) && end.value >= rangeStart.value)) {
    throw new Error(`RangeEnd ${formatAddr(end)} not in network ${net}`);
  }
  const last = prefixLast(subnet);
  // IPv4's default end skips the broadcast address; IPv6 has none, so its end is all-ones.
  const rangeEnd = end ?? (addr.family === 4 ? { family: 4, value: last.value - 1n } : last);
  if (rangeStart.value > rangeEnd.value) {
    // host-local accepts this (a rangeStart at the broadcast address) and then walks out of the subnet.
    throw new Error(`RangeStart ${formatAddr(rangeStart)} is after RangeEnd ${formatAddr(rangeEnd)}`);
  }
  return { subnet, rangeStart, rangeEnd, gateway };
}
