/**
 * Which pods the warm pool treats as sticky (their released address waits for them, keyed by
 * namespace/name, for `stickyFor`). With a kubeconfig: pods owned by a StatefulSet, narrowed by
 * this policy's filters when given. Without one: the pods this policy names — every filter
 * given must match (`namespaces`: the pod's namespace is listed; `namePattern`: a JavaScript
 * regular expression the whole pod name matches). No filter and no kubeconfig: no pod is sticky.
 */

export interface StickyPolicy {
  readonly namespaces?: readonly string[];
  /** Source of a regular expression matched against the whole pod name (anchored). */
  readonly namePattern?: string;
}

/** A namespace name: an RFC 1123 label. */
const NAMESPACE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** The policy's compiled pattern; Error naming `field` and the value when a namespace or the pattern is invalid. */
export function checkStickyPolicy(p: StickyPolicy, field: (key: keyof StickyPolicy) => string): RegExp | undefined {
  for (const ns of p.namespaces ?? []) {
    if (!NAMESPACE.test(ns))
      throw new Error(`invalid ${field('namespaces')} ${JSON.stringify(ns)}: not a namespace name (lower-case letters, digits and '-', at most 63)`);
  }
  if (p.namePattern === undefined) return undefined;
  try {
    return new RegExp(`^(?:${p.namePattern})$`, 'u');
  } catch (e) {
    throw new Error(`invalid ${field('namePattern')} ${JSON.stringify(p.namePattern)}: ${(e as Error).message}`, { cause: e });
  }
}

/** True when the policy gives any filter. */
export function hasStickyFilter(p: StickyPolicy): boolean {
  return p.namespaces !== undefined || p.namePattern !== undefined;
}

/** Every filter given matches namespace/name (true when none is given). */
export function matchesStickyFilters(p: StickyPolicy, pattern: RegExp | undefined, namespace: string, name: string): boolean {
  if (p.namespaces !== undefined && !p.namespaces.includes(namespace)) return false;
  if (pattern !== undefined && !pattern.test(name)) return false;
  return true;
}
