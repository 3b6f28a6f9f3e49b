/**
 * Cilium multi-pool's placement annotations, on a pod or its namespace, as podipam reads them:
 *
 * - `ipam.cilium.io/ip-pool`: one pool name for both families;
 * - `ipam.cilium.io/ipv4-pool`, `ipam.cilium.io/ipv6-pool`: one pool name for that family,
 *   winning over `ip-pool` for it (Cilium's `determinePoolByAnnotations`).
 *
 * The result names its pools per family: a family's address comes only from its pool; a family
 * none of the three names gets no address (Cilium would take it from the namespace's
 * annotation or the `default` pool). A podipam pool has one family, so `ip-pool` alone gives
 * the pod the family of the pool it names. Each value is one pool name (a DNS subdomain);
 * anything else — an empty value included, which Cilium treats as unset — is a PlacementError
 * naming the annotation (code 7). Whether the pool exists is the back end's to check.
 */
import { DNS_SUBDOMAIN, DNS_SUBDOMAIN_HINT } from './node-name.js';
import { type AnnotationSource, PlacementError, type SourcedPools } from './placement-source.js';
import { quoteText } from '../util/quote-text.js';

export const CILIUM_ANNOTATION = {
  ipPool: 'ipam.cilium.io/ip-pool',
  ipv4Pool: 'ipam.cilium.io/ipv4-pool',
  ipv6Pool: 'ipam.cilium.io/ipv6-pool',
} as const;

export const CILIUM_KEYS: readonly string[] = [CILIUM_ANNOTATION.ipPool, CILIUM_ANNOTATION.ipv4Pool, CILIUM_ANNOTATION.ipv6Pool];

/** The pools Cilium's annotations of one object name (undefined: it has none of them). Throws PlacementError for a malformed value. */
export function ciliumPools(ann: Readonly<Record<string, string>>, on: string, pod: string): SourcedPools | undefined {
  const present = CILIUM_KEYS.filter((k) => ann[k] !== undefined).map((k): AnnotationSource => ({ annotation: k, value: ann[k]!, on }));
  if (present.length === 0) return undefined;
  for (const s of present) {
    if (s.value === '') throw new PlacementError(s, pod, 'names no pool');
    if (!DNS_SUBDOMAIN.test(s.value))
      throw new PlacementError(s, pod, `${quoteText(s.value)} is not a pool name: must be ${DNS_SUBDOMAIN_HINT} (one pool per annotation)`);
  }
  const of = (k: string): AnnotationSource | undefined => present.find((s) => s.annotation === k);
  const both = of(CILIUM_ANNOTATION.ipPool);
  const v4 = of(CILIUM_ANNOTATION.ipv4Pool) ?? both;
  const v6 = of(CILIUM_ANNOTATION.ipv6Pool) ?? both;
  // ip-pool is read only for a family the family's own annotation leaves open.
  const used = present.filter((s) => s === v4 || s === v6);
  const byFamily: { 4?: string[]; 6?: string[] } = {};
  if (v4) byFamily[4] = [v4.value];
  if (v6) byFamily[6] = [v6.value];
  return {
    annotation: used.map((s) => s.annotation).join(', '),
    value: used.map((s) => s.value).join(', '),
    on,
    parsed: [...new Set([v4?.value, v6?.value].filter((v) => v !== undefined))],
    byFamily: byFamily,
  };
}
