/**
 * What a pod asks of IPAM through annotations — on the pod, else on its namespace — parsed once
 * at the edge into a typed `Placement`:
 *
 * - `podipam.io/pools`: comma-separated pool names to draw from, in order (each family from
 *   the listed pools of that family);
 * - `podipam.io/ip`: the address(es) the pod must get, comma-separated, at most one per family;
 * - `podipam.io/ip-set`: the name of a fixed address set the pod takes a free address of;
 * - `podipam.io/sticky`: `"true"` | `"false"`: keep the pod's address for its namespace/name
 *   across recreation (default: on for StatefulSet pods);
 * - Calico's `cni.projectcalico.org/ipv4pools` and `ipv6pools` (JSON lists of pool names or
 *   CIDRs) and `cni.projectcalico.org/ipAddrs` (a JSON list of addresses), with Calico's meaning;
 * - Cilium multi-pool's `ipam.cilium.io/ip-pool`, `ipv4-pool`, `ipv6-pool` (cilium-placement.ts);
 * - Spiderpool's `ipam.spidernet.io/ippools` and `ippool` on a pod, `default-ipv4-ippool` and
 *   `default-ipv6-ippool` on a namespace (spiderpool-placement.ts).
 *
 * Precedence: the placement annotations (all but `sticky`) are taken from the pod when it has
 * any of them, else from its namespace — never a mix of the two levels. On one level, one
 * family of annotations is read, the first present of: podipam's own, Calico's, Cilium's,
 * Spiderpool's (the others are then ignored). `pools`, `ip` and `ip-set` exclude each other, as
 * do Calico's `ipAddrs` and its pool lists; Cilium's and Spiderpool's combine as those
 * projects define. `sticky` is the pod's, else the namespace's.
 *
 * A malformed value throws PlacementError (an invalid-config failure: CNI code 7) naming the
 * annotation, where it was found and the value (quoted with its control characters escaped, cut
 * after 200 characters). Whether the named pools and sets exist, and select the node, is the
 * back end's to check (with the same error).
 *
 * Bounded and linear: a placement annotation's value is at most MAX_PLACEMENT_BYTES bytes and a
 * list names at most MAX_PLACEMENT_NAMES entries — a longer one is refused (code 7) before it
 * is split or decoded (placement-values.ts); parsing is linear in the value (repeats found with
 * a set), so one pod's annotation cannot stall the other pods' ADDs that the node agent serves
 * on the same thread.
 */
import type { Addr } from '../ip/index.js';
import { DNS_SUBDOMAIN, DNS_SUBDOMAIN_HINT } from './node-name.js';
import { type PodRef, formatPodRef } from './pod-ref.js';
import { type AnnotationSource, PlacementError, type Sourced, type SourcedPools } from './placement-source.js';
import { addrList, checkBytes, commaList, jsonStrings, poolList } from './placement-values.js';
import { CILIUM_ANNOTATION, CILIUM_KEYS, ciliumPools } from './cilium-placement.js';
import { SPIDERPOOL_ANNOTATION, SPIDERPOOL_NAMESPACE_KEYS, SPIDERPOOL_POD_KEYS, spiderpoolNamespacePools, spiderpoolPodPools } from './spiderpool-placement.js';

export { type AnnotationSource, PlacementError, type PoolsByFamily, type Sourced, type SourcedPools } from './placement-source.js';
export { MAX_PLACEMENT_BYTES, MAX_PLACEMENT_NAMES } from './placement-values.js';

export const ANNOTATION = {
  pools: 'podipam.io/pools',
  ip: 'podipam.io/ip',
  ipSet: 'podipam.io/ip-set',
  sticky: 'podipam.io/sticky',
  calicoIpv4Pools: 'cni.projectcalico.org/ipv4pools',
  calicoIpv6Pools: 'cni.projectcalico.org/ipv6pools',
  calicoIpAddrs: 'cni.projectcalico.org/ipAddrs',
  ciliumIpPool: CILIUM_ANNOTATION.ipPool,
  ciliumIpv4Pool: CILIUM_ANNOTATION.ipv4Pool,
  ciliumIpv6Pool: CILIUM_ANNOTATION.ipv6Pool,
  spiderpoolIppool: SPIDERPOOL_ANNOTATION.ippool,
  spiderpoolIppools: SPIDERPOOL_ANNOTATION.ippools,
  spiderpoolDefaultIpv4: SPIDERPOOL_ANNOTATION.defaultIpv4,
  spiderpoolDefaultIpv6: SPIDERPOOL_ANNOTATION.defaultIpv6,
} as const;

const OWN_KEYS: readonly string[] = [ANNOTATION.pools, ANNOTATION.ip, ANNOTATION.ipSet];
const CALICO_KEYS: readonly string[] = [ANNOTATION.calicoIpv4Pools, ANNOTATION.calicoIpv6Pools, ANNOTATION.calicoIpAddrs];

/** The placement annotations (every one but sticky) read on a pod, and on a namespace (Spiderpool's differ: each is read where Spiderpool reads it). */
const POD_KEYS: readonly string[] = [...OWN_KEYS, ...CALICO_KEYS, ...CILIUM_KEYS, ...SPIDERPOOL_POD_KEYS];
const NAMESPACE_KEYS: readonly string[] = [...OWN_KEYS, ...CALICO_KEYS, ...CILIUM_KEYS, ...SPIDERPOOL_NAMESPACE_KEYS];

export interface Placement {
  /** Pool names, canonical CIDRs (from Calico's lists) or patterns (from Spiderpool's), in order of preference; per family when the annotation names them so. */
  readonly pools?: SourcedPools;
  /** At most one address per family. */
  readonly ips?: Sourced<readonly Addr[]>;
  readonly ipSet?: Sourced<string>;
  readonly sticky?: Sourced<boolean>;
}

/** True when `placement` asks for anything beyond the defaults. */
export function hasPlacement(p: Placement): boolean {
  return p.pools !== undefined || p.ips !== undefined || p.ipSet !== undefined;
}

/**
 * The placement of `pod` from its annotations and its namespace's (either may be undefined:
 * not known), for the call's interface `ifname` (CNI_IFNAME: Spiderpool's `ippools` names
 * pools per interface). Throws PlacementError for a malformed value or a forbidden combination.
 */
export function parsePlacement(
  pod: PodRef | undefined,
  podAnnotations: Readonly<Record<string, string>> | undefined,
  namespaceAnnotations: Readonly<Record<string, string>> | undefined,
  ifname?: string,
): Placement {
  const podName = pod ? formatPodRef(pod) : '';
  const podOn = pod ? `pod ${podName}` : 'the pod';
  const nsOn = `namespace ${pod?.namespace ?? ''}`;
  const has = (a: Readonly<Record<string, string>> | undefined, keys: readonly string[]): a is Readonly<Record<string, string>> =>
    a !== undefined && keys.some((k) => a[k] !== undefined);
  const out: { -readonly [K in keyof Placement]: Placement[K] } = {};
  if (has(podAnnotations, POD_KEYS)) Object.assign(out, placementOf({ ann: podAnnotations, on: podOn, namespace: false, pod: podName, ifname }));
  else if (has(namespaceAnnotations, NAMESPACE_KEYS)) Object.assign(out, placementOf({ ann: namespaceAnnotations, on: nsOn, namespace: true, pod: podName }));
  const stickyLevel =
    podAnnotations?.[ANNOTATION.sticky] !== undefined
      ? { ann: podAnnotations, on: podOn }
      : namespaceAnnotations?.[ANNOTATION.sticky] !== undefined
        ? { ann: namespaceAnnotations, on: nsOn }
        : undefined;
  if (stickyLevel) {
    const value = stickyLevel.ann[ANNOTATION.sticky]!;
    const src = { annotation: ANNOTATION.sticky, value, on: stickyLevel.on };
    if (value !== 'true' && value !== 'false') throw new PlacementError(src, podName, 'want "true" or "false"');
    out.sticky = { ...src, parsed: value === 'true' };
  }
  return out;
}

interface Level {
  readonly ann: Readonly<Record<string, string>>;
  readonly on: string;
  /** The namespace's level (else the pod's): Spiderpool's keys differ. */
  readonly namespace: boolean;
  readonly pod: string;
  /** The call's interface; undefined on the namespace level, whose annotations name none. */
  readonly ifname?: string | undefined;
}

/** One level's placement: the first family of annotations present (podipam's, Calico's, Cilium's, Spiderpool's). */
function placementOf(l: Level): Placement {
  const { ann, on, pod } = l;
  const src = (annotation: string): AnnotationSource => ({ annotation, value: ann[annotation]!, on });
  for (const k of l.namespace ? NAMESPACE_KEYS : POD_KEYS) if (ann[k] !== undefined) checkBytes(src(k), pod);
  const own = OWN_KEYS.filter((k) => ann[k] !== undefined);
  if (own.length > 1)
    throw new PlacementError(src(own[1]!), pod, `cannot be combined with ${own[0]} (give one of ${ANNOTATION.pools}, ${ANNOTATION.ip}, ${ANNOTATION.ipSet})`);
  if (own.length === 1) {
    const key = own[0]!;
    const s = src(key);
    if (key === ANNOTATION.pools) return { pools: { ...s, parsed: poolList(s, pod, commaList(s, pod), false) } };
    if (key === ANNOTATION.ip) return { ips: { ...s, parsed: addrList(s, pod, commaList(s, pod)) } };
    if (!DNS_SUBDOMAIN.test(s.value)) throw new PlacementError(s, pod, `not an ip-set name: must be ${DNS_SUBDOMAIN_HINT}`);
    return { ipSet: { ...s, parsed: s.value } };
  }
  if (CALICO_KEYS.some((k) => ann[k] !== undefined)) return calicoPlacement(ann, on, pod);
  const cilium = ciliumPools(ann, on, pod);
  if (cilium) return { pools: cilium };
  const spider = l.namespace ? spiderpoolNamespacePools(ann, on, pod) : spiderpoolPodPools(ann, on, pod, l.ifname);
  return spider ? { pools: spider } : {};
}

function calicoPlacement(ann: Readonly<Record<string, string>>, on: string, pod: string): Placement {
  const src = (annotation: string): AnnotationSource => ({ annotation, value: ann[annotation]!, on });
  const v4 = ann[ANNOTATION.calicoIpv4Pools];
  const v6 = ann[ANNOTATION.calicoIpv6Pools];
  const addrs = ann[ANNOTATION.calicoIpAddrs];
  if (addrs !== undefined) {
    const s = src(ANNOTATION.calicoIpAddrs);
    if (v4 !== undefined || v6 !== undefined)
      throw new PlacementError(s, pod, `cannot be combined with ${v4 !== undefined ? ANNOTATION.calicoIpv4Pools : ANNOTATION.calicoIpv6Pools}`);
    return { ips: { ...s, parsed: addrList(s, pod, jsonStrings(s, pod)) } };
  }
  const parts = [v4 !== undefined ? src(ANNOTATION.calicoIpv4Pools) : undefined, v6 !== undefined ? src(ANNOTATION.calicoIpv6Pools) : undefined].filter(
    (x) => x !== undefined,
  );
  const names = parts.flatMap((s) => poolList(s, pod, jsonStrings(s, pod), true));
  return { pools: { annotation: parts.map((p) => p.annotation).join(', '), value: parts.map((p) => p.value).join(', '), on, parsed: names } };
}
