/**
 * The blocks affine to one node, by key, with two indexes kept as blocks come and go so an ADD
 * costs the same however many blocks the node holds: the blocks with a free address in address
 * order (where an ADD takes from; a node's full blocks are never walked), and folds over every
 * block's CIDR (how many a pool holds, where the next claim's probe resumes), each computed once
 * and brought up to date as blocks arrive, recomputed only after one leaves.
 */
import { type Block, isFullBlock } from '../../alloc/block.js';
import type { Prefix } from '../../ip/index.js';

/** A block as last seen, with the revision it was read or written at. */
export interface OwnBlock {
  readonly rev: number;
  readonly block: Block;
}

/** What a planner reads of a node's blocks (OwnBlocks without its writers). */
export interface OwnBlockIndex extends ReadonlyMap<string, OwnBlock> {
  /** Every block here is affine to this node. */
  readonly node: string;
  /** The blocks inside `space` with a free address (isFullBlock false), lowest address first. */
  withRoomIn(space: Prefix): Generator<[string, OwnBlock]>;
  /**
   * `step` folded over every block's CIDR from `init`, cached under `id` until a block leaves.
   * One `id` must always name the same fold: a later call's `init` and `step` are not used
   * while the cache holds it, and `step` sees only CIDRs (a block's key never changes its CIDR).
   */
  fold<A>(id: string, init: A, step: (acc: A, cidr: Prefix) => A): A;
}

interface Fold {
  value: unknown;
  readonly step: (acc: unknown, cidr: Prefix) => unknown;
}

/** The blocks of `node`: a block affine to another node is refused (RangeError). */
export class OwnBlocks extends Map<string, OwnBlock> implements OwnBlockIndex {
  /** Keys of the blocks with room, by (family, base address). */
  #room: string[] = [];
  readonly #hasRoom = new Set<string>();
  #folds = new Map<string, Fold>();

  /** Filled with `set` (a Map's constructor would call it before the indexes exist). */
  constructor(readonly node: string) {
    super();
  }

  /** An index of `entries` (tests; a view fills one block at a time). */
  static of(node: string, entries: Iterable<readonly [string, OwnBlock]> = []): OwnBlocks {
    const o = new OwnBlocks(node);
    for (const [k, v] of entries) o.set(k, v);
    return o;
  }

  /** A copy whose changes leave this one as it is (a batch of plans builds on it). */
  copy(): OwnBlocks {
    const o = new OwnBlocks(this.node);
    for (const [k, v] of this) Map.prototype.set.call(o, k, v);
    o.#room = [...this.#room];
    for (const k of this.#hasRoom) o.#hasRoom.add(k);
    o.#folds = new Map([...this.#folds].map(([id, f]) => [id, { ...f }]));
    return o;
  }

  override set(key: string, value: OwnBlock): this {
    if (value.block.affinity !== this.node)
      throw new RangeError(`Cannot index block "${key}" as node "${this.node}"'s: its affinity is ${JSON.stringify(value.block.affinity)}`);
    const isNew = !super.has(key);
    super.set(key, value);
    if (isNew) for (const f of this.#folds.values()) f.value = f.step(f.value, value.block.cidr);
    const room = !isFullBlock(value.block);
    if (room && !this.#hasRoom.has(key)) {
      this.#hasRoom.add(key);
      this.#room.splice(this.#at(value.block.cidr), 0, key);
    } else if (!room && this.#hasRoom.has(key)) this.#leaveRoom(key, value.block.cidr);
    return this;
  }

  override delete(key: string): boolean {
    const prev = super.get(key);
    if (prev === undefined) return false;
    if (this.#hasRoom.has(key)) this.#leaveRoom(key, prev.block.cidr);
    this.#folds.clear();
    return super.delete(key);
  }

  override clear(): void {
    super.clear();
    this.#room = [];
    this.#hasRoom.clear();
    this.#folds.clear();
  }

  *withRoomIn(space: Prefix): Generator<[string, OwnBlock]> {
    const end = space.base + (1n << BigInt((space.family === 4 ? 32 : 128) - space.len));
    for (let i = this.#at(space); i < this.#room.length; i++) {
      const key = this.#room[i]!;
      const kb = super.get(key)!;
      if (kb.block.cidr.family !== space.family || kb.block.cidr.base >= end) return;
      yield [key, kb];
    }
  }

  fold<A>(id: string, init: A, step: (acc: A, cidr: Prefix) => A): A {
    let f = this.#folds.get(id);
    if (f === undefined) {
      let value = init;
      for (const { block } of this.values()) value = step(value, block.cidr);
      this.#folds.set(id, (f = { value, step: step as Fold['step'] }));
    }
    return f.value as A;
  }

  #leaveRoom(key: string, cidr: Prefix): void {
    this.#hasRoom.delete(key);
    // Blocks of one node never overlap, so the first at or after `cidr` is the block itself.
    const i = this.#at(cidr);
    if (this.#room[i] === key) this.#room.splice(i, 1);
    else this.#room.splice(this.#room.indexOf(key), 1);
  }

  /** Where `cidr` goes in #room: the first key whose block is not before it. */
  #at(cidr: Prefix): number {
    let lo = 0;
    let hi = this.#room.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const b = super.get(this.#room[mid]!)!.block.cidr;
      if (b.family < cidr.family || (b.family === cidr.family && b.base < cidr.base)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
