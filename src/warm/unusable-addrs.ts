/**
 * Which addresses the warm pool must stop handing out and give back: those a pod of this node
 * could not be given by the allocator now — reserved, or in the CIDR of no pool that is usable
 * (not draining, disabled or being deleted) and selects this node (its labels). That covers a
 * pool deleted outright and the space an unfinished shrink still holds outside the new CIDR.
 * Undefined when none of `held` (the addresses the node holds) matches, so the ADD path skips
 * the idle scan entirely in the common case; the caller computes it again whenever the view
 * changes (warm-trust.ts). An address refilled later never matches (the allocator never gives
 * such an address), except one of a refill that landed before the change with its answer lost:
 * the refiller computes it again once such a refill is settled (WarmRefiller).
 */
import { type Addr, type IpRangeSet, prefixContains } from '../ip/index.js';
import { type Pool, poolUsable } from '../cluster/records/index.js';
import { selectorMatches } from '../model/node-selector.js';

export interface UnusableView {
  readonly pools: readonly Pool[];
  readonly reserved?: IpRangeSet;
  /** The node's labels; undefined: node selectors are not checked. */
  readonly labels?: Readonly<Record<string, string>>;
}

export function unusableAddrs(v: UnusableView, held?: Iterable<Addr>): ((a: Addr) => boolean) | undefined {
  const serving = v.pools.filter((p) => poolUsable(p) && (v.labels === undefined || selectorMatches(p.nodeSelector, v.labels))).map((p) => p.cidr);
  const reserved = v.reserved !== undefined && v.reserved.ranges.length > 0 ? v.reserved : undefined;
  const pred = (a: Addr): boolean => (reserved?.contains(a) ?? false) || !serving.some((c) => prefixContains(c, a));
  if (held === undefined) return v.pools.every((p) => poolUsable(p)) && reserved === undefined ? undefined : pred;
  for (const a of held) if (pred(a)) return pred;
  return undefined;
}
