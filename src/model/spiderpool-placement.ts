/**
 * Spiderpool's placement annotations as podipam reads them, where Spiderpool reads them:
 *
 * - on a pod, `ipam.spidernet.io/ippools`: a JSON list of `{"interface","ipv4":[…],"ipv6":[…]}`,
 *   one per interface (`interface` required, no interface twice); the entry of the CNI call's
 *   interface (CNI_IFNAME) applies, and a list without it is refused, as Spiderpool does. It
 *   wins over
 * - `ipam.spidernet.io/ippool`: one such object for the call's interface (`interface` may be
 *   left out; given, it must be the call's);
 * - on a namespace, `ipam.spidernet.io/default-ipv4-ippool` / `default-ipv6-ippool`: JSON
 *   lists of pool names, for pods with no pool annotation of their own.
 *
 * Each family's address is drawn from its list's pools in order, the next when one is full; a
 * family with no list (or an empty one) gets no address (Spiderpool: "ipv4 only in a dual-stack
 * cluster"). A list entry is a pool name or a pattern with `*`, `?` and `[…]`
 * (src/model/pool-pattern.ts), which stands for every pool it matches, in name order. Unlike
 * Spiderpool, which passes over a named pool that does not select the node, a named pool
 * must exist, be enabled and select the node (code 7, as for every annotation); a pattern
 * stands only for the matching pools that can serve the node, and must match one.
 * `cleangateway: true` (no gateway route) is refused: podipam's routes come from the network
 * configuration, never from a pool. An object key Spiderpool does not define (such as the old
 * `ipv4pools`) is refused, not ignored. The whole annotation names at most MAX_PLACEMENT_NAMES
 * pools and objects; a malformed value is a PlacementError naming the annotation (code 7).
 */
import { DNS_SUBDOMAIN, DNS_SUBDOMAIN_HINT } from './node-name.js';
import { type AnnotationSource, PlacementError, type SourcedPools } from './placement-source.js';
import { checkCount, jsonValue, stringList } from './placement-values.js';
import { isPoolPattern, poolPatternProblem } from './pool-pattern.js';
import { quoteText } from '../util/quote-text.js';

export const SPIDERPOOL_ANNOTATION = {
  ippool: 'ipam.spidernet.io/ippool',
  ippools: 'ipam.spidernet.io/ippools',
  defaultIpv4: 'ipam.spidernet.io/default-ipv4-ippool',
  defaultIpv6: 'ipam.spidernet.io/default-ipv6-ippool',
} as const;

/** The pod-level keys and the namespace-level keys. */
export const SPIDERPOOL_POD_KEYS: readonly string[] = [SPIDERPOOL_ANNOTATION.ippools, SPIDERPOOL_ANNOTATION.ippool];
export const SPIDERPOOL_NAMESPACE_KEYS: readonly string[] = [SPIDERPOOL_ANNOTATION.defaultIpv4, SPIDERPOOL_ANNOTATION.defaultIpv6];

const OBJECT_KEYS = new Set(['interface', 'ipv4', 'ipv6', 'cleangateway']);
const OBJECT_SHAPE = '{"interface":"eth0","ipv4":["pool"],"ipv6":["pool"]}';

/** The pools a pod's Spiderpool annotations name for interface `ifname` (undefined: it has none). */
export function spiderpoolPodPools(ann: Readonly<Record<string, string>>, on: string, pod: string, ifname: string | undefined): SourcedPools | undefined {
  const iface = ifname ?? '';
  if (ann[SPIDERPOOL_ANNOTATION.ippools] !== undefined) {
    const s: AnnotationSource = { annotation: SPIDERPOOL_ANNOTATION.ippools, value: ann[SPIDERPOOL_ANNOTATION.ippools]!, on };
    const v = jsonValue(s, pod, `a JSON list of objects such as [${OBJECT_SHAPE}]`);
    if (!Array.isArray(v)) throw new PlacementError(s, pod, `want a JSON list of objects such as [${OBJECT_SHAPE}]`);
    if (v.length === 0) throw new PlacementError(s, pod, 'names no interface');
    checkCount(s, pod, v.length);
    const entries = v.map((e, i) => entryOf(s, pod, e, `entry ${i + 1}: `));
    checkCount(
      s,
      pod,
      entries.reduce((n, e) => n + (e.ipv4?.length ?? 0) + (e.ipv6?.length ?? 0), 0),
    );
    const seen = new Set<string>();
    for (const [i, e] of entries.entries()) {
      if (e.iface === undefined || e.iface === '') throw new PlacementError(s, pod, `entry ${i + 1}: names no "interface"`);
      if (seen.has(e.iface)) throw new PlacementError(s, pod, `entry ${i + 1}: interface ${quoteText(e.iface)} is named twice`);
      seen.add(e.iface);
    }
    const mine = entries.find((e) => e.iface === iface);
    if (!mine) throw new PlacementError(s, pod, `names no entry for interface ${quoteText(iface)}, the one this call is for`);
    return pools(s, mine);
  }
  if (ann[SPIDERPOOL_ANNOTATION.ippool] !== undefined) {
    const s: AnnotationSource = { annotation: SPIDERPOOL_ANNOTATION.ippool, value: ann[SPIDERPOOL_ANNOTATION.ippool]!, on };
    const e = entryOf(s, pod, jsonValue(s, pod, `a JSON object such as ${OBJECT_SHAPE}`), '');
    checkCount(s, pod, (e.ipv4?.length ?? 0) + (e.ipv6?.length ?? 0));
    if (e.iface !== undefined && e.iface !== iface)
      throw new PlacementError(s, pod, `is for interface ${quoteText(e.iface)}, not ${quoteText(iface)}, the one this call is for`);
    return pools(s, e);
  }
  return undefined;
}

/** The pools a namespace's Spiderpool defaults name (undefined: it has none). */
export function spiderpoolNamespacePools(ann: Readonly<Record<string, string>>, on: string, pod: string): SourcedPools | undefined {
  const parts = SPIDERPOOL_NAMESPACE_KEYS.filter((k) => ann[k] !== undefined).map((k): AnnotationSource => ({ annotation: k, value: ann[k]!, on }));
  if (parts.length === 0) return undefined;
  const lists = parts.map((s) => {
    const names = stringList(s, pod, jsonValue(s, pod, 'a JSON list of pool names such as ["a","b"]'), 'want a JSON list of pool names such as ["a","b"]');
    return poolNames(s, pod, names, '');
  });
  if (lists.every((l) => l.length === 0)) throw new PlacementError(parts[0]!, pod, 'names no pool');
  const byFamily: { 4?: string[]; 6?: string[] } = {};
  parts.forEach((s, i) => {
    if (lists[i]!.length > 0) byFamily[s.annotation === SPIDERPOOL_ANNOTATION.defaultIpv4 ? 4 : 6] = lists[i]!;
  });
  return {
    annotation: parts.map((p) => p.annotation).join(', '),
    value: parts.map((p) => p.value).join(', '),
    on,
    parsed: [...new Set(lists.flat())],
    byFamily,
  };
}

interface Entry {
  readonly iface: string | undefined;
  readonly ipv4: string[] | undefined;
  readonly ipv6: string[] | undefined;
}

function entryOf(s: AnnotationSource, pod: string, v: unknown, at: string): Entry {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new PlacementError(s, pod, `${at}want a JSON object such as ${OBJECT_SHAPE}`);
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    if (!OBJECT_KEYS.has(k)) throw new PlacementError(s, pod, `${at}unknown field ${quoteText(k)} (want "interface", "ipv4", "ipv6", "cleangateway")`);
  }
  if (o.interface !== undefined && typeof o.interface !== 'string') throw new PlacementError(s, pod, `${at}"interface" must be a string`);
  if (o.cleangateway !== undefined && typeof o.cleangateway !== 'boolean') throw new PlacementError(s, pod, `${at}"cleangateway" must be true or false`);
  if (o.cleangateway === true)
    throw new PlacementError(s, pod, `${at}"cleangateway": true is not supported: podipam's routes come from the network configuration, not from a pool`);
  const list = (k: 'ipv4' | 'ipv6'): string[] | undefined =>
    o[k] === undefined ? undefined : poolNames(s, pod, stringList(s, pod, o[k], `${at}"${k}" must be a JSON list of pool names`), `${at}"${k}": `);
  const e = { iface: o.interface, ipv4: list('ipv4'), ipv6: list('ipv6') };
  if ((e.ipv4?.length ?? 0) + (e.ipv6?.length ?? 0) === 0) throw new PlacementError(s, pod, `${at}names no pool ("ipv4" and "ipv6" are both empty or missing)`);
  return e;
}

/** Pool names or patterns, none repeated (an empty list stays empty: its family gets no address). */
function poolNames(s: AnnotationSource, pod: string, items: readonly string[], at: string): string[] {
  const seen = new Set<string>();
  for (const item of items) {
    if (isPoolPattern(item)) {
      const problem = poolPatternProblem(item);
      if (problem !== undefined) throw new PlacementError(s, pod, `${at}${quoteText(item)} is not a pool-name pattern: ${problem}`);
    } else if (!DNS_SUBDOMAIN.test(item)) {
      throw new PlacementError(s, pod, `${at}${quoteText(item)} is not a pool name: must be ${DNS_SUBDOMAIN_HINT}, or a pattern with *, ? and [...]`);
    }
    if (seen.has(item)) throw new PlacementError(s, pod, `${at}names ${quoteText(item)} twice`);
    seen.add(item);
  }
  return [...items];
}

function pools(s: AnnotationSource, e: Entry): SourcedPools {
  const byFamily: { 4?: string[]; 6?: string[] } = {};
  if (e.ipv4 && e.ipv4.length > 0) byFamily[4] = e.ipv4;
  if (e.ipv6 && e.ipv6.length > 0) byFamily[6] = e.ipv6;
  return { ...s, parsed: [...new Set([...(e.ipv4 ?? []), ...(e.ipv6 ?? [])])], byFamily };
}
