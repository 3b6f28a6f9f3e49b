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
 *   CIDRs) and `cni.projectcalico.org/ipAddrs` (a JSON list of addresses), with Calico's meaning.
 *
 * Precedence: the placement annotations (all but `sticky`) are taken from the pod when it has
 * any of them, else from its namespace — never a mix of the two levels. On one level, podipam's
 * own placement annotations win over Calico's (Calico's are then ignored). `pools`, `ip` and
 * `ip-set` exclude each other. `sticky` is the pod's, else the namespace's.
 *
 * A malformed value throws PlacementError (an invalid-config failure: CNI code 7) naming the
 * annotation, where it was found and the value (quoted with its control characters escaped, cut
 * after 200 characters). Whether the named pools and sets exist, and select the node, is the
 * back end's to check (with the same error).
 *
 * Bounded and linear: a placement annotation's value is at most MAX_PLACEMENT_BYTES bytes and a
 * list names at most MAX_PLACEMENT_NAMES entries — a longer one is refused (code 7) before it
 * is split or decoded; parsing is linear in the value (repeats found with a set), so one pod's
 * annotation cannot stall the other pods' ADDs that the node agent serves on the same thread.
 */
import { type Addr, formatAddr, formatPrefix, parsePrefix, tryParseAddr } from '../ip/index.js';
import type { ClassifiedError } from './failure.js';
import { DNS_SUBDOMAIN, DNS_SUBDOMAIN_HINT } from './node-name.js';
import { type PodRef, formatPodRef } from './pod-ref.js';
import { escapeControls, quoteText } from '../util/quote-text.js';

/** Most bytes (UTF-8) of one placement annotation's value. */
export const MAX_PLACEMENT_BYTES = 16384;

/** Most entries (pool names, CIDRs or addresses) one list-valued placement annotation names. */
export const MAX_PLACEMENT_NAMES = 64;

export const ANNOTATION = {
  pools: 'podipam.io/pools',
  ip: 'podipam.io/ip',
  ipSet: 'podipam.io/ip-set',
  sticky: 'podipam.io/sticky',
  calicoIpv4Pools: 'cni.projectcalico.org/ipv4pools',
  calicoIpv6Pools: 'cni.projectcalico.org/ipv6pools',
  calicoIpAddrs: 'cni.projectcalico.org/ipAddrs',
} as const;

/** The placement annotations (every one but sticky). */
const PLACEMENT_KEYS: readonly string[] = [ANNOTATION.pools, ANNOTATION.ip, ANNOTATION.ipSet, ANNOTATION.calicoIpv4Pools, ANNOTATION.calicoIpv6Pools, ANNOTATION.calicoIpAddrs];

/** Where one part of a placement came from: the annotation(s), their text, and the object carrying them. */
export interface AnnotationSource {
  /** The annotation's key (two keys joined by ", " for Calico's ipv4pools + ipv6pools). */
  readonly annotation: string;
  /** Its value as written (joined likewise). */
  readonly value: string;
  /** `pod NS/NAME` or `namespace NS`. */
  readonly on: string;
}

export interface Sourced<T> extends AnnotationSource {
  readonly parsed: T;
}

export interface Placement {
  /** Pool names, or canonical CIDRs (from Calico's lists), in order of preference. */
  readonly pools?: Sourced<readonly string[]>;
  /** At most one address per family. */
  readonly ips?: Sourced<readonly Addr[]>;
  readonly ipSet?: Sourced<string>;
  readonly sticky?: Sourced<boolean>;
}

/** A placement annotation that cannot be honoured: its value is malformed, or names a pool or set that cannot serve the pod. */
export class PlacementError extends Error implements ClassifiedError {
  override readonly name = 'PlacementError';
  readonly failure = 'invalid-config';

  constructor(
    readonly source: AnnotationSource,
    /** The pod the call is for ("" when the runtime named none). */
    readonly pod: string,
    readonly problem: string,
  ) {
    super(`annotation ${source.annotation}=${quoteText(source.value)} on ${escapeControls(source.on)}${source.on.startsWith('pod ') || pod === '' ? '' : ` (pod ${escapeControls(pod)})`}: ${problem}`);
  }
}

/** True when `placement` asks for anything beyond the defaults. */
export function hasPlacement(p: Placement): boolean {
  return p.pools !== undefined || p.ips !== undefined || p.ipSet !== undefined;
}

/**
 * The placement of `pod` from its annotations and its namespace's (either may be undefined:
 * not known). Throws PlacementError for a malformed value or a forbidden combination.
 */
export function parsePlacement(
  pod: PodRef | undefined,
  podAnnotations: Readonly<Record<string, string>> | undefined,
  namespaceAnnotations: Readonly<Record<string, string>> | undefined,
): Placement {
  const podName = pod ? formatPodRef(pod) : '';
  const podOn = pod ? `pod ${podName}` : 'the pod';
  const nsOn = `namespace ${pod?.namespace ?? ''}`;
  const has = (a: Readonly<Record<string, string>> | undefined): a is Readonly<Record<string, string>> => a !== undefined && PLACEMENT_KEYS.some((k) => a[k] !== undefined);
  const level = has(podAnnotations) ? { ann: podAnnotations, on: podOn } : has(namespaceAnnotations) ? { ann: namespaceAnnotations, on: nsOn } : undefined;
  const out: { -readonly [K in keyof Placement]: Placement[K] } = {};
  if (level) Object.assign(out, placementOf(level.ann, level.on, podName));
  const stickyLevel = podAnnotations?.[ANNOTATION.sticky] !== undefined ? { ann: podAnnotations, on: podOn } : namespaceAnnotations?.[ANNOTATION.sticky] !== undefined ? { ann: namespaceAnnotations, on: nsOn } : undefined;
  if (stickyLevel) {
    const value = stickyLevel.ann[ANNOTATION.sticky]!;
    const src = { annotation: ANNOTATION.sticky, value, on: stickyLevel.on };
    if (value !== 'true' && value !== 'false') throw new PlacementError(src, podName, 'want "true" or "false"');
    out.sticky = { ...src, parsed: value === 'true' };
  }
  return out;
}

function placementOf(ann: Readonly<Record<string, string>>, on: string, pod: string): Placement {
  const src = (annotation: string): AnnotationSource => ({ annotation, value: ann[annotation]!, on });
  for (const k of PLACEMENT_KEYS) if (ann[k] !== undefined) checkBytes(src(k), pod);
  const own = [ANNOTATION.pools, ANNOTATION.ip, ANNOTATION.ipSet].filter((k) => ann[k] !== undefined);
  if (own.length > 1) throw new PlacementError(src(own[1]!), pod, `cannot be combined with ${own[0]} (give one of ${ANNOTATION.pools}, ${ANNOTATION.ip}, ${ANNOTATION.ipSet})`);
  if (own.length === 1) {
    const key = own[0]!;
    const s = src(key);
    if (key === ANNOTATION.pools) return { pools: { ...s, parsed: poolList(s, pod, commaList(s, pod), false) } };
    if (key === ANNOTATION.ip) return { ips: { ...s, parsed: addrList(s, pod, commaList(s, pod)) } };
    if (!DNS_SUBDOMAIN.test(s.value)) throw new PlacementError(s, pod, `not an ip-set name: must be ${DNS_SUBDOMAIN_HINT}`);
    return { ipSet: { ...s, parsed: s.value } };
  }
  const v4 = ann[ANNOTATION.calicoIpv4Pools];
  const v6 = ann[ANNOTATION.calicoIpv6Pools];
  const addrs = ann[ANNOTATION.calicoIpAddrs];
  if (addrs !== undefined) {
    const s = src(ANNOTATION.calicoIpAddrs);
    if (v4 !== undefined || v6 !== undefined) throw new PlacementError(s, pod, `cannot be combined with ${v4 !== undefined ? ANNOTATION.calicoIpv4Pools : ANNOTATION.calicoIpv6Pools}`);
    return { ips: { ...s, parsed: addrList(s, pod, jsonStrings(s, pod)) } };
  }
  if (v4 === undefined && v6 === undefined) return {};
  const parts = [v4 !== undefined ? src(ANNOTATION.calicoIpv4Pools) : undefined, v6 !== undefined ? src(ANNOTATION.calicoIpv6Pools) : undefined].filter((x) => x !== undefined);
  const names = parts.flatMap((s) => poolList(s, pod, jsonStrings(s, pod), true));
  return { pools: { annotation: parts.map((p) => p.annotation).join(', '), value: parts.map((p) => p.value).join(', '), on, parsed: names } };
}

/** Refuses a value longer than MAX_PLACEMENT_BYTES (the message quotes only its start). */
function checkBytes(s: AnnotationSource, pod: string): void {
  // Each UTF-16 unit is 1–3 bytes: only a value in between needs counting.
  if (s.value.length * 3 <= MAX_PLACEMENT_BYTES) return;
  const bytes = Buffer.byteLength(s.value, 'utf8');
  if (bytes > MAX_PLACEMENT_BYTES) throw new PlacementError(s, pod, `value of ${bytes} bytes is longer than the ${MAX_PLACEMENT_BYTES} bytes allowed`);
}

/** Refuses a list of more than MAX_PLACEMENT_NAMES entries. */
function checkCount(s: AnnotationSource, pod: string, n: number): void {
  if (n > MAX_PLACEMENT_NAMES) throw new PlacementError(s, pod, `names ${n} entries; at most ${MAX_PLACEMENT_NAMES} are allowed`);
}

/** The comma-separated entries of `s.value`, trimmed; counted before splitting. */
function commaList(s: AnnotationSource, pod: string): string[] {
  let n = 1;
  for (let i = s.value.indexOf(','); i >= 0; i = s.value.indexOf(',', i + 1)) n++;
  checkCount(s, pod, n);
  return s.value.split(',').map((t) => t.trim());
}

/** A JSON list of strings (Calico's annotation values). */
function jsonStrings(s: AnnotationSource, pod: string): string[] {
  let v: unknown;
  try {
    v = JSON.parse(s.value);
  } catch {
    throw new PlacementError(s, pod, 'not JSON: want a JSON list of strings such as ["a","b"]');
  }
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw new PlacementError(s, pod, 'want a JSON list of strings such as ["a","b"]');
  checkCount(s, pod, v.length);
  return v;
}

/** Pool names (and, when `cidrs`, CIDRs made canonical); at least one, no empty or repeated entry. */
function poolList(s: AnnotationSource, pod: string, items: readonly string[], cidrs: boolean): string[] {
  if (items.length === 0 || (items.length === 1 && items[0] === '')) throw new PlacementError(s, pod, 'names no pool');
  const out: string[] = [];
  const seen = new Set<string>();
  for (const item of items) {
    let name = item;
    if (cidrs && item.includes('/')) {
      try {
        name = formatPrefix(parsePrefix(item));
      } catch (e) {
        throw new PlacementError(s, pod, `${quoteText(item)} is not a CIDR: ${(e as Error).message}`);
      }
    } else if (!DNS_SUBDOMAIN.test(item)) {
      throw new PlacementError(s, pod, `${quoteText(item)} is not a pool name${cidrs ? ' or CIDR' : ''}: must be ${DNS_SUBDOMAIN_HINT}`);
    }
    if (seen.has(name)) throw new PlacementError(s, pod, `names ${quoteText(item)} twice`);
    seen.add(name);
    out.push(name);
  }
  return out;
}

/** One or two addresses, at most one per family. */
function addrList(s: AnnotationSource, pod: string, items: readonly string[]): Addr[] {
  if (items.length === 0 || (items.length === 1 && items[0] === '')) throw new PlacementError(s, pod, 'names no address');
  const out: Addr[] = [];
  for (const item of items) {
    const a = tryParseAddr(item);
    if (!a) throw new PlacementError(s, pod, `${quoteText(item)} is not an IP address`);
    const same = out.find((o) => o.family === a.family);
    if (same) throw new PlacementError(s, pod, `at most one address per family: ${formatAddr(same)} and ${formatAddr(a)} are both IPv${a.family}`);
    out.push(a);
  }
  return out;
}
