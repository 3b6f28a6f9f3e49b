/**
 * `pool resize`: a pool's CIDR changes in place (pool-resize-check.ts says what may change).
 *
 * Grow (the new CIDR contains the old): one config transaction rewrites the pool; its blocks,
 * affinities and addresses are untouched, and new blocks may come from the new space from then
 * on (every claim compares the config this bumps, so no claim planned on the old CIDR lands
 * after it — it re-plans, which the assignment loop absorbs as one more attempt).
 *
 * Shrink (the new CIDR inside the old), each step atomic, as `pool delete`: (1) refuse, naming
 * them, if addresses are allocated outside the new CIDR or an ip-set of the pool has some;
 * (2) write the narrowed CIDR with `shrinkingFrom` = the old one — no new block nor address
 * outside the new CIDR from then on (a plan on the old view fails its config compare);
 * (3) list again: an allocation that slipped in before (2) puts the old CIDR back and refuses;
 * (4) delete the empty blocks outside the new CIDR with their affinities, each compared at the
 * revision listed (one that changed is listed again); (5) clear `shrinkingFrom`. A crash leaves
 * `shrinkingFrom` set (the pool serves only the new CIDR; check counts the old space as the
 * pool's); running the same resize again finishes it.
 */
import { allocatedCount, addrOfOrdinal } from '../../alloc/block.js';
import { crashPoint } from '../../util/crash-point.js';
import { formatAddr, formatPrefix, type Prefix, prefixContains, prefixContainsPrefix } from '../../ip/index.js';
import type { Entry } from '../../store/index.js';
import {
  decodeBlock,
  decodeIpSet,
  BLOCK_PREFIX,
  IPSET_PREFIX,
  poolKey,
  type Pool,
  decodePool,
  encodePool,
  ContentionError,
  NotFoundError,
  PoolChangeRefusedError,
} from '../records/index.js';
import { configTxn } from '../txn/index.js';
import type { IpamContext } from '../views/index.js';
import { checkResourceName } from '../../model/names.js';
import { type ResizeKind, checkResize } from './pool-resize-check.js';
import { deleteBlocks } from './pools.js';
import { GateRefusedError } from '../gate/index.js';

export interface ResizeResult {
  readonly pool: Pool;
  readonly kind: ResizeKind;
  /** Empty blocks outside the new CIDR that a shrink deleted. */
  readonly removedBlocks: number;
}

/** Addresses shown in a refusal; the count says how many more. */
const SHOWN = 5;

/**
 * Resizes pool `name` to `cidrText`. NotFoundError, TypeError/RangeError naming `cidr` and the
 * value, PoolChangeRefusedError (another pool's space; addresses outside a shrink, named),
 * ContentionError when writers keep racing.
 */
export async function resizePool(ctx: IpamContext, name: string, cidrText: string): Promise<ResizeResult> {
  checkResourceName('pool name', name);
  const pool0 = await readPool(ctx, name);
  const { cidr, kind } = checkResize(pool0, cidrText);
  if (kind === 'grow' || (kind === 'same' && !pool0.shrinkingFrom)) {
    const pool = await write(ctx, name, (p) => ({ ...checked(p, cidrText, kind), cidr }));
    return { pool, kind, removedBlocks: 0 };
  }
  const old = pool0.shrinkingFrom ?? pool0.cidr;
  refuseHeld(name, cidr, outside(await ctx.store.list(BLOCK_PREFIX), old, cidr));
  await refuseIpSets(ctx, name, cidr);
  await write(ctx, name, (p) => ({ ...checked(p, cidrText, 'shrink'), cidr, shrinkingFrom: old }));
  crashPoint('cluster.pool.shrink-marked');
  let removed: number;
  for (let attempt = 1; ; attempt++) {
    const entries = outside(await ctx.store.list(BLOCK_PREFIX), old, cidr);
    try {
      refuseHeld(name, cidr, entries);
    } catch (e) {
      await rollBack(ctx, name, old, cidr, e);
      throw e;
    }
    if (await deleteBlocks(ctx, entries)) {
      removed = entries.length;
      break;
    }
    // A block outside changed meanwhile (a release finishing); list again.
    if (attempt >= ctx.maxAttempts) throw new ContentionError(`delete the blocks of pool "${name}" outside ${formatPrefix(cidr)}`, attempt, []);
  }
  const pool = await write(ctx, name, (p) => withoutShrink(p));
  return { pool, kind: 'shrink', removedBlocks: removed };
}

/**
 * Puts the old CIDR back after `why` (a refusal) stopped the shrink. The write gate checks it as
 * any pool write: should another pool's space now overlap it (a writer that knows no gate), the
 * pool keeps the narrowed CIDR and its unfinished shrink, and the error says both.
 */
async function rollBack(ctx: IpamContext, name: string, old: Prefix, cidr: Prefix, why: unknown): Promise<void> {
  try {
    await write(ctx, name, (p) => ({ ...withoutShrink(p), cidr: old }));
  } catch (e) {
    if (!(e instanceof PoolChangeRefusedError) || !(why instanceof PoolChangeRefusedError)) throw e;
    const detail = why.message.slice(`Cannot resize pool "${name}": `.length);
    throw new PoolChangeRefusedError(
      name,
      'resize',
      `${detail}; and its old cidr could not be put back: ${e.message.slice(`Cannot resize pool "${name}": `.length)} (it serves ${formatPrefix(cidr)} only, its shrink unfinished)`,
      why.addresses,
      { cause: e },
    );
  }
}

function checked(p: Pool, cidrText: string, kind: ResizeKind): Pool {
  // Re-validated on what the txn reads: a resize that ran meanwhile is seen.
  const again = checkResize(p, cidrText);
  if (again.kind !== kind && !(kind === 'shrink' && again.kind === 'same'))
    throw new PoolChangeRefusedError(p.name, 'resize', `it changed meanwhile (its cidr is now ${formatPrefix(p.cidr)}); try again`);
  return p;
}

function withoutShrink(p: Pool): Pool {
  const { shrinkingFrom: _, ...rest } = p;
  return rest;
}

async function readPool(ctx: IpamContext, name: string): Promise<Pool> {
  const e = await ctx.store.get(poolKey(name));
  if (!e) throw new NotFoundError('pool', name);
  return decodePool(e);
}

/**
 * One config txn rewriting the pool as `change` says (on what it reads), through the write gate:
 * the new space overlapping another pool's, or leaving a block outside every pool, is refused
 * (PoolChangeRefusedError, the gate's refusal as its cause) — a rollback as much as a resize.
 */
async function write(ctx: IpamContext, name: string, change: (p: Pool) => Pool): Promise<Pool> {
  try {
    return await configTxn(ctx, `resize pool "${name}"`, async () => {
      const e = await ctx.store.get(poolKey(name));
      if (!e) throw new NotFoundError('pool', name);
      const next = change(decodePool(e));
      return { compares: [{ key: e.key, rev: e.rev }], ops: [{ type: 'put', key: e.key, value: encodePool(next) }], result: next };
    });
  } catch (e) {
    if (e instanceof GateRefusedError) throw new PoolChangeRefusedError(name, 'resize', e.detail, [], { cause: e });
    throw e;
  }
}

/** Block entries inside `space` but not inside `keep`. */
function outside(blocks: readonly Entry[], space: Prefix, keep: Prefix): Entry[] {
  return blocks.filter((e) => {
    const b = decodeBlock(e);
    return prefixContainsPrefix(space, b.cidr) && !prefixContainsPrefix(keep, b.cidr);
  });
}

/** PoolChangeRefusedError naming the addresses allocated in `entries` (the first few, and how many). */
function refuseHeld(name: string, keep: Prefix, entries: readonly Entry[]): void {
  const addrs: string[] = [];
  for (const e of entries) {
    const b = decodeBlock(e);
    if (allocatedCount(b) === 0) continue;
    for (const o of [...b.allocations.keys()].sort((x, y) => x - y)) addrs.push(formatAddr(addrOfOrdinal(b.cidr, o)));
  }
  if (addrs.length === 0) return;
  const shown = addrs.slice(0, SHOWN).join(', ');
  const more = addrs.length > SHOWN ? ` and ${addrs.length - SHOWN} more` : '';
  throw new PoolChangeRefusedError(
    name,
    'resize',
    `${addrs.length} address${addrs.length === 1 ? ' is' : 'es are'} allocated outside cidr ${formatPrefix(keep)}: ${shown}${more} (drain them first: podipam pool drain, or release them)`,
    addrs,
  );
}

async function refuseIpSets(ctx: IpamContext, pool: string, keep: Prefix): Promise<void> {
  const sets = (await ctx.store.list(IPSET_PREFIX)).map(decodeIpSet).filter((x) => x.pool === pool);
  const out = sets.filter((s) => s.addrs.ranges.some((r) => !prefixContains(keep, r.start) || !prefixContains(keep, r.end)));
  if (out.length > 0)
    throw new PoolChangeRefusedError(
      pool,
      'resize',
      `ip-set${out.length === 1 ? '' : 's'} ${out.map((s) => `"${s.name}"`).join(', ')} hold addresses outside cidr ${formatPrefix(keep)} (delete them first)`,
    );
}
