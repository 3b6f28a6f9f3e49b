/**
 * Plans one assignment as ONE datastore transaction, purely: from a cluster snapshot and the
 * blocks known so far, it either asks for more knowledge (`read` some keys, `list-claimed`
 * block CIDRs, `list-blocks` with their contents) or
 * returns the compares and writes that, applied atomically, give a handle its addresses —
 * every family, new blocks claimed and the handle record updated together, so a dual-stack
 * request is all-or-nothing without any undo, and a crash can never separate a block from
 * its handle. The compares cover every record the plan was derived from (config/generation,
 * node labels when a selector used them, each block, the handle), so the transaction succeeds
 * only if the plan's view of the world was current.
 *
 * Reuse quarantine (src/alloc/block-quarantine.ts): no address of a pool with `reuseAfter` is
 * handed out — automatically, from an ip-set or as a requested address — while its block says
 * it was released less than that long ago; the block is compared, so the plan saw its current
 * release times. A takeover of a sticky hold hands out nothing new (the hold kept the address).
 * Every block the plan writes drops the release entries whose quarantine is over.
 */
import { type Block, addrOfOrdinal, allocateOrdinals, assignOrdinal, holderOf, newBlock, ordinalOf, ordinalsOf } from '../../alloc/block.js';
import { blockGateway, excludedRole } from '../../alloc/block-addressing.js';
import { quarantineHeld, quarantinedOrdinals, stampReleases } from '../../alloc/block-quarantine.js';
import { reservedOrdinals } from '../../alloc/block-layout.js';
import {
  type Addr,
  type Family,
  type Prefix,
  addrEquals,
  formatAddr,
  formatPrefix,
  parsePrefix,
  prefixContains,
  prefixContainsPrefix,
  prefixOf,
} from '../../ip/index.js';
import type { Compare, Op } from '../../store/index.js';
import { nodeKey } from '../../model/node-record.js';
import { nodeTombstoneKey } from '../../model/node-tombstone.js';
import { encodeAffinity } from '../records/affinity-record.js';
import { encodeBlock } from '../records/block-record.js';
import { type ClaimCandidate, claimGuards, findClaimableBlock } from './claim-candidate.js';
import type { ClusterSnapshot } from '../views/cluster-snapshot.js';
import { AddressUnavailableError, NoPoolError, PoolExhaustedError } from '../service/errors.js';
import { IpSetExhaustedError, NoIpSetError } from '../records/ip-set-errors.js';
import { ipSetBlocks, ipSetOf } from '../records/ip-set-record.js';
import { PlacementError } from '../../model/placement.js';
import { NamedPools } from './named-pools.js';
import type { AssignRequest, Assignment } from './assignment.js';
import { type HandleRecord, adjustHandle, encodeHandle } from '../records/handle-record.js';
import { effectiveMaxBlocks } from '../records/ipam-config.js';
import { CONFIG_KEY, affinityKey, blockKey, handleKey } from '../records/keys.js';
import type { KnownBlock } from '../views/node-view.js';
import { selectorMatches, selectorUsesLabels } from '../../model/node-selector.js';
import { type Pool, poolBlockSizes, poolSpace, poolUnusableWhy, poolUsable } from '../records/pool-record.js';
import { quarantineFor } from '../txn/pool-quarantine.js';

export interface PlanInput {
  readonly req: AssignRequest;
  readonly snap: ClusterSnapshot;
  /** The node's labels and record revision; undefined when not read yet. */
  readonly labels: { readonly rev: number; readonly labels: Readonly<Record<string, string>> } | undefined;
  /** Blocks affine to the node. */
  readonly mine: ReadonlyMap<string, KnownBlock>;
  /** Other blocks seen during this call (foreign ones and known-absent ones). */
  readonly others: ReadonlyMap<string, KnownBlock>;
  /** True once every block was listed: an unknown key is then known to be absent. */
  readonly allListed: boolean;
  /** Claims that failed because the block existed; after MAX_CLAIM_MISSES the planner asks for a list. */
  readonly claimMisses: number;
  /** Keys of every block claimed by some node (from the affinity list), once listed. */
  readonly claimed: ReadonlySet<string> | undefined;
  /** Keys of blocks seen held by other nodes in earlier calls (NodeView.claimedByOthers): skipped when claiming. */
  readonly claimedByOthers?: ReadonlySet<string>;
  /** The handle as believed: rev 0 and no record = absent. */
  readonly handle: { readonly rev: number; readonly record: HandleRecord | undefined };
  /** ISO time written on claimed affinities. */
  readonly now: string;
  /** The state of `req.takeOver`'s hold (record undefined = absent); omitted = not read yet. */
  readonly hold?: { readonly rev: number; readonly record: HandleRecord | undefined };
}

export type { AssignRequest, Assignment } from './assignment.js';

export type AssignPlan =
  | { readonly kind: 'read'; readonly keys: readonly string[] }
  /** List the affinities: which block CIDRs are claimed (small records; enough to choose a claim). */
  | { readonly kind: 'list-claimed' }
  /** List every block with its contents (to borrow from another node's block). */
  | { readonly kind: 'list-blocks' }
  | {
      readonly kind: 'txn';
      readonly compares: readonly Compare[];
      readonly ops: readonly Op[];
      /** Everything the handle holds once the txn succeeds (IPv4 first). */
      readonly assignments: readonly Assignment[];
      /** Blocks the txn writes, by key. */
      readonly blocks: ReadonlyMap<string, Block>;
      /** The handle record after the txn (undefined when the handle holds nothing). */
      readonly handle: HandleRecord | undefined;
      /** True when the txn writes the handle record. */
      readonly writesHandle: boolean;
      /** Keys of blocks this txn creates (a failed compare on one means someone else has it). */
      readonly claims: readonly string[];
      /** Keys of other-sized blocks the claims compare absent (a failed one: a block overlaps the claim). */
      readonly guards: readonly string[];
      /** True when the txn takes `req.takeOver`'s addresses over (and deletes the hold). */
      readonly tookOver?: boolean;
    };

/**
 * Failed claims tolerated before listing every affinity rather than guessing. A miss costs one
 * txn; the list costs a range over every node's affinities (at 20,000 nodes, 56,000 records,
 * 0.3-1.8 s of the etcd leader's time). Probes are hashed, so with a fraction p of the pool's
 * blocks claimed, k misses in a row happen with probability p^k: at 3, a pool 17% full sent
 * one claim in 200 to the list (hundreds of lists in the million-pod run); at 8, a pool half
 * full lists once in 256 claims, and a nearly full one pays 8 small txns before it lists.
 */
export const MAX_CLAIM_MISSES = 8;

const ABSENT: KnownBlock = Object.freeze({ rev: 0, block: null });

class NeedRead {
  constructor(readonly keys: string[]) {}
}
class NeedList {
  constructor(readonly what: 'list-claimed' | 'list-blocks') {}
}

/**
 * Plans `input.req`. Throws PoolExhaustedError, NoPoolError or AddressUnavailableError (with
 * their data) when the request cannot be met from the current knowledge — the caller's txn
 * loop only calls it again after the knowledge changed.
 */
export function planAssign(input: PlanInput): AssignPlan {
  try {
    return new Planner(input).run();
  } catch (e) {
    if (e instanceof NeedRead) return { kind: 'read', keys: e.keys };
    if (e instanceof NeedList) return { kind: e.what };
    throw e;
  }
}

class Planner {
  readonly #in: PlanInput;
  readonly #work = new Map<string, { rev: number; block: Block; claimed: boolean }>();
  readonly #verify = new Map<string, number>();
  readonly #delta = new Map<string, number>();
  readonly #held: Assignment[] = [];
  readonly #added: Assignment[] = [];
  /** Claimed key → the other-sized keys its claim compares absent. */
  readonly #guards = new Map<string, readonly string[]>();
  #usedLabels = false;
  /** The pools the request names, each entry resolved once per plan. */
  readonly #named: NamedPools;
  /** The hold's revision once consulted (compared), and whether its addresses are taken over. */
  #hold: { rev: number; taken: boolean } | undefined;
  readonly #now: number;

  constructor(input: PlanInput) {
    this.#in = input;
    this.#named = new NamedPools(input.snap.pools, input.req);
    this.#now = Date.parse(input.now);
  }

  /** Ordinals of `block` its pool's quarantine keeps back now, with their ends. */
  #quarantine(block: Block): Map<number, number> {
    return quarantinedOrdinals(block, quarantineFor(this.#in.snap.pools, block.cidr, this.#now));
  }

  run(): AssignPlan {
    this.#collectHeld();
    if (this.#in.req.attachment && this.#held.length > 0) return this.#repeated();
    this.#takeOver();
    this.#assignSpecific();
    this.#assignFromSet();
    this.#assignAuto();
    return this.#build();
  }

  #state(key: string): KnownBlock | undefined {
    const w = this.#work.get(key);
    if (w) return w;
    return this.#in.mine.get(key) ?? this.#in.others.get(key) ?? (this.#in.allListed ? ABSENT : undefined);
  }

  #put(key: string, rev: number, block: Block, claimed: boolean, ordinals: readonly number[]): void {
    const prev = this.#work.get(key);
    this.#work.set(key, { rev, block, claimed: claimed || (prev?.claimed ?? false) });
    const cidr = formatPrefix(block.cidr);
    this.#delta.set(cidr, (this.#delta.get(cidr) ?? 0) + ordinals.length);
    for (const o of ordinals) this.#added.push(this.#assignment(addrOfOrdinal(block.cidr, o), block.cidr));
  }

  #assignment(addr: Addr, block: Prefix): Assignment {
    const pool = this.#in.snap.pools.find((p) => prefixContainsPrefix(poolSpace(p), block));
    return { addr, pool: pool?.name ?? '', prefixLen: block.len, gateway: blockGateway(block), block };
  }

  /** Addresses the handle already holds (a repeated ADD returns them). */
  #collectHeld(): void {
    const { record } = this.#in.handle;
    if (!record) return;
    const keys = [...record.blocks.keys()].map((c) => blockKey(parsePrefix(c)));
    const missing = keys.filter((k) => this.#state(k) === undefined);
    if (missing.length > 0) throw new NeedRead(missing);
    for (const key of keys) {
      const st = this.#state(key)!;
      this.#verify.set(key, st.rev);
      if (st.block)
        for (const o of ordinalsOf(st.block, this.#in.req.handle)) this.#held.push(this.#assignment(addrOfOrdinal(st.block.cidr, o), st.block.cidr));
    }
  }

  /** A repeated ADD of an attachment that holds addresses: those, unless it asks for one it does not hold. */
  #repeated(): AssignPlan {
    const { req } = this.#in;
    const missing = (req.ips ?? []).find((ip) => !this.#holds(ip));
    if (missing !== undefined) {
      const holds = this.#held.map((a) => formatAddr(a.addr)).join(', ');
      throw new AddressUnavailableError(
        formatAddr(missing),
        'attachment-holds',
        `this attachment (handle "${req.handle}") already holds ${holds} from its earlier ADD; a repeated ADD returns what it holds and cannot change it (DEL the attachment first)`,
        req.handle,
      );
    }
    return this.#build();
  }

  /**
   * A sticky pod's next incarnation takes over what its hold keeps (src/cluster/records/sticky-hold-id.ts):
   * the hold's ordinals change holder to this handle, the hold record is deleted, all in this
   * txn, comparing the hold and its blocks. Only for an automatic request of a handle holding
   * nothing yet, and only all of the hold or none of it: an expired hold (GC's), one whose
   * addresses this request could not be given (a pool it does not draw from, disabled, not
   * selecting the node; a block of another node under strictAffinity; more addresses of a
   * family than asked for) is left alone and the request is served as usual. The hold is
   * compared even when absent or left alone, so a hold written meanwhile is seen on the retry.
   */
  #takeOver(): void {
    const { req, now } = this.#in;
    if (req.takeOver === undefined || !req.auto || (req.ips?.length ?? 0) > 0 || this.#held.length > 0) return;
    const hs = this.#in.hold;
    if (hs === undefined) throw new NeedRead([handleKey(req.takeOver)]);
    this.#hold = { rev: hs.rev, taken: false };
    const rec = hs.record;
    if (!rec || rec.stickyUntil === undefined || Date.parse(rec.stickyUntil) <= Date.parse(now)) return;
    const keys = [...rec.blocks.keys()].map((c) => blockKey(parsePrefix(c)));
    const missing = keys.filter((k) => this.#state(k) === undefined);
    if (missing.length > 0) throw new NeedRead(missing);
    const moves: { key: string; rev: number; block: Block; ordinals: number[] }[] = [];
    const perFamily = new Map<Family, number>();
    for (const key of keys) {
      const st = this.#state(key)!;
      this.#verify.set(key, st.rev);
      if (!st.block) continue;
      const ordinals = ordinalsOf(st.block, req.takeOver);
      if (ordinals.length === 0) continue;
      const family = st.block.cidr.family;
      const pool = this.#candidates(family).find((p) => prefixContainsPrefix(p.cidr, st.block!.cidr));
      if (!pool) return;
      if (st.block.affinity !== req.node && this.#in.snap.config.strictAffinity) return;
      perFamily.set(family, (perFamily.get(family) ?? 0) + ordinals.length);
      moves.push({ key, rev: st.rev, block: st.block, ordinals });
    }
    for (const [family, n] of perFamily) if (n > (req.auto === 'each-family' ? 1 : (req.auto[family] ?? 0))) return;
    if (moves.length === 0) return;
    for (const m of moves) {
      const allocations = new Map(m.block.allocations);
      for (const o of m.ordinals) allocations.set(o, req.handle);
      this.#put(m.key, m.rev, { ...m.block, allocations }, false, m.ordinals);
    }
    this.#hold.taken = true;
  }

  #holds(a: Addr): boolean {
    return [...this.#held, ...this.#added].some((x) => addrEquals(x.addr, a));
  }

  #assignSpecific(): void {
    const { req, snap } = this.#in;
    const targets: { ip: Addr; cidr: Prefix; key: string }[] = [];
    const missing: string[] = [];
    for (const ip of req.ips ?? []) {
      if (this.#holds(ip) || targets.some((t) => addrEquals(t.ip, ip))) continue;
      const text = formatAddr(ip);
      const pool = snap.pools.find((p) => prefixContains(p.cidr, ip));
      if (!pool) throw new AddressUnavailableError(text, 'no-pool', 'it is not in any pool');
      if (!poolUsable(pool)) throw new AddressUnavailableError(text, 'pool-disabled', `pool "${pool.name}" is ${poolUnusableWhy(pool)}`);
      if (snap.reserved.contains(ip)) throw new AddressUnavailableError(text, 'reserved', 'it is reserved');
      const set = req.adopt ? undefined : ipSetOf(snap.ipSets, ip);
      if (set) throw new AddressUnavailableError(text, 'reserved', `it belongs to ip-set "${set.name}"`);
      // The block holding it: an existing one of any of the pool's sizes, else a new one of its size.
      const keys = poolBlockSizes(pool).map((s) => blockKey(prefixOf(ip, s)));
      const unknown = keys.filter((k) => this.#state(k) === undefined);
      if (unknown.length > 0) {
        missing.push(...unknown);
        continue;
      }
      const existing = poolBlockSizes(pool)
        .map((s) => prefixOf(ip, s))
        .find((c) => this.#state(blockKey(c))?.block);
      const cidr = existing ?? prefixOf(ip, pool.blockSize);
      const role = excludedRole(cidr, ordinalOf(cidr, ip));
      if (role !== undefined && !req.adopt) throw new AddressUnavailableError(text, 'unusable', `it is ${role} (never handed out)`);
      const key = blockKey(cidr);
      if (!existing) {
        const guards = claimGuards(pool, cidr);
        const over = guards.find((g) => this.#state(g)?.block);
        if (over)
          throw new AddressUnavailableError(
            text,
            'unusable',
            `its /${pool.blockSize} block ${formatPrefix(cidr)} would overlap the existing block ${over.slice('blocks/'.length).replace('-', '/')}`,
          );
        this.#guards.set(key, guards);
      }
      targets.push({ ip, cidr, key });
    }
    if (missing.length > 0) throw new NeedRead(missing);
    for (const t of targets) {
      const st = this.#state(t.key)!;
      const claimed = st.block === null;
      const block = st.block ?? newBlock(t.cidr, req.node);
      if (block.affinity !== req.node && snap.config.strictAffinity) {
        throw new AddressUnavailableError(
          formatAddr(t.ip),
          'foreign-block',
          `its block ${formatPrefix(t.cidr)} is affine to ${block.affinity ? `node "${block.affinity}"` : 'no node'} and strictAffinity is on`,
        );
      }
      const o = ordinalOf(t.cidr, t.ip);
      const holder = holderOf(block, o);
      if (holder !== undefined && holder !== req.handle) {
        throw new AddressUnavailableError(formatAddr(t.ip), 'taken', `it is held by handle "${holder}"`, holder);
      }
      if (holder === req.handle) continue;
      const until = this.#quarantine(block).get(o);
      if (until !== undefined) {
        throw new AddressUnavailableError(
          formatAddr(t.ip),
          'quarantined',
          `it was released recently and is quarantined until ${new Date(until).toISOString()} (pool reuseAfter)`,
        );
      }
      this.#put(t.key, st.rev, assignOrdinal(block, o, req.handle, req.adopt), claimed, [o]);
    }
  }

  /**
   * `req.ipSet`: the lowest free address of the set (unless the handle holds one already), as a
   * specific address of its block — read, claimed when absent, borrowed from another node's
   * block unless strictAffinity. Other families are left to #assignAuto.
   */
  #assignFromSet(): void {
    const { req, snap } = this.#in;
    if (req.ipSet === undefined) return;
    const unusable = (problem: string): never => {
      if (req.placedBy) throw new PlacementError(req.placedBy.source, req.placedBy.pod, problem);
      throw new NoIpSetError(req.ipSet!, problem);
    };
    const set = snap.ipSets.find((s) => s.name === req.ipSet);
    if (!set) return unusable(`ip-set "${req.ipSet}" does not exist`);
    if ([...this.#held, ...this.#added].some((a) => set.addrs.contains(a.addr))) return;
    const pool = snap.pools.find((p) => p.name === set.pool);
    if (!pool) return unusable(`its pool "${set.pool}" does not exist`);
    if (!poolUsable(pool)) return unusable(`its pool "${pool.name}" is ${poolUnusableWhy(pool)}`);
    const size = Number(set.addrs.size());
    const keys = ipSetBlocks(set.addrs, pool.blockSize).map(blockKey);
    const missing = keys.filter((k) => this.#state(k) === undefined);
    if (missing.length > 0) throw new NeedRead(missing);
    let held = 0;
    let foreign = 0;
    let quarantined = 0;
    let firstEnd = Infinity;
    for (const a of set.addrs.addrs()) {
      const cidr = prefixOf(a, pool.blockSize);
      const o = ordinalOf(cidr, a);
      if (excludedRole(cidr, o) !== undefined || snap.reserved.contains(a)) continue;
      const key = blockKey(cidr);
      const st = this.#state(key)!;
      const block = st.block ?? newBlock(cidr, req.node);
      if (holderOf(block, o) !== undefined) {
        held++;
        continue;
      }
      const until = this.#quarantine(block).get(o);
      if (until !== undefined) {
        quarantined++;
        firstEnd = Math.min(firstEnd, until);
        continue;
      }
      if (block.affinity !== req.node && snap.config.strictAffinity) {
        foreign++;
        continue;
      }
      this.#put(key, st.rev, assignOrdinal(block, o, req.handle), st.block === null, [o]);
      return;
    }
    const why = [
      ...(foreign > 0 ? [`${foreign} free one${foreign === 1 ? ' is' : 's are'} in blocks of other nodes and strictAffinity is on`] : []),
      ...(quarantined > 0
        ? [
            `${quarantined} free one${quarantined === 1 ? ' is' : 's are'} quarantined after ${quarantined === 1 ? 'its' : 'their'} release (pool reuseAfter) until ${new Date(firstEnd).toISOString()} at the earliest`,
          ]
        : []),
    ];
    throw new IpSetExhaustedError(set.name, size, held, why.length > 0 ? why.join('; ') : undefined);
  }

  #assignAuto(): void {
    const { req } = this.#in;
    if (!req.auto) return;
    for (const n of req.pools ?? []) {
      // With an ip-set the pools are the network's own (for the other families), not the annotation's.
      if (req.placedBy && req.ipSet === undefined) this.#checkPlaced(n);
      else if (this.#named.of(n).length === 0) throw new NoPoolError(undefined, req.node, req.pools, `pool "${n}" does not exist`);
    }
    const wanted: [Family, number][] =
      req.auto === 'each-family'
        ? ([4, 6] as Family[]).filter((f) => this.#candidates(f).length > 0).map((f) => [f, 1])
        : (
            [
              [4, req.auto[4] ?? 0],
              [6, req.auto[6] ?? 0],
            ] as [Family, number][]
          ).filter(([, n]) => n > 0);
    // An ip-set's address alone is an answer: no pool of another family is needed.
    if (wanted.length === 0 && req.auto === 'each-family' && this.#held.length + this.#added.length === 0)
      throw new NoPoolError(undefined, req.node, req.pools, this.#whyNoPool(undefined));
    for (const [family, n] of wanted) {
      // What the handle holds already answers a repeated request, even from a pool that now serves nothing new (drained, disabled).
      const have = [...this.#held, ...this.#added].filter((a) => a.addr.family === family).length;
      if (have >= n) continue;
      const cands = this.#candidates(family);
      if (cands.length === 0) throw new NoPoolError(family, req.node, req.pools, this.#whyNoPool(family));
      this.#fill(family, n - have, n, cands);
    }
  }

  /**
   * A pool an annotation names (placedBy) must exist, be usable, select the node and — named for
   * one family — be of that family; a pattern must match such a pool (named-pools.ts): else
   * PlacementError (code 7) naming the annotation and the pod, never a fallback to other pools.
   */
  #checkPlaced(entry: string): void {
    const { source, pod } = this.#in.req.placedBy!;
    const problem = this.#named.placedProblem(entry, this.#in.req.node, (p) => this.#selects(p));
    if (problem !== undefined) throw new PlacementError(source, pod, problem);
  }

  /** Usable pools of `family` selecting this node, in preference order. */
  #candidates(family: Family): Pool[] {
    return this.#named.forFamily(family).filter((p) => p.cidr.family === family && poolUsable(p) && this.#selects(p));
  }

  #selects(p: Pool): boolean {
    if (!selectorUsesLabels(p.nodeSelector)) return true;
    this.#usedLabels = true;
    if (!this.#in.labels) throw new NeedRead([nodeKey(this.#in.req.node)]);
    return selectorMatches(p.nodeSelector, this.#in.labels.labels);
  }

  #whyNoPool(family: Family | undefined): string {
    const { req } = this.#in;
    const pools = this.#named.forFamily(family).filter((p) => family === undefined || p.cidr.family === family);
    if (pools.length === 0) return req.pools ? 'none of the named pools is of this family' : 'no pool exists';
    if (!pools.some(poolUsable)) return 'every such pool is disabled or draining';
    return "no pool's nodeSelector matches the node's labels";
  }

  /** Takes `need` addresses of one family: own blocks, then new blocks, then borrowing. */
  #fill(family: Family, need: number, requested: number, cands: readonly Pool[]): void {
    const { req, snap } = this.#in;
    let got = 0;
    // Free addresses the quarantine kept back (for the exhaustion error) and the earliest end of one.
    const kept = { count: 0, until: Infinity };
    const take = (key: string, rev: number, block: Block, claimed: boolean): void => {
      const reserved = reservedOrdinals(block.cidr, snap.autoExcluded);
      const q = quarantineFor(snap.pools, block.cidr, this.#now);
      const held = quarantineHeld(block, q, reserved);
      const r = allocateOrdinals(block, need - got, req.handle, held.count === 0 ? reserved : new Set([...reserved, ...quarantinedOrdinals(block, q).keys()]));
      if (r.ordinals.length < need - got && held.until !== undefined) {
        kept.count += held.count;
        kept.until = Math.min(kept.until, held.until);
      }
      if (r.ordinals.length === 0) return;
      this.#put(key, rev, r.block, claimed, r.ordinals);
      got += r.ordinals.length;
    };
    for (const pool of cands) for (const [key, kb] of this.#blocksIn(pool, true)) if (got < need) take(key, kb.rev, kb.block!, false);
    let limit: string | undefined;
    if (got < need && !snap.config.autoAllocateBlocks) limit = 'autoAllocateBlocks is off';
    if (got < need && snap.config.autoAllocateBlocks) {
      const max = effectiveMaxBlocks(snap.config);
      let owned = cands.reduce((n, p) => n + this.#blocksIn(p, true).length, 0);
      while (got < need) {
        if (owned >= max) {
          limit = `the node owns ${owned} IPv${family} blocks, the per-host limit is ${max}`;
          break;
        }
        const c = this.#claimable(cands);
        if (!c) break;
        this.#guards.set(c.key, c.guards);
        take(c.key, 0, newBlock(c.cidr, req.node), true);
        owned++;
      }
    }
    if (got < need && !snap.config.strictAffinity) {
      if (!this.#in.allListed) throw new NeedList('list-blocks');
      for (const pool of cands) for (const [key, kb] of this.#blocksIn(pool, false)) if (got < need) take(key, kb.rev, kb.block!, false);
    }
    if (got < need) {
      const quarantined = kept.count > 0 ? { count: kept.count, until: new Date(kept.until).toISOString() } : undefined;
      throw new PoolExhaustedError(
        family,
        req.node,
        cands.map((p) => p.name),
        requested,
        requested - need + got,
        limit,
        quarantined,
      );
    }
  }

  /** Known blocks inside `pool` that are (mine=true) or are not affine to this node, by address. */
  #blocksIn(pool: Pool, mine: boolean): [string, KnownBlock][] {
    const node = this.#in.req.node;
    const seen = new Map<string, KnownBlock>();
    for (const src of [this.#in.others, this.#in.mine, this.#work] as ReadonlyMap<string, KnownBlock>[]) {
      for (const [k, kb] of src) {
        const b = kb.block;
        if (b && (b.affinity === node) === mine && prefixContainsPrefix(pool.cidr, b.cidr)) seen.set(k, kb);
      }
    }
    return [...seen].sort((a, b) => (a[1].block!.cidr.base < b[1].block!.cidr.base ? -1 : 1));
  }

  /** The next block to claim for this node (see claim-candidate.ts); lists blocks after too many misses. */
  #claimable(cands: readonly Pool[]): ClaimCandidate | undefined {
    const { claimed, claimMisses } = this.#in;
    const taken = (key: string): boolean | undefined => {
      if (this.#work.has(key)) return true;
      const st = this.#state(key);
      if (st !== undefined) return st.block !== null;
      return claimed?.has(key) || this.#in.claimedByOthers?.has(key) ? true : undefined;
    };
    // Guess (the compare proves it) until MAX_CLAIM_MISSES misses; then list the claimed CIDRs
    // once, after which an unlisted block is most likely free (an orphan teaches us by failing).
    const guess = claimMisses < MAX_CLAIM_MISSES || claimed !== undefined;
    const c = findClaimableBlock(cands, this.#in.snap.autoExcluded, this.#in.req.node, taken, guess);
    if (c === 'unknown') throw new NeedList('list-claimed');
    return c;
  }

  #build(): AssignPlan {
    const { req, snap, handle, now } = this.#in;
    const compares: Compare[] = [{ key: CONFIG_KEY, rev: snap.configRev }];
    if (this.#usedLabels) compares.push({ key: nodeKey(req.node), rev: this.#in.labels!.rev });
    const ops: Op[] = [];
    const claims: string[] = [];
    const guards: string[] = [];
    const blocks = new Map<string, Block>();
    for (const [key, w0] of this.#work) {
      // Release entries whose quarantine is over go with this write (nothing is released here).
      const w = { ...w0, block: stampReleases(null, w0.block, quarantineFor(snap.pools, w0.block.cidr, this.#now)) };
      compares.push({ key, rev: w.rev });
      ops.push({ type: 'put', key, value: encodeBlock(w.block) });
      blocks.set(key, w.block);
      if (w.claimed) {
        claims.push(key);
        for (const g of this.#guards.get(key) ?? []) if (!guards.includes(g)) guards.push(g);
        ops.push({ type: 'put', key: affinityKey(req.node, w.block.cidr), value: encodeAffinity({ state: 'confirmed', claimedAt: now }) });
      }
    }
    // A claim registers the node (the affinity is its registration): a tombstone left by an
    // earlier deletion of its record no longer proves it gone (src/model/node-tombstone.ts).
    if (claims.length > 0) ops.push({ type: 'delete', key: nodeTombstoneKey(req.node) });
    for (const [key, rev] of this.#verify) if (!this.#work.has(key)) compares.push({ key, rev });
    for (const g of guards) if (!this.#work.has(g) && !this.#verify.has(g)) compares.push({ key: g, rev: 0 });
    compares.push({ key: handleKey(req.handle), rev: handle.rev });
    if (this.#hold && req.takeOver !== undefined) {
      compares.push({ key: handleKey(req.takeOver), rev: this.#hold.rev });
      if (this.#hold.taken) ops.push({ type: 'delete', key: handleKey(req.takeOver) });
    }
    let record = handle.record;
    const writesHandle = this.#added.length > 0;
    if (writesHandle) {
      record = adjustHandle(record ?? { node: req.node, ...req.attrs, since: this.#in.now, blocks: new Map() }, this.#delta);
      ops.push({ type: 'put', key: handleKey(req.handle), value: encodeHandle(record) });
    }
    const assignments = [...this.#held, ...this.#added].sort((a, b) => a.addr.family - b.addr.family || (a.addr.value < b.addr.value ? -1 : 1));
    return { kind: 'txn', compares, ops, assignments, blocks, handle: record, writesHandle, claims, guards, ...(this.#hold?.taken ? { tookOver: true } : {}) };
  }
}
