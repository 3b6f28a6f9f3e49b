/**
 * The planner's working state for one planAssign call: what it knows (the input), what it has
 * decided so far (blocks to write, addresses held and added, claim guards, the hold), and the
 * two signals that stop a plan to ask for more knowledge (NeedRead, NeedList). Pure, no I/O;
 * one PlanWork per call, thrown away afterwards.
 */
import { type Block, addrOfOrdinal } from '../../alloc/block.js';
import { blockGateway } from '../../alloc/block-addressing.js';
import { quarantinedOrdinals } from '../../alloc/block-quarantine.js';
import { type Addr, type Family, type Prefix, addrEquals, formatPrefix, prefixContainsPrefix } from '../../ip/index.js';
import { nodeKey } from '../../model/node-record.js';
import { selectorMatches, selectorUsesLabels } from '../../model/node-selector.js';
import { type Pool, poolSpace, poolUsable, quarantineFor, type Assignment } from '../records/index.js';
import type { KnownBlock } from '../views/index.js';
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
    this.#blocksIn.clear();
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

  /** Known blocks inside `pool` that are (mine=true) or are not affine to this node, by address (kept until the next put). */
  blocksIn(pool: Pool, mine: boolean): readonly [string, KnownBlock][] {
    const id = `${mine ? 'mine' : 'others'}\n${pool.name}\n${formatPrefix(pool.cidr)}`;
    let found = this.#blocksIn.get(id);
    if (!found) this.#blocksIn.set(id, (found = this.#findBlocksIn(pool, mine)));
    return found;
  }

  readonly #blocksIn = new Map<string, [string, KnownBlock][]>();

  #findBlocksIn(pool: Pool, mine: boolean): [string, KnownBlock][] {
    const node = this.input.req.node;
    const seen = new Map<string, KnownBlock>();
    for (const src of [this.input.others, this.input.mine, this.work] as ReadonlyMap<string, KnownBlock>[]) {
      for (const [k, kb] of src) {
        const b = kb.block;
        if (b && (b.affinity === node) === mine && prefixContainsPrefix(pool.cidr, b.cidr)) seen.set(k, kb);
      }
    }
    return [...seen].sort((a, b) => (a[1].block!.cidr.base < b[1].block!.cidr.base ? -1 : 1));
  }
}
