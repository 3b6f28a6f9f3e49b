/**
 * Writes that change what allocations may do (pools, reservations, settings) go through
 * here: they read `config`, and commit their own ops together with `config` rewritten at the
 * next generation, compared at the revision read. That rewrite is what invalidates every
 * cached snapshot (see ipam-config.ts), and the compare serialises such writers.
 */
import { commitWrite } from './gate/index.js';
import type { Compare, Entry, Op } from '../store/index.js';
import { ContentionError } from './errors.js';
import type { IpamContext } from './ipam-context.js';
import { type IpamConfig, decodeConfig, encodeConfig, nextGeneration } from './ipam-config.js';
import { CONFIG_KEY } from './keys.js';

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
export async function configTxn<T>(ctx: IpamContext, what: string, build: (config: IpamConfig, entry: Entry | undefined) => Promise<ConfigTxnStep<T>>): Promise<T> {
  let conflict: string[] = [];
  for (let attempt = 1; attempt <= ctx.maxAttempts; attempt++) {
    const entry = await ctx.store.get(CONFIG_KEY);
    const config = decodeConfig(entry);
    const step = await build(config, entry);
    const compares = [{ key: CONFIG_KEY, rev: entry?.rev ?? 0 }, ...step.compares];
    const ops = [...step.ops, { type: 'put' as const, key: CONFIG_KEY, value: encodeConfig(nextGeneration({ ...(step.config ?? config), generation: config.generation })) }];
    const r = await commitWrite(ctx, { what, compares, ops });
    ctx.cache.invalidateSnapshot();
    if (r.succeeded) return step.result;
    conflict = compares.filter((c, i) => (r.current?.[i]?.rev ?? 0) !== c.rev).map((c) => c.key);
  }
  throw new ContentionError(what, ctx.maxAttempts, conflict);
}
