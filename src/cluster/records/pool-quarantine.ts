/**
 * The reuse quarantine (src/alloc/block-quarantine.ts) a writer applies to a block: its pool's
 * `reuseAfter` — the pool whose space holds the block — at the writer's clock. A block in no
 * pool has none. Writers take the pools from their snapshot: a `pool set --reuse-after` reaches
 * a process's releases when its snapshot next reloads (its next ADD on the changed `config`, a
 * new plugin process, or a failed `config` compare).
 *
 * A node's warm pool keeps addresses its pods release on the node (src/warm/warm-pool.ts): it
 * applies the same setting per address (`reuseAfterOfAddr`) from the pool view it already holds.
 */
import type { Quarantine } from '../../alloc/block-quarantine.js';
import { type Addr, type Prefix, prefixContains, prefixContainsPrefix } from '../../ip/index.js';
import { type Pool, poolSpace } from './pool-record.js';

/** The quarantine of the block `cidr` among `pools` at `now` (epoch ms). */
export function quarantineFor(pools: readonly Pool[], cidr: Prefix, now: number): Quarantine {
  const pool = pools.find((p) => prefixContainsPrefix(poolSpace(p), cidr));
  return { reuseAfterMs: pool?.reuseAfterMs ?? 0, now };
}

/**
 * An address's pool's reuseAfter (ms; 0: none, or in no pool) among `pools`; undefined when no
 * pool quarantines (the caller skips the lookup altogether).
 */
export function reuseAfterOfAddr(pools: readonly Pool[]): ((addr: Addr) => number) | undefined {
  const on = pools.filter((p) => p.reuseAfterMs > 0);
  if (on.length === 0) return undefined;
  return (addr) => pools.find((p) => prefixContains(poolSpace(p), addr))?.reuseAfterMs ?? 0;
}
