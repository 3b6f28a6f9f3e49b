/**
 * The planner's working state for one planAssign call: what it knows (the input), what it has
 * decided so far (blocks to write, addresses held and added, claim guards, the hold), and the
 * two signals that stop a plan to ask for more knowledge (NeedRead, NeedList). Pure, no I/O;
 * one PlanWork per call, thrown away afterwards.
 */
import { type Block, addrOfOrdinal, isFullBlock } from '../../alloc/block.js';
import { blockGateway } from '../../alloc/block-addressing.js';
import { quarantinedOrdinals } from '../../alloc/block-quarantine.js';
import { type Addr, type Family, type Prefix, addrEquals, formatPrefix, prefixContainsPrefix } from '../../ip/index.js';
import { nodeKey } from '../../model/node-record.js';
import { selectorMatches, selectorUsesLabels } from '../../model/node-selector.js';
import { type Pool, poolSpace, poolUsable, quarantineFor, type Assignment } from '../records/index.js';
import type { KnownBlock, OwnBlock } from '../views/index.js';
import type { PlanInput } from './assign-plan.js';
import { NamedPools } from './named-pools.js';

const ABSENT: KnownBlock = Object.freeze({ rev: 0, block: null });

/** Thrown inside a plan: these keys must be read first. */
export class NeedRead {
  constructor(readonly keys: string[]) {}
}
/** Thrown inside a plan: this listing must be made first (`from`: where a scan of the blocks starts, see AssignPlan). */
export class NeedList {
  constructor(
    readonly what: 'list-claimed' | 'list-blocks',
    readonly from?: string,
  ) {}
}

/** The state one plan builds up; its parts (take-over, specific, ip-set, automatic) share it. */
export class PlanWork {
  readonly input: PlanInput;
  readonly work = new Map<string, { rev: number; block: Block; claimed: boolean }>();
  readonly verify = new Map<string, number>();
  readonly delta = new Map<string, number>();
  readonly held: Assignment[] = [];
  readonly added: Assignment[] = [];
  /** Claimed key → the other-sized keys its claim compares absent. */
  readonly guards = new Map<string, readonly string[]>();
  usedLabels = false;
  /** The pools the request names, each entry resolved once per plan. */
  readonly named: NamedPools;
  /** The hold's revision once consulted (compared), and whether its addresses are taken over. */
  hold: { rev: number; taken: boolean } | undefined;
  readonly now: number;

  constructor(input: PlanInput) {
    if (input.mine.node !== input.req.node) throw new Error(`planAssign: the view of node "${input.mine.node}" for a request of node "${input.req.node}"`);
    this.input = input;
    this.named = new NamedPools(input.snap.pools, input.req);
    this.now = Date.parse(input.now);
  }

  /** Ordinals of `block` its pool's quarantine keeps back now, with their ends. */
  quarantine(block: Block): Map<number, number> {
    return quarantinedOrdinals(block, quarantineFor(this.input.snap.pools, block.cidr, this.now));
  }

  state(key: string): KnownBlock | undefined {
    const w = this.work.get(key);
    if (w) return w;
    return this.input.mine.get(key) ?? this.input.others.get(key) ?? (this.input.allListed ? ABSENT : undefined);
  }

  put(key: string, rev: number, block: Block, claimed: boolean, ordinals: readonly number[]): void {
    this.#blocksOfOthers.clear();
    const prev = this.work.get(key);
    this.work.set(key, { rev, block, claimed: claimed || (prev?.claimed ?? false) });
    const cidr = formatPrefix(block.cidr);
    this.delta.set(cidr, (this.delta.get(cidr) ?? 0) + ordinals.length);
    for (const o of ordinals) this.added.push(this.assignment(addrOfOrdinal(block.cidr, o), block.cidr));
  }

  assignment(addr: Addr, block: Prefix): Assignment {
    const pool = this.input.snap.pools.find((p) => prefixContainsPrefix(poolSpace(p), block));
    return { addr, pool: pool?.name ?? '', prefixLen: block.len, gateway: blockGateway(block), block };
  }

  holds(a: Addr): boolean {
    return [...this.held, ...this.added].some((x) => addrEquals(x.addr, a));
  }

  /** Usable pools of `family` selecting this node, in preference order. */
  candidates(family: Family): Pool[] {
    return this.named.forFamily(family).filter((p) => p.cidr.family === family && poolUsable(p) && this.selects(p));
  }

  selects(p: Pool): boolean {
    if (!selectorUsesLabels(p.nodeSelector)) return true;
    this.usedLabels = true;
    if (!this.input.labels) throw new NeedRead([nodeKey(this.input.req.node)]);
    return selectorMatches(p.nodeSelector, this.input.labels.labels);
  }

  /**
   * The node's blocks inside `pool` with a free address, lowest address first: the view's
   * index (own-blocks.ts), under what this call read and planned. Lazy: a take that is
   * satisfied by the first block never walks the rest, so an ADD costs the same however many
   * blocks the node holds.
   */
  *ownWithRoom(pool: Pool): Generator<[string, OwnBlock]> {
    const { mine } = this.input;
    const node = this.input.req.node;
    const changed = this.#callBlocks();
    const extra: [string, OwnBlock][] = [];
    for (const [k, kb] of changed) {
      const b = kb.block;
      if (b && b.affinity === node && prefixContainsPrefix(pool.cidr, b.cidr) && !isFullBlock(b)) extra.push([k, { rev: kb.rev, block: b }]);
    }
    extra.sort((a, b) => (a[1].block.cidr.base < b[1].block.cidr.base ? -1 : 1));
    let i = 0;
    for (const [k, kb] of mine.withRoomIn(pool.cidr)) {
      if (changed.has(k) || !prefixContainsPrefix(pool.cidr, kb.block.cidr)) continue;
      for (; i < extra.length && extra[i]![1].block.cidr.base < kb.block.cidr.base; i++) yield extra[i]!;
      yield [k, kb];
    }
    for (; i < extra.length; i++) yield extra[i]!;
  }

  /**
   * How many of the node's blocks lie inside `pool`, and the furthest of their `position`s
   * (-1 when none counts): the view's cached fold (own-blocks.ts) under what this call read
   * and planned, so a claim does not walk every block the node holds. `position` must be the
   * same function for one pool's name, CIDR and block size.
   */
  ownIn(pool: Pool, position: (cidr: Prefix) => bigint): OwnCount {
    const { mine } = this.input;
    const node = this.input.req.node;
    // The call's own blocks that the view lacks count on top of the cached fold; one the view has
    // keeps its CIDR and its node (a plan fills the node's blocks, it never gives one away).
    const step = ownStep(pool.cidr, position);
    let acc = mine.fold(`own\n${node}\n${pool.name}\n${formatPrefix(pool.cidr)}\n${pool.blockSize}`, NO_OWN, step);
    for (const [k, kb] of this.#callBlocks()) if (!mine.has(k) && kb.block?.affinity === node) acc = step(acc, kb.block.cidr);
    return acc;
  }

  /** The blocks this call read (others) and planned (work), the plan's state of each. */
  #callBlocks(): Map<string, KnownBlock> {
    const out = new Map<string, KnownBlock>();
    for (const [k, kb] of this.input.others) if (!this.input.mine.has(k)) out.set(k, kb);
    for (const [k, kb] of this.work) out.set(k, kb);
    return out;
  }

  /** Blocks known to other nodes inside `pool` (this call's reads and plans), by address. */
  blocksOfOthers(pool: Pool): readonly [string, KnownBlock][] {
    const id = `${pool.name}\n${formatPrefix(pool.cidr)}`;
    let found = this.#blocksOfOthers.get(id);
    if (!found) this.#blocksOfOthers.set(id, (found = this.#findBlocksOfOthers(pool)));
    return found;
  }

  readonly #blocksOfOthers = new Map<string, [string, KnownBlock][]>();

  #findBlocksOfOthers(pool: Pool): [string, KnownBlock][] {
    const node = this.input.req.node;
    const seen = [...this.#callBlocks()].filter(([, kb]) => kb.block && kb.block.affinity !== node && prefixContainsPrefix(pool.cidr, kb.block.cidr));
    return seen.sort((a, b) => (a[1].block!.cidr.base < b[1].block!.cidr.base ? -1 : 1));
  }
}

/** How many of the node's blocks a pool holds, and the furthest of their claim positions (-1: none). */
export interface OwnCount {
  readonly count: number;
  readonly furthest: bigint;
}

const NO_OWN: OwnCount = Object.freeze({ count: 0, furthest: -1n });

/**
 * ownIn's fold step. Built here, apart from any plan: the view caches it for its life, and a
 * closure made inside a PlanWork method would keep that plan (its reads, a borrow's pages) alive.
 */
function ownStep(space: Prefix, position: (cidr: Prefix) => bigint): (acc: OwnCount, cidr: Prefix) => OwnCount {
  return (acc, cidr) => {
    if (!prefixContainsPrefix(space, cidr)) return acc;
    const at = position(cidr);
    return { count: acc.count + 1, furthest: at > acc.furthest ? at : acc.furthest };
  };
}
