/**
 * An allocation block (Calico's IPAMBlock), pure and immutable: a block CIDR affine to at most
 * one node, and which of its addresses (ordinals, 0 = the block's first address) are held by
 * which handle. Every operation returns a new block and never mutates its input.
 *
 * Reuse order: a round-robin cursor (`next`), as host-local uses within a range. A search for
 * free ordinals starts at the cursor and the cursor moves past the last ordinal handed out, so
 * an address released just now is handed out again only after every other free ordinal of the
 * block has been — a crash-looping pod does not get its old address back while the network
 * may still route to it. Calico keeps an explicit FIFO list of free ordinals to the same end;
 * the cursor needs one integer instead of a list as long as the block.
 *
 * Only usable ordinals are handed out (block-addressing.ts: never the network address, the
 * gateway or the IPv4 broadcast address); an allocation at an excluded ordinal (written by an
 * older version, or adopted from host-local by `podipam import`) is still held, counted and
 * released like any other. While the gateway ordinal is held the block hands out nothing: a
 * new pod would be told to route through an address another pod has.
 *
 * Across nodes, the cursor is not enough (another node may borrow the block, or claim it again
 * once it is deleted): a pool with a reuse quarantine also keeps, in the block, when each free
 * ordinal was released (`released`, block-quarantine.ts), and planners skip the young ones.
 */
import { type Addr, type Prefix, familyBits, formatAddr, formatPrefix, prefixContains } from '../ip/index.js';
import { GATEWAY_ORDINAL, excludedRole, isUsableOrdinal, usableCount } from './block-addressing.js';

export interface Block {
  readonly cidr: Prefix;
  /** The node the block is affine to, or null for an orphaned block (affinity released while in use). */
  readonly affinity: string | null;
  /** Allocated ordinals → the handle holding them. Free ordinals are absent. */
  readonly allocations: ReadonlyMap<number, string>;
  /** Where the next search for a free ordinal starts, in [0, capacity). */
  readonly next: number;
  /**
   * Free ordinals → when they were released (epoch ms, the releasing node's clock), kept while
   * their pool's reuse quarantine may still apply (block-quarantine.ts); absent or empty: none.
   * Never lists an allocated ordinal: assigning one drops its entry.
   */
  readonly released?: ReadonlyMap<number, number>;
}

/** Largest block this module handles: /20 for IPv4, /116 for IPv6 (Calico's smallest block size). */
export const MAX_BLOCK_ORDINALS = 4096;

/** Number of addresses (ordinals) in a block of this CIDR, usable or not; RangeError beyond MAX_BLOCK_ORDINALS. */
export function blockCapacity(cidr: Prefix): number {
  const hostBits = familyBits(cidr.family) - cidr.len;
  if (hostBits < 0 || 2 ** hostBits > MAX_BLOCK_ORDINALS) {
    throw new RangeError(`Cannot use ${formatPrefix(cidr)} as a block: it must hold at most ${MAX_BLOCK_ORDINALS} addresses`);
  }
  return 2 ** hostBits;
}

/** A new, empty block affine to `affinity` (or orphaned when null). */
export function newBlock(cidr: Prefix, affinity: string | null): Block {
  blockCapacity(cidr);
  return { cidr, affinity, allocations: new Map(), next: 0 };
}

/** The ordinal of `a` in the block; RangeError naming both when `a` is outside it. */
export function ordinalOf(cidr: Prefix, a: Addr): number {
  if (!prefixContains(cidr, a)) throw new RangeError(`${formatAddr(a)} is not in block ${formatPrefix(cidr)}`);
  return Number(a.value - cidr.base);
}

/** The address of ordinal `o` of the block; RangeError when `o` is out of range. */
export function addrOfOrdinal(cidr: Prefix, o: number): Addr {
  checkOrdinal(cidr, o);
  return { family: cidr.family, value: cidr.base + BigInt(o) };
}

/** The handle holding ordinal `o`, or undefined when it is free. */
export function holderOf(block: Block, o: number): string | undefined {
  return block.allocations.get(o);
}

/**
 * Takes up to `count` free usable ordinals for `handle`, searching round robin from the cursor
 * and skipping `reserved` ordinals. Returns fewer (possibly none) when the block runs out; the
 * caller decides whether a short count is an error. The cursor moves past the last ordinal
 * taken; with nothing taken the block is returned unchanged.
 */
export function allocateOrdinals(
  block: Block,
  count: number,
  handle: string,
  reserved: ReadonlySet<number> = EMPTY,
): { readonly block: Block; readonly ordinals: readonly number[] } {
  checkHandle(handle);
  if (!Number.isInteger(count) || count < 0)
    throw new RangeError(`Cannot allocate from a block as 'count' must be a non-negative integer: current value is ${count}`);
  const cap = blockCapacity(block.cidr);
  const ordinals: number[] = [];
  if (block.allocations.has(GATEWAY_ORDINAL)) return { block, ordinals };
  for (let i = 0; i < cap && ordinals.length < count; i++) {
    const o = (block.next + i) % cap;
    if (!block.allocations.has(o) && !reserved.has(o) && isUsableOrdinal(block.cidr, o)) ordinals.push(o);
  }
  if (ordinals.length === 0) return { block, ordinals };
  const allocations = new Map(block.allocations);
  for (const o of ordinals) allocations.set(o, handle);
  const next = ((ordinals[ordinals.length - 1] as number) + 1) % cap;
  return { block: withoutReleased({ ...block, allocations, next }, ordinals), ordinals };
}

/**
 * Gives ordinal `o` to `handle` (an explicitly requested address). The cursor does not move.
 * Throws RangeError when `o` is out of range or, unless `adopt` (recording an address a pod
 * already uses), not usable (network, gateway, broadcast); Error naming the holder when it is
 * taken — check excludedRole and holderOf first; reservations are the caller's business.
 */
export function assignOrdinal(block: Block, o: number, handle: string, adopt = false): Block {
  checkOrdinal(block.cidr, o);
  checkHandle(handle);
  const role = excludedRole(block.cidr, o);
  if (role !== undefined && !adopt) throw new RangeError(`Cannot assign ${formatAddr(addrOfOrdinal(block.cidr, o))}: it is ${role}`);
  const holder = block.allocations.get(o);
  if (holder !== undefined) {
    throw new Error(`Cannot assign ${formatAddr(addrOfOrdinal(block.cidr, o))}: it is held by handle "${holder}"`);
  }
  const allocations = new Map(block.allocations);
  allocations.set(o, handle);
  return withoutReleased({ ...block, allocations }, [o]);
}

/** The block without release entries for `ordinals` (they are held again). */
function withoutReleased(block: Block, ordinals: readonly number[]): Block {
  const r = block.released;
  if (!r || !ordinals.some((o) => r.has(o))) return block;
  const released = new Map(r);
  for (const o of ordinals) released.delete(o);
  return { ...block, released };
}

/**
 * Frees the given ordinals. Ordinals already free are ignored (release is idempotent);
 * `released` maps each freed ordinal to the handle that held it.
 */
export function releaseOrdinals(block: Block, ordinals: Iterable<number>): { readonly block: Block; readonly released: ReadonlyMap<number, string> } {
  const released = new Map<number, string>();
  for (const o of ordinals) {
    checkOrdinal(block.cidr, o);
    const h = block.allocations.get(o);
    if (h !== undefined) released.set(o, h);
  }
  if (released.size === 0) return { block, released };
  const allocations = new Map(block.allocations);
  for (const o of released.keys()) allocations.delete(o);
  return { block: { ...block, allocations }, released };
}

/** Frees every ordinal held by `handle`; `ordinals` lists them in ascending order. */
export function releaseHandle(block: Block, handle: string): { readonly block: Block; readonly ordinals: readonly number[] } {
  const ordinals = ordinalsOf(block, handle);
  return { block: releaseOrdinals(block, ordinals).block, ordinals };
}

/** The ordinals `handle` holds in the block, ascending. */
export function ordinalsOf(block: Block, handle: string): number[] {
  const out: number[] = [];
  for (const [o, h] of block.allocations) if (h === handle) out.push(o);
  return out.sort((a, b) => a - b);
}

/** How many ordinals each handle holds in the block. */
export function handleCounts(block: Block): Map<string, number> {
  const out = new Map<string, number>();
  for (const h of block.allocations.values()) out.set(h, (out.get(h) ?? 0) + 1);
  return out;
}

/** Number of allocated ordinals. */
export function allocatedCount(block: Block): number {
  return block.allocations.size;
}

/** Number of usable ordinals that are neither allocated nor in `reserved`: what allocateOrdinals can still hand out. */
export function freeCount(block: Block, reserved: ReadonlySet<number> = EMPTY): number {
  if (block.allocations.has(GATEWAY_ORDINAL)) return 0;
  let taken = 0;
  for (const o of block.allocations.keys()) if (isUsableOrdinal(block.cidr, o)) taken++;
  for (const o of reserved) if (!block.allocations.has(o) && isUsableOrdinal(block.cidr, o)) taken++;
  return Number(usableCount(block.cidr)) - taken;
}

/**
 * True when allocateOrdinals can hand out nothing whatever the reservations, found in constant
 * time (freeCount walks the allocations): the gateway is held, or the allocated usable ordinals
 * — all allocated ones less the network, gateway and broadcast ordinals among them — fill the
 * usable span. A planner skips a node's full blocks with it on every ADD.
 */
export function isFullBlock(block: Block): boolean {
  const a = block.allocations;
  if (a.has(GATEWAY_ORDINAL)) return true;
  const usable = Number(usableCount(block.cidr));
  if (a.size < usable) return false;
  const cap = blockCapacity(block.cidr);
  const unusable = (a.has(0) ? 1 : 0) + (block.cidr.family === 4 && cap > 2 && a.has(cap - 1) ? 1 : 0);
  return a.size - unusable >= usable;
}

/** True when no ordinal is allocated (reservations are not allocations). */
export function isEmptyBlock(block: Block): boolean {
  return block.allocations.size === 0;
}

/** The same block with another affinity (null orphans it). */
export function withAffinity(block: Block, affinity: string | null): Block {
  return { ...block, affinity };
}

const EMPTY: ReadonlySet<number> = new Set();

function checkOrdinal(cidr: Prefix, o: number): void {
  const cap = blockCapacity(cidr);
  if (!Number.isInteger(o) || o < 0 || o >= cap) {
    throw new RangeError(`Cannot use ordinal ${o} of block ${formatPrefix(cidr)}: it must be an integer from 0 to ${cap - 1}`);
  }
}

function checkHandle(handle: string): void {
  if (typeof handle !== 'string' || handle.length === 0) {
    throw new TypeError(`Cannot allocate as 'handle' must be a non-empty string: current value is ${JSON.stringify(handle)}`);
  }
}
