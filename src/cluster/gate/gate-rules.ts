/**
 * The rules of the write gate, pure: given a write (compares and ops, as the caller planned it)
 * and the records it must be checked against, the compares it must carry so that "one address,
 * one holder" holds when it commits — or a GateRefusedError when it can never hold.
 *
 * Why these rules suffice: an address is held only in a block (one handle per ordinal), so an
 * address has two holders only if two blocks overlap. Blocks never overlap when
 * 1. every block lies wholly inside one pool's space (its CIDR, or while a shrink is unfinished
 *    the CIDR it had: `poolSpace`) and has one of the sizes that pool lists (`blockSize` and
 *    `formerBlockSizes`);
 * 2. pools' spaces never overlap;
 * 3. a new block is proven not to overlap any block of another listed size: its key and every
 *    key of another size that would overlap it are compared absent (rev 0) in its own txn
 *    (src/alloc/overlapping-blocks.ts), together with the `config` record at the revision the
 *    pools were read at — every write of a pool bumps `config` (config-txn.ts), so the pools the
 *    rule used are the pools at commit;
 * 4. a write of a pool record is checked against every pool and every block listed after the
 *    `config` revision it compares: no space overlaps another pool's, every block overlapping its
 *    new space lies inside it with a listed size, and no block is left outside every pool. A
 *    block written after that listing was planned on the same `config` (rule 3) and so lies in
 *    a pool's space as it was: that space either stays the pool's or this write's txn fails.
 * 5. every put or delete of a block or pool key, and of `config`, compares that key (a CAS):
 *    a writer whose view is stale fails instead of overwriting.
 */
import { overlappingBlocks } from '../../alloc/overlapping-blocks.js';
import { type Prefix, formatPrefix, prefixContainsPrefix, prefixOverlaps } from '../../ip/index.js';
import type { Compare, Op } from '../../store/index.js';
import { BLOCK_PREFIX, CONFIG_KEY, POOL_PREFIX, blockKey, parseBlockKey, type Pool, decodePool, poolBlockSizes, poolSpace } from '../records/index.js';
import { GateRefusedError } from './gate-refused-error.js';

/** The pools a write is checked against, with the `config` revision they were read at. */
export interface PoolsView {
  readonly configRev: number;
  readonly pools: readonly Pool[];
}

/** PoolsView plus the CIDR of every block, listed after that revision (for writes of pools). */
export interface SpaceView extends PoolsView {
  readonly blocks: readonly Prefix[];
}

/** What a write does to the space: the blocks it creates and the pool records it changes. */
export interface WriteShape {
  /** Block keys compared absent (rev 0) and put: new blocks. */
  readonly newBlocks: readonly { readonly key: string; readonly cidr: Prefix }[];
  /** Pool name → its record after the write (undefined: deleted). */
  readonly pools: ReadonlyMap<string, Pool | undefined>;
  /** Block keys the write deletes. */
  readonly deletedBlocks: ReadonlySet<string>;
  /** The write's compares, as given. */
  readonly compared: readonly Compare[];
}

/** The write's shape; GateRefusedError ('uncompared') for a block, pool or config write without its compare. */
export function shapeOf(what: string, compares: readonly Compare[], ops: readonly Op[]): WriteShape {
  // A pod's ADD or DEL writes a block or two and a handle: a scan of the few compares per
  // guarded op costs less than building a map for every txn.
  const revOf = (key: string): number | undefined => compares.find((c) => c.key === key)?.rev;
  const newBlocks: { key: string; cidr: Prefix }[] = [];
  const pools = new Map<string, Pool | undefined>();
  const deletedBlocks = new Set<string>();
  for (const op of ops) {
    const isBlock = op.key.startsWith(BLOCK_PREFIX);
    const isPool = op.key.startsWith(POOL_PREFIX);
    if (!isBlock && !isPool && op.key !== CONFIG_KEY) continue;
    const rev = revOf(op.key);
    if (rev === undefined)
      throw new GateRefusedError(what, 'uncompared', op.key, `${op.type} of ${op.key} without a compare on it (a writer must prove what it overwrites)`);
    if (isBlock) {
      if (op.type === 'delete') {
        deletedBlocks.add(op.key);
        continue;
      }
      const cidr = parseBlockKey(op.key);
      if (!cidr) throw new GateRefusedError(what, 'outside-pools', op.key, `${op.key} is not a block key`);
      if (rev === 0) newBlocks.push({ key: op.key, cidr });
    } else if (isPool) {
      pools.set(op.key.slice(POOL_PREFIX.length), op.type === 'put' ? decodePool({ key: op.key, value: op.value, rev: 1 }) : undefined);
    }
  }
  return { newBlocks, pools, deletedBlocks, compared: compares };
}

/** True when the write changes a pool's space or block sizes (or creates or deletes one): its check needs every block. */
export function needsBlocks(shape: WriteShape, before: readonly Pool[]): boolean {
  for (const [name, after] of shape.pools) {
    const old = before.find((p) => p.name === name);
    if (!old || !after) return true;
    if (formatPrefix(poolSpace(old)) !== formatPrefix(poolSpace(after)) || formatPrefix(old.cidr) !== formatPrefix(after.cidr)) return true;
    if (poolBlockSizes(old).join() !== poolBlockSizes(after).join()) return true;
  }
  return false;
}

/** A pool's space as printed: its CIDR, and what an unfinished shrink still holds. */
export function spaceText(p: Pool): string {
  return p.shrinkingFrom ? `${formatPrefix(p.cidr)}, still holding ${formatPrefix(p.shrinkingFrom)} until its shrink finishes` : formatPrefix(p.cidr);
}

/**
 * The compares the write must send (the caller's, then the guards the rules add) and the guard
 * keys (blocks of other sizes compared absent). `view`: the pools as of the `config` revision
 * compared (or to compare); `space`: with every block, required when the write changes a pool
 * (needsBlocks). GateRefusedError when the write would break a rule whatever the store holds.
 */
export function guardedCompares(
  what: string,
  shape: WriteShape,
  compares: readonly Compare[],
  view: PoolsView,
  space?: SpaceView,
): { compares: Compare[]; guards: string[] } {
  const out = [...compares];
  const guards: string[] = [];
  if (shape.newBlocks.length === 0 && shape.pools.size === 0) return { compares: out, guards };
  const pools = poolsAfter(view.pools, shape);
  if (shape.pools.size > 0) checkPools(what, shape, view.pools, pools, space);
  if (!shape.compared.some((c) => c.key === CONFIG_KEY)) out.push({ key: CONFIG_KEY, rev: view.configRev });
  const compared = new Map<string, number>();
  for (const c of shape.compared) if (!compared.has(c.key)) compared.set(c.key, c.rev);
  const newKeys = new Set(shape.newBlocks.map((b) => b.key));
  for (const nb of shape.newBlocks) {
    const pool = pools.find((p) => prefixContainsPrefix(p.cidr, nb.cidr));
    if (!pool) throw new GateRefusedError(what, 'outside-pools', nb.key, `block ${formatPrefix(nb.cidr)} lies in no pool's cidr`);
    if (pool.deleting)
      throw new GateRefusedError(what, 'deleting', nb.key, `block ${formatPrefix(nb.cidr)} is in pool "${pool.name}", which is being deleted`, pool.name);
    const sizes = poolBlockSizes(pool);
    if (!sizes.includes(nb.cidr.len))
      throw new GateRefusedError(
        what,
        'block-size',
        nb.key,
        `block ${formatPrefix(nb.cidr)} is a /${nb.cidr.len}; pool "${pool.name}" has blocks of ${sizes.map((s) => `/${s}`).join(', ')}`,
        pool.name,
      );
    for (const cidr of overlappingBlocks(nb.cidr, sizes)) {
      const g = blockKey(cidr);
      const rev = compared.get(g);
      if ((rev !== undefined && rev !== 0) || newKeys.has(g)) {
        throw new GateRefusedError(what, 'block-overlap', nb.key, `block ${formatPrefix(nb.cidr)} would overlap block ${formatPrefix(cidr)}`, g);
      }
      if (rev === undefined && !guards.includes(g)) {
        guards.push(g);
        out.push({ key: g, rev: 0 });
      }
    }
  }
  return { compares: out, guards };
}

function poolsAfter(before: readonly Pool[], shape: WriteShape): Pool[] {
  const out = before.filter((p) => !shape.pools.has(p.name));
  for (const p of shape.pools.values()) if (p) out.push(p);
  return out;
}

function checkPools(what: string, shape: WriteShape, before: readonly Pool[], after: readonly Pool[], space: SpaceView | undefined): void {
  if (!shape.compared.some((c) => c.key === CONFIG_KEY))
    throw new GateRefusedError(what, 'uncompared', CONFIG_KEY, 'a pool write without a compare on config (every pool write bumps it)');
  for (const [name, p] of shape.pools) {
    if (!p) continue;
    const other = after.find((o) => o.name !== name && prefixOverlaps(poolSpace(o), poolSpace(p)));
    if (other) {
      throw new GateRefusedError(
        what,
        'pool-overlap',
        POOL_PREFIX + name,
        `cidr ${spaceText(p)} overlaps pool "${other.name}" (${spaceText(other)})`,
        other.name,
      );
    }
  }
  if (!needsBlocks(shape, before)) return;
  if (!space)
    throw new GateRefusedError(
      what,
      'uncompared',
      POOL_PREFIX + [...shape.pools.keys()].join(','),
      'a pool write that changes its space was not checked against the blocks',
    );
  for (const b of space.blocks) {
    const key = blockKey(b);
    if (shape.deletedBlocks.has(key)) continue;
    for (const [name, p] of shape.pools) {
      const old = before.find((o) => o.name === name);
      if (p && prefixOverlaps(poolSpace(p), b)) {
        if (!prefixContainsPrefix(poolSpace(p), b))
          throw new GateRefusedError(what, 'block-overlap', POOL_PREFIX + name, `cidr ${spaceText(p)} cuts through block ${formatPrefix(b)}`, key);
        const sizes = poolBlockSizes(p);
        if (!sizes.includes(b.len))
          throw new GateRefusedError(
            what,
            'block-size',
            POOL_PREFIX + name,
            `block ${formatPrefix(b)} is a /${b.len}; pool "${name}" would list ${sizes.map((s) => `/${s}`).join(', ')}`,
            key,
          );
      } else if (old && prefixOverlaps(poolSpace(old), b)) {
        throw new GateRefusedError(
          what,
          'outside-pools',
          POOL_PREFIX + name,
          `block ${formatPrefix(b)} would be left outside every pool (${p ? `pool "${name}" would no longer cover it` : `pool "${name}" still has it`})`,
          key,
        );
      }
    }
  }
}
