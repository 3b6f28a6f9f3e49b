/**
 * Which address families the node's warm pool serves: one WarmPool per family of a usable pool
 * (enabled, not draining; one of `--pools` when given), plus any family the node still holds
 * addresses of. A family whose first usable pool appears after the start gets an empty pool at
 * the next maintenance tick (or at the next ADD, when the node serves no family yet), so an agent
 * started before its pools exist needs no restart.
 */
import type { Family } from '../ip/index.js';
import { type Pool, poolUsable, reuseAfterOfAddr } from '../cluster/records/index.js';
import { WarmPool } from './warm-pool.js';
import type { WarmSizing } from './warm-pool-config.js';
import type { WarmState } from './warm-state.js';

/** The families of the pools the node may take new addresses from. */
export function usableFamilies(pools: readonly Pool[], only: readonly string[] | undefined): Set<Family> {
  const families = new Set<Family>();
  for (const p of pools) if (poolUsable(p) && (!only || only.includes(p.name))) families.add(p.cidr.family);
  return families;
}

/** Adds an empty pool for each usable family the node does not serve yet; returns the families added. */
export function addUsableFamilies(s: WarmState, sizing: WarmSizing, pools: readonly Pool[]): Family[] {
  const added: Family[] = [];
  for (const f of [4, 6] as Family[]) {
    if (s.pools.has(f) || !usableFamilies(pools, s.o.pools).has(f)) continue;
    const pool = new WarmPool({ family: f, ...sizing });
    pool.setReuseAfter(reuseAfterOfAddr(pools));
    s.pools.set(f, pool);
    added.push(f);
  }
  if (added.length > 0) s.log.info({ node: s.node, families: added }, 'warm pool: a usable pool of a family this node did not serve exists now; serving it');
  return added;
}

/** The message of an ADD on a node whose warm pool serves no family. */
export function noUsablePoolMessage(only: readonly string[] | undefined): string {
  return only ? `none of the pools [${only.join(', ')}] exists and is enabled` : 'no enabled pool exists';
}
