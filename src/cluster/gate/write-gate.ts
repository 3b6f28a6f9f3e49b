/**
 * The write gate: the one way a write that creates or changes a block, a pool's space or an
 * address's holder reaches the datastore (claim, assignment, borrow, group commit, release, GC,
 * import, pool create/resize/shrink/rollback/delete, block-size change, reserve, ip-sets, the
 * warm pool's take and return). Callers plan their write; the gate checks it against the current
 * records with the rules of gate-rules.ts, adds the compares that make those checks hold at
 * commit (they are part of the same transaction: guarded keys on etcd, one SQLite transaction),
 * and sends it. No other module of the cluster back end or the importer calls `Store.txn`
 * (test/write-gate-only.test.ts proves it from the sources).
 *
 * What it costs: a write that creates no block and changes no pool is sent as planned (a scan of
 * its ops). A new block needs the pools as of a `config` revision: the caller's snapshot when it
 * has one, else the context's cached snapshot (loaded once). A pool write reads the pools again,
 * and every block when the pool's space or block sizes change — operator actions, not pod starts.
 *
 * Outcome contract: as Store.txn. A failed compare (the caller's or a guard's) applies nothing and
 * returns the current entries, in the order of `compares` returned here (the caller's first);
 * StoreUnavailableError means the outcome is unknown (re-read before acting on it). A refusal
 * (GateRefusedError) is thrown before anything is sent.
 */
import { listAll } from '../../store/list-all.js';
import type { Compare, Op, TxnResult } from '../../store/index.js';
import { loadSnapshot, type IpamContext } from '../views/index.js';
import { BLOCK_PREFIX, CONFIG_KEY, POOL_PREFIX, parseBlockKey, decodePool } from '../records/index.js';
import type { Prefix } from '../../ip/index.js';
import { type PoolsView, guardedCompares, needsBlocks, shapeOf } from './gate-rules.js';
import { plantedCompares } from './planted-compares.js';
import { plantedBug } from '../../util/planted-bug.js';

export interface GatedWrite {
  /** What is being written, for errors ("create pool \"q\"", "assign addresses to handle …"). */
  readonly what: string;
  readonly compares: readonly Compare[];
  readonly ops: readonly Op[];
  /** The pools and `config` revision the plan read, when it has them (saves a read). */
  readonly view?: PoolsView;
  /**
   * Test-only: the planted bug 'assign-skips-block-cas' (src/util/planted-bug.ts) may drop the
   * block compares of this write after the gate's checks, so the partition rig can prove its
   * checker catches a writer that overwrites a block it saw stale.
   */
  readonly plantable?: boolean;
}

export interface GatedResult extends TxnResult {
  /** The compares sent: the caller's, in its order, then the gate's guards. */
  readonly compares: readonly Compare[];
  /** Keys of blocks of other sizes the write's new blocks were proven not to overlap. */
  readonly guards: readonly string[];
}

/** Checks and commits `w`; see the module comment. */
export async function commitWrite(ctx: IpamContext, w: GatedWrite): Promise<GatedResult> {
  const shape = shapeOf(w.what, w.compares, w.ops);
  let compares: readonly Compare[] = w.compares;
  let guards: readonly string[] = [];
  if ((shape.newBlocks.length > 0 || shape.pools.size > 0) && !plantedBug('gate-skips-space-checks')) {
    let view: PoolsView;
    if (shape.pools.size > 0) view = await readPools(ctx);
    else view = w.view ?? (ctx.cache.snapshot ??= await loadSnapshot(ctx.store));
    const space = shape.pools.size > 0 && needsBlocks(shape, view.pools) ? { ...view, blocks: await blockCidrs(ctx) } : undefined;
    ({ compares, guards } = guardedCompares(w.what, shape, w.compares, view, space));
  }
  const sent = w.plantable ? plantedCompares(compares) : compares;
  const r = await ctx.store.txn(sent, w.ops);
  if (!r.succeeded) {
    const i = sent.findIndex((c) => c.key === CONFIG_KEY);
    if (i >= 0 && (r.current?.[i]?.rev ?? 0) !== sent[i]!.rev) ctx.cache.invalidateSnapshot();
  }
  return { ...r, compares: sent, guards };
}

/** The pools now, with the revision of `config` read before them. */
async function readPools(ctx: IpamContext): Promise<PoolsView> {
  const config = await ctx.store.get(CONFIG_KEY);
  const pools = (await listAll(ctx.store, POOL_PREFIX)).map(decodePool);
  return { configRev: config?.rev ?? 0, pools };
}

async function blockCidrs(ctx: IpamContext): Promise<Prefix[]> {
  const out: Prefix[] = [];
  for (const e of await listAll(ctx.store, BLOCK_PREFIX)) {
    const c = parseBlockKey(e.key);
    if (c) out.push(c);
  }
  return out;
}
