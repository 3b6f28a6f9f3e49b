/**
 * The pools' reuse quarantines (pool-quarantine.ts) kept in the `config` record too, as
 * `quarantines: [{space, reuseAfterMs}]` — every pool whose `reuseAfter` is set, by the space it
 * owns. Every pool write rewrites `config` in the same transaction (config-txn.ts), which puts
 * the list of the pools as that transaction leaves them; so a release that reads `config` with
 * the handle, in one round trip, knows whether a freed address is quarantined without listing
 * the pools. A record without the field (written before it existed) or with one that does not
 * decode says nothing: the releaser lists the pools then, as before.
 */
import type { Quarantine } from '../../alloc/block-quarantine.js';
import { type Prefix, formatPrefix, parsePrefix, prefixContainsPrefix } from '../../ip/index.js';
import type { Entry } from '../../store/index.js';
import { type Pool, poolSpace } from './pool-record.js';
import { MAX_REUSE_AFTER_MS } from './reuse-after.js';

export interface SpaceQuarantine {
  readonly space: Prefix;
  readonly reuseAfterMs: number;
}

/** The quarantines of `pools` (those with reuseAfter set). */
export function quarantinesOfPools(pools: readonly Pool[]): SpaceQuarantine[] {
  return pools.filter((p) => p.reuseAfterMs > 0).map((p) => ({ space: poolSpace(p), reuseAfterMs: p.reuseAfterMs }));
}

/** `config`'s encoded value with the quarantines added. */
export function withQuarantines(configValue: string, q: readonly SpaceQuarantine[]): string {
  const o = JSON.parse(configValue) as Record<string, unknown>;
  return JSON.stringify({ ...o, quarantines: q.map((x) => ({ space: formatPrefix(x.space), reuseAfterMs: x.reuseAfterMs })) });
}

/** What the `config` entry says of the quarantines; undefined when it says nothing usable (absent, old, malformed). Never throws. */
export function quarantinesOfConfig(entry: Entry | undefined): SpaceQuarantine[] | undefined {
  if (!entry) return undefined;
  try {
    const o = JSON.parse(entry.value) as { quarantines?: unknown };
    if (!Array.isArray(o.quarantines)) return undefined;
    return o.quarantines.map((x: unknown) => {
      const { space, reuseAfterMs } = x as { space?: unknown; reuseAfterMs?: unknown };
      if (
        typeof space !== 'string' ||
        typeof reuseAfterMs !== 'number' ||
        !Number.isInteger(reuseAfterMs) ||
        reuseAfterMs < 1 ||
        reuseAfterMs > MAX_REUSE_AFTER_MS
      )
        throw new Error('malformed');
      return { space: parsePrefix(space), reuseAfterMs };
    });
  } catch {
    return undefined;
  }
}

/** The quarantine of the block `cidr` at `now` (epoch ms): that of the quarantining space holding it, else none. */
export function quarantineIn(q: readonly SpaceQuarantine[], cidr: Prefix, now: number): Quarantine {
  return { reuseAfterMs: q.find((x) => prefixContainsPrefix(x.space, cidr))?.reuseAfterMs ?? 0, now };
}
