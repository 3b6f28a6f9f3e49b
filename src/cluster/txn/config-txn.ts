/**
 * Writes that change what allocations may do (pools, reservations, settings) go through
 * here: they read `config`, and commit their own ops together with `config` rewritten at the
 * next generation, compared at the revision read. That rewrite is what invalidates every
 * cached snapshot (see ipam-config.ts), and the compare serialises such writers. The rewrite
 * also carries the quarantines of the pools as the txn leaves them (config-quarantines.ts): the
 * pools are listed after `config` is read, so its compare proves that list current too.
 */
import { commitWrite } from '../gate/index.js';
import type { Compare, Entry, Op } from '../../store/index.js';
import {
  ContentionError,
  type IpamConfig,
  decodeConfig,
  encodeConfig,
  nextGeneration,
  CONFIG_KEY,
  POOL_PREFIX,
  type Pool,
  decodePool,
  quarantinesOfPools,
  withQuarantines,
} from '../records/index.js';
import type { IpamContext } from '../views/index.js';
import { listAll } from '../../store/list-all.js';

export interface ConfigTxnStep<T> {
  readonly compares: readonly Compare[];
  readonly ops: readonly Op[];
  /** The settings to store (before the generation bump); default: unchanged. */
  readonly config?: IpamConfig;
  readonly result: T;
}

/**
 * Runs `build` against the current config until its txn commits (bounded by
 * ctx.maxAttempts, then ContentionError). `build` may throw to refuse (nothing is written) and
 * is called again after every conflict, so it must read what it needs itself.
 */
export async function configTxn<T>(
  ctx: IpamContext,
  what: string,
  build: (config: IpamConfig, entry: Entry | undefined) => Promise<ConfigTxnStep<T>>,
): Promise<T> {
  let conflict: string[] = [];
  for (let attempt = 1; attempt <= ctx.maxAttempts; attempt++) {
    const entry = await ctx.store.get(CONFIG_KEY);
    const config = decodeConfig(entry);
    const pools = new Map((await listAll(ctx.store, POOL_PREFIX)).map((e): [string, Pool] => [e.key, decodePool(e)]));
    const step = await build(config, entry);
    for (const op of step.ops) {
      if (!op.key.startsWith(POOL_PREFIX)) continue;
      if (op.type === 'delete') pools.delete(op.key);
      else pools.set(op.key, decodePool({ key: op.key, value: op.value, rev: 0 }));
    }
    const value = withQuarantines(
      encodeConfig(nextGeneration({ ...(step.config ?? config), generation: config.generation })),
      quarantinesOfPools([...pools.values()]),
    );
    const compares = [{ key: CONFIG_KEY, rev: entry?.rev ?? 0 }, ...step.compares];
    const ops = [...step.ops, { type: 'put' as const, key: CONFIG_KEY, value }];
    const r = await commitWrite(ctx, { what, compares, ops });
    ctx.cache.invalidateSnapshot();
    if (r.succeeded) return step.result;
    conflict = compares.filter((c, i) => (r.current?.[i]?.rev ?? 0) !== c.rev).map((c) => c.key);
  }
  throw new ContentionError(what, ctx.maxAttempts, conflict);
}
