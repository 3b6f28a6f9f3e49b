/**
 * Which addresses the warm pool must stop handing out and give back: those in the space of a
 * pool that is not usable (draining, disabled or being deleted; see poolUsable). Undefined when
 * every pool is usable, so the ADD path skips the idle scan entirely in the common case.
 */
import { type Addr, prefixContains } from '../ip/index.js';
import { type Pool, poolSpace, poolUsable } from '../cluster/pool-record.js';

export function unusableAddrs(pools: readonly Pool[]): ((a: Addr) => boolean) | undefined {
  const spaces = pools.filter((p) => !poolUsable(p)).map(poolSpace);
  if (spaces.length === 0) return undefined;
  return (a) => spaces.some((s) => prefixContains(s, a));
}
