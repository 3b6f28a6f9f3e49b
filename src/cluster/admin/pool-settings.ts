/**
 * `pool set`: the settings of a pool that may change while it serves — block size, node
 * selector, disabled, reuse quarantine (`reuseAfter`) — in one config transaction (so every cached view and every plan in
 * flight sees the change or fails its config compare and re-plans).
 *
 * Block size: future blocks get the new size; existing blocks keep theirs. The record's
 * `formerBlockSizes` becomes the sizes of the pool's blocks listed in this transaction plus
 * the size being replaced (a claim of that size may land between the list and the commit; none
 * can after, it compares the config), less the new size. Setting the current size again only
 * prunes former sizes no block has any more. Every claim then proves it overlaps no block of a
 * former size (src/alloc/overlapping-blocks.ts, which also bounds the sizes of one pool to
 * MAX_BLOCK_SIZE_SPREAD bits). Refused while an ip-set draws from the pool (an ip-set's
 * blocks are of one size). Errors name the field and the value.
 *
 * reuseAfter: applies at once to every hand-out planned on the new `config` (release times are
 * kept in the blocks, so raising it also covers addresses freed shortly before, as far as their
 * blocks recorded them); releases record their time once the releasing process has read the
 * new setting (src/cluster/records/pool-quarantine.ts).
 */
import { checkBlockSize } from '../../alloc/block-layout.js';
import { checkBlockSizeSpread } from '../../alloc/overlapping-blocks.js';
import { prefixContainsPrefix } from '../../ip/index.js';
import {
  decodeBlock,
  decodeIpSet,
  BLOCK_PREFIX,
  IPSET_PREFIX,
  poolKey,
  type Pool,
  decodePool,
  encodePool,
  poolSpace,
  parseReuseAfter,
  NotFoundError,
  PoolChangeRefusedError,
} from '../records/index.js';
import { configTxn } from '../txn/index.js';
import type { IpamContext } from '../views/index.js';
import { checkResourceName } from '../../model/names.js';
import { parseNodeSelector } from '../../model/node-selector.js';

export interface PoolSettings {
  readonly blockSize?: number;
  readonly nodeSelector?: string;
  readonly disabled?: boolean;
  /** A duration ("30s", "0" for off; reuse-after.ts). */
  readonly reuseAfter?: string;
}

/**
 * Applies `s` to pool `name`. NotFoundError, TypeError/RangeError naming the field (blockSize,
 * nodeSelector, disabled, reuseAfter) and value, PoolChangeRefusedError (ip-sets), ContentionError.
 */
export async function setPoolSettings(ctx: IpamContext, name: string, s: PoolSettings): Promise<Pool> {
  checkResourceName('pool name', name);
  if (s.blockSize === undefined && s.nodeSelector === undefined && s.disabled === undefined && s.reuseAfter === undefined) {
    throw new TypeError('nothing to set: give blockSize, nodeSelector, disabled or reuseAfter');
  }
  const reuseAfterMs = s.reuseAfter === undefined ? undefined : parseReuseAfter(s.reuseAfter);
  if (s.disabled !== undefined && typeof s.disabled !== 'boolean') throw new TypeError(`invalid pool disabled ${JSON.stringify(s.disabled)}: not a boolean`);
  const nodeSelector = s.nodeSelector === undefined ? undefined : parseNodeSelector(s.nodeSelector);
  return configTxn(ctx, `set pool "${name}"`, async () => {
    const e = await ctx.store.get(poolKey(name));
    if (!e) throw new NotFoundError('pool', name);
    let pool = decodePool(e);
    if (nodeSelector) pool = { ...pool, nodeSelector };
    if (s.disabled !== undefined) pool = { ...pool, disabled: s.disabled };
    if (reuseAfterMs !== undefined) pool = { ...pool, reuseAfterMs };
    if (s.blockSize !== undefined) pool = await withBlockSize(ctx, pool, s.blockSize);
    return { compares: [{ key: e.key, rev: e.rev }], ops: [{ type: 'put', key: e.key, value: encodePool(pool) }], result: pool };
  });
}

async function withBlockSize(ctx: IpamContext, pool: Pool, blockSize: number): Promise<Pool> {
  checkBlockSize(pool.cidr, blockSize);
  const present = new Set<number>();
  for (const e of await ctx.store.list(BLOCK_PREFIX)) {
    const b = decodeBlock(e);
    if (prefixContainsPrefix(poolSpace(pool), b.cidr)) present.add(b.cidr.len);
  }
  if (blockSize !== pool.blockSize) {
    present.add(pool.blockSize);
    const sets = (await ctx.store.list(IPSET_PREFIX)).map(decodeIpSet).filter((x) => x.pool === pool.name);
    if (sets.length > 0) {
      throw new PoolChangeRefusedError(
        pool.name,
        'change the block size of',
        `ip-set${sets.length === 1 ? '' : 's'} ${sets.map((x) => `"${x.name}"`).join(', ')} draw from it (an ip-set needs a pool of one block size; delete them first)`,
      );
    }
  }
  present.delete(blockSize);
  const former = [...present].sort((a, b) => a - b);
  checkBlockSizeSpread(pool.name, blockSize, former);
  return { ...pool, blockSize, formerBlockSizes: former };
}
