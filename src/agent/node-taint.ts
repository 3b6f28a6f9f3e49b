/**
 * Whether the agent's Node should carry podipam's "out of addresses" taint, pure: from the
 * Node's current taints, the node's headroom per family and the clearing threshold.
 *
 * The taint is `podipam.io/ip-exhausted=<value>:NoSchedule`, ONE taint whose value names the
 * exhausted families — "ipv4", "ipv6" or "ipv4-ipv6" — because the API server allows one taint
 * per key and effect (a second `podipam.io/ip-exhausted:NoSchedule` for the other family
 * would be refused) and a taint value cannot hold a comma. A pod tolerates it whatever the
 * families with `{key: podipam.io/ip-exhausted, operator: Exists, effect: NoSchedule}`.
 *
 * Hysteresis: a family becomes exhausted when its headroom reaches 0 and stops being so only
 * once its headroom is at least `clearAt` (≥ 1); in between it stays as it was — so the taint
 * never flaps between resyncs around 0. The state is the taint itself (read from the Node each
 * time, so a restarted agent carries on and a taint removed by hand while still exhausted comes
 * back). A family with no candidate pool (absent from the headroom) is not exhausted.
 * Only podipam's taint (that key with effect NoSchedule) is ever changed; every other taint is
 * kept as it is, in its place.
 */

/** An address family (as src/ip's). */
export type Family = 4 | 6;

export const EXHAUSTED_TAINT_KEY = 'podipam.io/ip-exhausted';
export const EXHAUSTED_TAINT_EFFECT = 'NoSchedule';

/** A Node's spec.taints entry (the fields the API server keeps). */
export interface Taint {
  readonly key: string;
  readonly value?: string;
  readonly effect: string;
  readonly timeAdded?: string;
}

const isOurs = (t: Taint): boolean => t.key === EXHAUSTED_TAINT_KEY && t.effect === EXHAUSTED_TAINT_EFFECT;

/** The families podipam's taint among `taints` names exhausted (none without the taint). */
export function exhaustedInTaints(taints: readonly Taint[]): Set<Family> {
  const ours = taints.find(isOurs);
  const out = new Set<Family>();
  for (const part of (ours?.value ?? '').split('-')) {
    if (part === 'ipv4') out.add(4);
    if (part === 'ipv6') out.add(6);
  }
  return out;
}

/** The taint value for a set of exhausted families ("ipv4", "ipv6", "ipv4-ipv6"). */
export function exhaustedValue(families: ReadonlySet<Family>): string {
  return ([4, 6] as const)
    .filter((f) => families.has(f))
    .map((f) => `ipv${f}`)
    .join('-');
}

/** The exhausted families after a resync: 0 sets, ≥ clearAt clears, in between keeps `before`. */
export function nextExhausted(
  before: ReadonlySet<Family>,
  headroom: readonly { readonly family: Family; readonly headroom: number }[],
  clearAt: number,
): Set<Family> {
  const out = new Set<Family>();
  for (const h of headroom) {
    if (h.headroom <= 0 || (h.headroom < clearAt && before.has(h.family))) out.add(h.family);
  }
  return out;
}

/**
 * The Node's taints as they should be for `exhausted`, or undefined when they already are:
 * podipam's taint set (in its place, or appended) with the value naming the families, or
 * removed; every other taint unchanged.
 */
export function desiredTaints(current: readonly Taint[], exhausted: ReadonlySet<Family>, now: Date): Taint[] | undefined {
  const value = exhaustedValue(exhausted);
  const ours = current.filter(isOurs);
  if (value === '' ? ours.length === 0 : ours.length === 1 && ours[0]!.value === value) return undefined;
  const taint: Taint = { key: EXHAUSTED_TAINT_KEY, value, effect: EXHAUSTED_TAINT_EFFECT, timeAdded: now.toISOString().replace(/\.\d{3}Z$/, 'Z') };
  const out: Taint[] = [];
  let placed = false;
  for (const t of current) {
    if (!isOurs(t)) out.push(t);
    else if (!placed && value !== '') {
      out.push(taint);
      placed = true;
    }
  }
  if (!placed && value !== '') out.push(taint);
  return out;
}

/** One resync's decision: the exhausted families now and the taints to write (undefined: none to write). */
export function decideTaints(
  current: readonly Taint[],
  headroom: readonly { readonly family: Family; readonly headroom: number }[],
  clearAt: number,
  now: Date,
): { exhausted: Set<Family>; taints: Taint[] | undefined } {
  const exhausted = nextExhausted(exhaustedInTaints(current), headroom, clearAt);
  return { exhausted, taints: desiredTaints(current, exhausted, now) };
}
