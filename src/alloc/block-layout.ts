/**
 * How a pool is cut into blocks (Calico's IPPool.blockSize): pure arithmetic on prefixes.
 * A pool of prefix length P with block size B holds 2^(B−P) blocks, numbered from the pool's
 * first address; block i is the i-th sub-prefix of length B.
 */
import { type Addr, type Family, type IpRangeSet, type Prefix, formatPrefix, prefixContains, prefixOf, rangeFromPrefix, subPrefix } from '../ip/index.js';
import { MAX_USABLE_BLOCK_SIZE, usableCount, usableSpan } from './block-addressing.js';

/** Default block prefix length per family, as Calico: /26 (64 addresses) and /122 (64). */
export const DEFAULT_BLOCK_SIZE: Readonly<Record<Family, number>> = Object.freeze({ 4: 26, 6: 122 });

/**
 * Block prefix lengths a new pool may use, per family (inclusive): Calico's 20–32 and 116–128
 * less the sizes that leave no usable address once a block's network, gateway and (IPv4)
 * broadcast addresses are excluded (block-addressing.ts): at most /30 and /126.
 */
export const BLOCK_SIZE_RANGE: Readonly<Record<Family, readonly [number, number]>> = Object.freeze({
  4: [20, MAX_USABLE_BLOCK_SIZE[4]],
  6: [116, MAX_USABLE_BLOCK_SIZE[6]],
});

/** Block prefix lengths a stored pool record may carry: also /31, /32, /127, /128, written before they were refused. */
const STORED_BLOCK_SIZE_RANGE: Readonly<Record<Family, readonly [number, number]>> = Object.freeze({ 4: [20, 32], 6: [116, 128] });

/**
 * Throws RangeError naming the value unless `blockSize` is an allowed block prefix length for
 * a new pool of the pool's family (a block must keep at least one usable address) and the pool
 * holds at least one whole block (blockSize ≥ pool length).
 */
export function checkBlockSize(pool: Prefix, blockSize: number): void {
  const [min, max] = BLOCK_SIZE_RANGE[pool.family];
  const [, storedMax] = STORED_BLOCK_SIZE_RANGE[pool.family];
  if (Number.isInteger(blockSize) && blockSize > max && blockSize <= storedMax) {
    const excluded = pool.family === 4 ? 'network, gateway and broadcast addresses' : 'subnet-router anycast address and gateway';
    throw new RangeError(
      `Cannot use 'blockSize' ${blockSize} for ${formatPrefix(pool)}: a /${blockSize} block leaves no usable address (its ${excluded} are never handed out); an IPv${pool.family} block size must be an integer from ${min} to ${max}`,
    );
  }
  checkRange(pool, blockSize, min, max);
}

/**
 * checkBlockSize for a pool record already in the datastore: also accepts the sizes new pools
 * may no longer use (such a pool hands out nothing, but its records can be listed, released
 * and deleted).
 */
export function checkStoredBlockSize(pool: Prefix, blockSize: number): void {
  const [min, max] = STORED_BLOCK_SIZE_RANGE[pool.family];
  checkRange(pool, blockSize, min, max);
}

function checkRange(pool: Prefix, blockSize: number, min: number, max: number): void {
  if (!Number.isInteger(blockSize) || blockSize < min || blockSize > max) {
    throw new RangeError(
      `Cannot use 'blockSize' ${blockSize} for ${formatPrefix(pool)}: an IPv${pool.family} block size must be an integer from ${min} to ${max}`,
    );
  }
  if (blockSize < pool.len) {
    throw new RangeError(`Cannot use 'blockSize' ${blockSize} for ${formatPrefix(pool)}: the pool must hold at least one block (block size ≥ ${pool.len})`);
  }
}

/** Number of blocks in the pool (a power of two). Assumes checkBlockSize passed. */
export function blockCount(pool: Prefix, blockSize: number): bigint {
  return 1n << BigInt(blockSize - pool.len);
}

/** Addresses the pool can hand out: its blocks times each block's usable addresses (see block-addressing.ts). */
export function poolUsableCount(pool: Prefix, blockSize: number): bigint {
  return blockCount(pool, blockSize) * usableCount(subPrefix(pool, blockSize, 0n));
}

/** The `index`-th block of the pool (0-based); RangeError when out of range. */
export function blockAt(pool: Prefix, blockSize: number, index: bigint): Prefix {
  return subPrefix(pool, blockSize, index);
}

/** The block of the pool that holds `a`, or undefined when `a` is outside the pool. */
export function blockContaining(pool: Prefix, blockSize: number, a: Addr): Prefix | undefined {
  return prefixContains(pool, a) ? prefixOf(a, blockSize) : undefined;
}

/** FNV-1a, 32 bits, over the UTF-16 code units of `text`: a stable seed from a node name. */
export function fnv1a32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/**
 * The order in which a node tries the blocks of a pool when it claims a new one: every index
 * in [0, count) exactly once, starting at a point derived from `seed` and stepping by an odd
 * stride also derived from it (double hashing; `count` is a power of two, so any odd stride
 * visits every block). Calico starts at a hashed index and walks sequentially; a hashed stride
 * avoids the long runs of claimed blocks that sequential probing produces when many nodes
 * claim at once, so a claim usually hits a free block on its first try.
 *
 * `from` (a position in that order, 0 = its first index) starts the walk there and wraps round
 * to the positions before it, so every index is still visited once: a node that owns the
 * blocks at the first positions resumes past them (blockProbePosition) instead of skipping
 * them one by one on every claim.
 */
export function* blockProbeOrder(count: bigint, seed: string, from = 0n): Generator<bigint> {
  if (count <= 0n) return;
  const { start, stride } = probeSteps(count, seed);
  let i = (start + (((from % count) + count) % count) * stride) % count;
  for (let n = 0n; n < count; n++) {
    yield i;
    i = (i + stride) % count;
  }
}

/**
 * The position of block `index` in blockProbeOrder(count, seed): the n with
 * start + n·stride ≡ index (mod count), through the stride's inverse modulo the power of two.
 */
export function blockProbePosition(count: bigint, seed: string, index: bigint): bigint {
  return blockProbePositions(count, seed)(index);
}

/** blockProbePosition for many indexes of one order: the seed's hashes and the stride's inverse computed once. */
export function blockProbePositions(count: bigint, seed: string): (index: bigint) => bigint {
  if (count <= 0n) throw new RangeError(`Cannot find a probe position in a pool of ${count} blocks`);
  const { start, stride } = probeSteps(count, seed);
  const inverse = inverseMod(stride, count);
  return (index) => (((((index - start) % count) + count) % count) * inverse) % count;
}

function probeSteps(count: bigint, seed: string): { start: bigint; stride: bigint } {
  const h1 = BigInt(fnv1a32(seed)) | (BigInt(fnv1a32(`${seed}#start`)) << 32n);
  const h2 = BigInt(fnv1a32(`${seed}#stride`)) | (BigInt(fnv1a32(`${seed}#stride2`)) << 32n);
  return { start: h1 % count, stride: (h2 % count) | 1n };
}

/** The inverse of odd `a` modulo the power of two `m` (Newton's iteration: each step doubles the correct low bits). */
function inverseMod(a: bigint, m: bigint): bigint {
  let x = a; // a·a ≡ 1 (mod 8) for every odd a: 3 correct bits
  for (let bits = 3n; 1n << bits < m; bits *= 2n) x = (((x * (2n - ((a * x) % m))) % m) + m) % m;
  return ((x % m) + m) % m;
}

/** Ordinals of `block` (0 = its first address) that lie in `reserved`. */
export function reservedOrdinals(block: Prefix, reserved: IpRangeSet): Set<number> {
  const out = new Set<number>();
  const span = rangeFromPrefix(block);
  for (const r of reserved.ranges) {
    if (r.start.family !== block.family || r.end.value < span.start.value || r.start.value > span.end.value) continue;
    const lo = r.start.value > span.start.value ? r.start.value : span.start.value;
    const hi = r.end.value < span.end.value ? r.end.value : span.end.value;
    for (let v = lo; v <= hi; v++) out.add(Number(v - block.base));
  }
  return out;
}

/**
 * True when every usable address of `block` is reserved, or it has none (such a block is never
 * claimed). For a pool's prefix: true only when every block of the pool is wholly reserved.
 */
export function isWhollyReserved(block: Prefix, reserved: IpRangeSet): boolean {
  const span = usableSpan(block);
  if (!span) return true;
  return reserved.ranges.some((r) => r.start.family === block.family && r.start.value <= span.start.value && r.end.value >= span.end.value);
}
