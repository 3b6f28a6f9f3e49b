/**
 * Pool administration: create (refusing name clashes and overlaps), list, enable/disable,
 * delete (refused while any address of the pool is allocated). Resize is pool-resize.ts,
 * drain pool-drain.ts, other settings (block size, node selector) pool-settings.ts.
 */
import { allocatedCount } from '../../alloc/block.js';
import { prefixContainsPrefix } from '../../ip/index.js';
import { GateRefusedError, commitWrite } from '../gate/index.js';
import type { Entry, Op } from '../../store/index.js';
import {
  decodeBlock,
  BLOCK_PREFIX,
  IPSET_PREFIX,
  POOL_PREFIX,
  affinityKey,
  poolKey,
  PoolHasIpSetsError,
  decodeIpSet,
  type Pool,
  type PoolSpec,
  decodePool,
  encodePool,
  validatePoolSpec,
  ContentionError,
  NotFoundError,
  PoolConflictError,
  PoolInUseError,
} from '../records/index.js';
import { configTxn } from '../txn/index.js';
import type { IpamContext } from '../views/index.js';
import { checkResourceName } from '../../model/names.js';

/**
 * Creates a pool. TypeError/RangeError for a bad spec (naming field and value),
 * PoolConflictError when the name exists or the CIDR overlaps another pool's space (disabled
 * ones included, and what an unfinished shrink still holds) or a block left outside every pool
 * (the write gate's refusal is its cause), ContentionError when pool writers keep racing.
 * Atomic: all or nothing.
 */
export async function createPool(ctx: IpamContext, spec: PoolSpec): Promise<Pool> {
  const pool = validatePoolSpec(spec);
  try {
    return await configTxn(ctx, `create pool "${pool.name}"`, async () => {
      if (await ctx.store.get(poolKey(pool.name))) throw new PoolConflictError(pool.name, pool.name, 'a pool with this name exists');
      return { compares: [{ key: poolKey(pool.name), rev: 0 }], ops: [{ type: 'put', key: poolKey(pool.name), value: encodePool(pool) }], result: pool };
    });
  } catch (e) {
    if (e instanceof GateRefusedError) throw new PoolConflictError(pool.name, e.other ?? '', `its ${e.detail}`, { cause: e });
    throw e;
  }
}

/** Every pool, by name. */
export async function listPools(ctx: IpamContext): Promise<Pool[]> {
  return (await ctx.store.list(POOL_PREFIX)).map(decodePool);
}

/** Sets a pool's `disabled` flag (existing allocations stay). NotFoundError for an unknown pool. */
export async function setPoolDisabled(ctx: IpamContext, name: string, disabled: boolean): Promise<Pool> {
  checkResourceName('pool name', name);
  return configTxn(ctx, `update pool "${name}"`, async () => {
    const e = await ctx.store.get(poolKey(name));
    if (!e) throw new NotFoundError('pool', name);
    const pool = { ...decodePool(e), disabled };
    return { compares: [{ key: e.key, rev: e.rev }], ops: [{ type: 'put', key: e.key, value: encodePool(pool) }], result: pool };
  });
}

/** Blocks per cleanup txn: two deletes each, within etcd's 128-op limit. */
const BLOCKS_PER_TXN = 60;

/**
 * Deletes a pool with its (empty) blocks and their affinities. Refused with PoolInUseError
 * while any address in the pool is allocated; NotFoundError when it does not exist.
 * Steps, each one atomic: (1) mark the pool `deleting` (it stops serving at once, because
 * every allocation compares the config generation this bumps); (2) re-check it is unused —
 * if an allocation slipped in before (1), unmark and refuse; (3) delete the empty blocks in
 * batches; (4) delete the pool. A crash leaves the pool marked `deleting` (serving nothing);
 * running the delete again finishes it.
 */
export async function deletePool(ctx: IpamContext, name: string): Promise<void> {
  checkResourceName('pool name', name);
  const first = await ctx.store.get(poolKey(name));
  if (!first) throw new NotFoundError('pool', name);
  const wasDeleting = decodePool(first).deleting;
  const inUse = allocatedIn(decodePool(first), await ctx.store.list(BLOCK_PREFIX));
  if (inUse.allocated > 0) throw new PoolInUseError(name, inUse.allocated);
  await refuseIpSets(ctx, name);
  const { pool } = await mark(ctx, name, true);
  // Marked `deleting`, the pool takes no new ip-set (createIpSet compares it): one set made since is the last.
  await refuseIpSets(ctx, name).catch(async (e: unknown) => {
    if (!wasDeleting) await mark(ctx, name, false);
    throw e;
  });
  for (let attempt = 1; ; attempt++) {
    const blocks = allocatedIn(pool, await ctx.store.list(BLOCK_PREFIX));
    if (blocks.allocated > 0) {
      if (!wasDeleting) await mark(ctx, name, false);
      throw new PoolInUseError(name, blocks.allocated);
    }
    if (await deleteBlocks(ctx, blocks.entries)) break;
    // A block changed under the deleting pool (a release finishing); list again.
    if (attempt >= ctx.maxAttempts) throw new ContentionError(`delete the blocks of pool "${name}"`, attempt, []);
  }
  await configTxn(ctx, `delete pool "${name}"`, async () => {
    const e = await ctx.store.get(poolKey(name));
    if (!e) return { compares: [], ops: [], result: undefined };
    return { compares: [{ key: e.key, rev: e.rev }], ops: [{ type: 'delete', key: e.key }], result: undefined };
  });
}

/** Deletes empty blocks and their affinities in batches; false when one changed meanwhile. */
export async function deleteBlocks(ctx: IpamContext, entries: readonly Entry[]): Promise<boolean> {
  for (let i = 0; i < entries.length; i += BLOCKS_PER_TXN) {
    const chunk = entries.slice(i, i + BLOCKS_PER_TXN);
    const ops: Op[] = [];
    for (const e of chunk) {
      ops.push({ type: 'delete', key: e.key });
      const b = decodeBlock(e);
      if (b.affinity !== null) ops.push({ type: 'delete', key: affinityKey(b.affinity, b.cidr) });
    }
    const r = await commitWrite(ctx, { what: 'delete empty blocks', compares: chunk.map((e) => ({ key: e.key, rev: e.rev })), ops });
    if (!r.succeeded) return false;
  }
  return true;
}

async function mark(ctx: IpamContext, name: string, deleting: boolean): Promise<{ pool: Pool }> {
  return configTxn(ctx, `delete pool "${name}"`, async () => {
    const e = await ctx.store.get(poolKey(name));
    if (!e) throw new NotFoundError('pool', name);
    const pool = { ...decodePool(e), deleting };
    return { compares: [{ key: e.key, rev: e.rev }], ops: [{ type: 'put', key: e.key, value: encodePool(pool) }], result: { pool } };
  });
}

function allocatedIn(pool: Pool, blocks: readonly Entry[]): { allocated: number; entries: Entry[] } {
  let allocated = 0;
  const entries: Entry[] = [];
  for (const e of blocks) {
    const b = decodeBlock(e);
    if (!prefixContainsPrefix(pool.cidr, b.cidr)) continue;
    allocated += allocatedCount(b);
    entries.push(e);
  }
  return { allocated, entries };
}

/** PoolHasIpSetsError while ip-sets draw from the pool (delete them first). */
async function refuseIpSets(ctx: IpamContext, pool: string): Promise<void> {
  const sets = (await ctx.store.list(IPSET_PREFIX)).map(decodeIpSet).filter((x) => x.pool === pool);
  if (sets.length > 0)
    throw new PoolHasIpSetsError(
      pool,
      sets.map((x) => x.name),
    );
}
