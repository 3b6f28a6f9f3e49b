/**
 * The assignment loop: plan (pure) → one compare-and-swap txn → on a failed compare, fold the
 * returned current entries into the view and plan again; reads and block lists only when the
 * planner asks. Steady state (the node's block already claimed and its view current): one
 * round trip. A node at its per-host cap borrows from other nodes' blocks read a page at a time
 * (borrow-scan.ts), not from a list of every block.
 */
import { crashPoint } from '../../util/crash-point.js';
import { commitWrite } from '../gate/index.js';
import { checkNodeName } from '../../model/node-name.js';
import { checkHandle } from '../../model/handle-id.js';
import { absorbEntry, loadSnapshot, type KnownBlock, loadNodeBlocks, takenByPod, type IpamContext, readKeys } from '../views/index.js';
import {
  AFFINITY_PREFIX,
  blockKey,
  handleKey,
  parseAffinityKey,
  decodeHandle,
  stampOp,
  AddressUnavailableError,
  ContentionError,
  NoPoolError,
  PoolExhaustedError,
  type AssignRequest,
  type Assignment,
} from '../records/index.js';
import type { Entry } from '../../store/index.js';
import { type HandleState, planAssign } from '../plan/index.js';
import { BorrowScan } from './borrow-scan.js';
import { PlacementError } from '../../model/placement.js';

/** Most addresses one request may ask for (keeps the txn within etcd's 128-op limit). */
export const MAX_ADDRESSES_PER_REQUEST = 32;

/**
 * Gives `req.handle` its addresses and returns everything it holds (IPv4 first). Idempotent:
 * repeating a request for a handle that already holds what it asks for returns those
 * addresses. All or nothing: on any error nothing was written by this call. Throws
 * PoolExhaustedError, NoPoolError, AddressUnavailableError (a taken address names the pod
 * holding it, taken-by-pod.ts), PlacementError (`req.placedBy`: a named pool that cannot serve
 * the node), ContentionError (after
 * ctx.maxAttempts conflicting attempts), StoreUnavailableError (the store is unreachable; the
 * txn in flight may or may not have landed — a retry of the same request is safe because it is
 * idempotent), TypeError/RangeError for a bad request.
 */
export async function assignAddresses(ctx: IpamContext, req: AssignRequest): Promise<Assignment[]> {
  checkRequest(req);
  let view = ctx.cache.node(req.node);
  // A refusal (exhausted, no pool, address taken) must be proven on fresh data, not on hints
  // that another process (a release by address, GC, the CLI) may have made stale.
  let refreshed = false;
  const others = new Map<string, KnownBlock>();
  let allListed = false;
  // The pages of other nodes' blocks read to borrow an address (plan kind list-blocks).
  let scan: BorrowScan | undefined;
  let claimMisses = 0;
  let claimed: Set<string> | undefined;
  let conflict: string[] = [];
  // A sticky pod's hold (req.takeOver): from the hints when this node wrote it, else read once.
  const holdKey = req.takeOver === undefined ? undefined : handleKey(req.takeOver);
  let hold: HandleState | undefined = req.takeOver === undefined ? undefined : view.handles.get(req.takeOver);
  const noteHold = (key: string, entry: Entry | undefined): void => {
    if (key === holdKey) hold = entry ? { rev: entry.rev, record: decodeHandle(entry) } : { rev: 0, record: undefined };
  };
  for (let attempt = 1; attempt <= ctx.maxAttempts; attempt++) {
    const snap = ctx.cache.snapshot ?? (ctx.cache.snapshot = await loadSnapshot(ctx.store));
    if (!view.blocksLoaded) await loadNodeBlocks(ctx.store, view).then(() => crashPoint('cluster.assign.blocks-loaded'));
    let plan: ReturnType<typeof planAssign>;
    try {
      plan = planAssign({
        req,
        snap,
        labels: view.labels,
        mine: view.blocks,
        others,
        allListed,
        claimMisses,
        claimed,
        claimedByOthers: view.claimedByOthers,
        delFence: view.delFenceRev,
        handle: view.handles.get(req.handle) ?? { rev: 0, record: undefined },
        now: ctx.now().toISOString(),
        ...(hold ? { hold } : {}),
      });
    } catch (e) {
      if (!(e instanceof PoolExhaustedError || e instanceof NoPoolError || e instanceof AddressUnavailableError || e instanceof PlacementError)) throw e;
      if (refreshed) throw await takenByPod(ctx, req, e);
      refreshed = true;
      ctx.cache.invalidateSnapshot();
      ctx.cache.forgetNode(req.node);
      view = ctx.cache.node(req.node);
      // A repeated request is answered by what the handle holds, even from a pool that now
      // serves nothing new (drained, disabled): the refusal is proven with the handle read.
      absorbEntry(ctx.cache, view, others, handleKey(req.handle), await ctx.store.get(handleKey(req.handle)));
      others.clear();
      allListed = false;
      scan = undefined;
      claimed = undefined;
      continue;
    }
    if (plan.kind === 'read') {
      for (const [key, entry] of await readKeys(ctx.store, plan.keys)) {
        absorbEntry(ctx.cache, view, others, key, entry);
        noteHold(key, entry);
      }
      continue;
    }
    if (plan.kind === 'list-claimed') {
      claimed = new Set();
      for (const e of await ctx.store.list(AFFINITY_PREFIX)) {
        const a = parseAffinityKey(e.key);
        if (a) claimed.add(blockKey(a.cidr));
      }
      continue;
    }
    if (plan.kind === 'list-blocks') {
      scan ??= new BorrowScan(ctx.store, plan.from);
      const page = await scan.next();
      const present = new Set(page.entries.map((e) => e.key));
      // The node's own blocks the page's key range proves gone (deleted by GC or an operator).
      for (const k of [...view.blocks.keys()]) if (page.covers(k) && !present.has(k)) view.noteBlock(k, 0, null);
      for (const e of page.entries) absorbEntry(ctx.cache, view, others, e.key, e);
      allListed = scan.done;
      attempt--; // a page is progress, not contention: the scan ends after one circle
      continue;
    }
    crashPoint('cluster.assign.planned');
    const r = await commitWrite(ctx, {
      what: `assign addresses to handle "${req.handle}"`,
      compares: plan.compares,
      ops: [...plan.ops, stampOp(ctx)],
      view: snap,
      plantable: true,
    });
    if (r.succeeded) {
      crashPoint(plan.claims.length > 0 ? 'cluster.block.claimed' : 'cluster.assign.committed');
      for (const [key, block] of plan.blocks) {
        view.noteBlock(key, r.rev, block);
        if (block.affinity !== req.node) others.set(key, { rev: r.rev, block });
      }
      const prev = view.handles.get(req.handle);
      if (plan.handle) view.noteHandle(req.handle, plan.writesHandle ? r.rev : (prev?.rev ?? 0), plan.handle);
      if (plan.tookOver) view.noteHandle(req.takeOver!, 0, undefined);
      return [...plan.assignments];
    }
    conflict = [];
    r.compares.forEach((c, i) => {
      const entry = r.current?.[i];
      if ((entry?.rev ?? 0) !== c.rev) conflict.push(c.key);
      absorbEntry(ctx.cache, view, others, c.key, entry);
      noteHold(c.key, entry);
    });
    // A claim whose own key or one of its guards (an overlapping block of another size) existed.
    claimMisses += plan.claims.filter((k) => conflict.includes(k)).length + (r.guards.some((k) => conflict.includes(k)) ? 1 : 0);
  }
  throw new ContentionError(`assign addresses to handle "${req.handle}"`, ctx.maxAttempts, conflict);
}

function checkRequest(req: AssignRequest): void {
  checkNodeName('node name', req.node);
  checkHandle('handle', req.handle);
  if (req.takeOver !== undefined) checkHandle('takeOver', req.takeOver);
  if (req.auto && req.auto !== 'each-family') {
    for (const f of [4, 6] as const) {
      const n = req.auto[f] ?? 0;
      if (!Number.isInteger(n) || n < 0 || n > MAX_ADDRESSES_PER_REQUEST) {
        throw new RangeError(`Cannot assign as 'num${f}' must be an integer from 0 to ${MAX_ADDRESSES_PER_REQUEST}: current value is ${n}`);
      }
    }
  }
  if ((req.ips?.length ?? 0) > MAX_ADDRESSES_PER_REQUEST) {
    throw new RangeError(`Cannot assign as 'ips' may name at most ${MAX_ADDRESSES_PER_REQUEST} addresses: current value has ${req.ips!.length}`);
  }
}
