/**
 * Automatic addresses (`req.auto`) as one part of planAssign: per family, from the node's own
 * blocks, then new blocks it claims (up to the per-host limit), then — unless strictAffinity —
 * free addresses of other nodes' blocks, read a page at a time until one has room (a node at
 * its cap never lists the whole cluster to borrow one address, unless the cluster is full);
 * else the error naming why (no pool, exhausted).
 */
import { type Block, allocateOrdinals, isFullBlock, newBlock } from '../../alloc/block.js';
import { quarantineHeld, quarantinedOrdinals } from '../../alloc/block-quarantine.js';
import { blockAt, blockCount, fnv1a32, reservedOrdinals } from '../../alloc/block-layout.js';
import { type Family, prefixContainsPrefix } from '../../ip/index.js';
import { PlacementError } from '../../model/placement.js';
import { blockKey, effectiveMaxBlocks, type Pool, poolUsable, NoPoolError, PoolExhaustedError, quarantineFor } from '../records/index.js';
import { type ClaimCandidate, claimPosition, findClaimableBlock } from './claim-candidate.js';
import { NeedList, type PlanWork } from './plan-work.js';

/**
 * Failed claims tolerated before listing every affinity rather than guessing. A miss costs one
 * txn; the list costs a range over every node's affinities (at 20,000 nodes, 56,000 records,
 * 0.3-1.8 s of the etcd leader's time). Probes are hashed, so with a fraction p of the pool's
 * blocks claimed, k misses in a row happen with probability p^k: at 3, a pool 17% full sent
 * one claim in 200 to the list (hundreds of lists in the million-pod run); at 8, a pool half
 * full lists once in 256 claims, and a nearly full one pays 8 small txns before it lists.
 */
export const MAX_CLAIM_MISSES = 8;

/** Gives the handle its automatic addresses of each family it asks for (see the module comment). */
export function assignAuto(w: PlanWork): void {
  const { req } = w.input;
  if (!req.auto) return;
  for (const n of req.pools ?? []) {
    // With an ip-set the pools are the network's own (for the other families), not the annotation's.
    if (req.placedBy && req.ipSet === undefined) checkPlaced(w, n);
    else if (w.named.of(n).length === 0) throw new NoPoolError(undefined, req.node, req.pools, `pool "${n}" does not exist`);
  }
  const wanted: [Family, number][] =
    req.auto === 'each-family'
      ? ([4, 6] as Family[]).filter((f) => w.candidates(f).length > 0).map((f) => [f, 1])
      : (
          [
            [4, req.auto[4] ?? 0],
            [6, req.auto[6] ?? 0],
          ] as [Family, number][]
        ).filter(([, n]) => n > 0);
  // An ip-set's address alone is an answer: no pool of another family is needed.
  if (wanted.length === 0 && req.auto === 'each-family' && w.held.length + w.added.length === 0)
    throw new NoPoolError(undefined, req.node, req.pools, whyNoPool(w, undefined));
  for (const [family, n] of wanted) {
    // What the handle holds already answers a repeated request, even from a pool that now serves nothing new (drained, disabled).
    const have = [...w.held, ...w.added].filter((a) => a.addr.family === family).length;
    if (have >= n) continue;
    const cands = w.candidates(family);
    if (cands.length === 0) throw new NoPoolError(family, req.node, req.pools, whyNoPool(w, family));
    fill(w, family, n - have, n, cands);
  }
}

/**
 * A pool an annotation names (placedBy) must exist, be usable, select the node and — named for
 * one family — be of that family; a pattern must match such a pool (named-pools.ts): else
 * PlacementError (code 7) naming the annotation and the pod, never a fallback to other pools.
 */
function checkPlaced(w: PlanWork, entry: string): void {
  const { source, pod } = w.input.req.placedBy!;
  const problem = w.named.placedProblem(entry, w.input.req.node, (p) => w.selects(p));
  if (problem !== undefined) throw new PlacementError(source, pod, problem);
}

function whyNoPool(w: PlanWork, family: Family | undefined): string {
  const { req } = w.input;
  const pools = w.named.forFamily(family).filter((p) => family === undefined || p.cidr.family === family);
  if (pools.length === 0) return req.pools ? 'none of the named pools is of this family' : 'no pool exists';
  if (!pools.some(poolUsable)) return 'every such pool is disabled or draining';
  return "no pool's nodeSelector matches the node's labels";
}

/** Takes `need` addresses of one family: own blocks, then new blocks, then borrowing. */
function fill(w: PlanWork, family: Family, need: number, requested: number, cands: readonly Pool[]): void {
  const { req, snap } = w.input;
  let got = 0;
  // Free addresses the quarantine kept back (for the exhaustion error) and the earliest end of one.
  const kept = { count: 0, until: Infinity };
  const take = (key: string, rev: number, block: Block, claimed: boolean): void => {
    if (isFullBlock(block)) return; // constant time: a node's full blocks cost nothing per ADD
    const reserved = reservedOrdinals(block.cidr, snap.autoExcluded);
    const q = quarantineFor(snap.pools, block.cidr, w.now);
    const held = quarantineHeld(block, q, reserved);
    const r = allocateOrdinals(block, need - got, req.handle, held.count === 0 ? reserved : new Set([...reserved, ...quarantinedOrdinals(block, q).keys()]));
    if (r.ordinals.length < need - got && held.until !== undefined) {
      kept.count += held.count;
      kept.until = Math.min(kept.until, held.until);
    }
    if (r.ordinals.length === 0) return;
    w.put(key, rev, r.block, claimed, r.ordinals);
    got += r.ordinals.length;
  };
  for (const pool of cands) {
    for (const [key, kb] of w.ownWithRoom(pool)) {
      if (got >= need) break;
      take(key, kb.rev, kb.block, false);
    }
  }
  let limit: string | undefined;
  if (got < need && !snap.config.autoAllocateBlocks) limit = 'autoAllocateBlocks is off';
  if (got < need && snap.config.autoAllocateBlocks) {
    const max = effectiveMaxBlocks(snap.config);
    // Per pool, the position of each block in the node's probe order, and the furthest the node
    // holds (where each claim's probe resumes), kept as it claims.
    const position = new Map(cands.map((p) => [p, claimPosition(p, req.node)]));
    const own = new Map(cands.map((p) => [p, w.ownIn(p, position.get(p)!)]));
    let owned = [...own.values()].reduce((n, o) => n + o.count, 0);
    while (got < need) {
      if (owned >= max) {
        limit = `the node owns ${owned} IPv${family} blocks, the per-host limit is ${max}`;
        break;
      }
      const c = claimable(w, cands, (p) => (own.get(p)?.furthest ?? -1n) + 1n);
      if (!c) break;
      w.guards.set(c.key, c.guards);
      take(c.key, 0, newBlock(c.cidr, req.node), true);
      const pool = cands.find((p) => prefixContainsPrefix(p.cidr, c.cidr))!;
      const at = position.get(pool)!(c.cidr);
      const o = own.get(pool)!;
      own.set(pool, { count: o.count + 1, furthest: o.furthest > at ? o.furthest : at });
      owned++;
    }
  }
  if (got < need && !snap.config.strictAffinity) {
    // Borrow from the other nodes' blocks known so far; short of addresses, ask for the next page of blocks.
    for (const pool of cands) for (const [key, kb] of w.blocksOfOthers(pool)) if (got < need) take(key, kb.rev, kb.block!, false);
    if (got < need && !w.input.allListed) throw new NeedList('list-blocks', borrowFrom(cands[0]!, req.node));
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

/**
 * Where this node's scan of the blocks for one to borrow from starts: the key of a block of the
 * pool chosen by a hash of the node, so nodes at their cap spread over different blocks
 * rather than all racing for the first free address in key order.
 */
function borrowFrom(pool: Pool, node: string): string {
  const count = blockCount(pool.cidr, pool.blockSize);
  return blockKey(blockAt(pool.cidr, pool.blockSize, BigInt(fnv1a32(`${node}/${pool.name}#borrow`)) % count));
}

/** The next block to claim for this node (see claim-candidate.ts); lists blocks after too many misses. */
function claimable(w: PlanWork, cands: readonly Pool[], resumeAt: (pool: Pool) => bigint): ClaimCandidate | undefined {
  const { claimed, claimMisses } = w.input;
  const taken = (key: string): boolean | undefined => {
    if (w.work.has(key)) return true;
    const st = w.state(key);
    if (st !== undefined) return st.block !== null;
    return claimed?.has(key) || w.input.claimedByOthers?.has(key) ? true : undefined;
  };
  // Guess (the compare proves it) until MAX_CLAIM_MISSES misses; then list the claimed CIDRs
  // once, after which an unlisted block is most likely free (an orphan teaches us by failing).
  const guess = claimMisses < MAX_CLAIM_MISSES || claimed !== undefined;
  const c = findClaimableBlock(cands, w.input.snap.autoExcluded, w.input.req.node, taken, guess, resumeAt);
  if (c === 'unknown') throw new NeedList('list-claimed');
  return c;
}
