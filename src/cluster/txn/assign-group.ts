/**
 * Group commit: several assignments of ONE node planned one after the other on the same view,
 * each seeing the blocks the earlier ones filled, and written as ONE compare-and-swap
 * transaction. The node agent uses it for the ADDs that arrive while a transaction is in
 * flight, so a burst of pods costs a few transactions rather than one per pod.
 *
 * Correctness rests on the same compares as a single assignment: every record any plan was
 * derived from is compared at the revision the view holds, and a block written by several
 * plans is written once, with the last plan's contents (which contain the earlier plans'
 * ordinals). A request that would need a read or a list, that the planner refuses, or that
 * cannot join the batch (same handle twice, the transaction would grow past etcd's op limit)
 * runs alone through assignAddresses after the batch, as does everything when the batch's
 * transaction fails a compare — so the outcome of each request is exactly what assign would
 * give it, only sooner.
 */
import { crashPoint } from '../../util/crash-point.js';
import { commitWrite } from '../gate/index.js';
import type { Block } from '../../alloc/block.js';
import type { Compare, Op } from '../../store/index.js';
import { absorbEntry, loadSnapshot, type KnownBlock, loadNodeBlocks, type IpamContext } from '../views/index.js';
import { stampOp, type AssignRequest, type Assignment } from '../records/index.js';
import { assignAddresses } from './assign.js';
import { checkHandle } from '../../model/handle-id.js';
import { checkNodeName } from '../../model/node-name.js';
import { planAssign } from '../plan/index.js';

/** Most compares or ops of the plans in one batch transaction (etcd refuses more than 128 of either; the history stamp adds one op, a release group's DEL fence another). */
export const MAX_BATCH_OPS = 100;

export type BatchOutcome = { readonly ok: true; readonly assignments: Assignment[] } | { readonly ok: false; readonly error: unknown };

/** Assigns every request of `reqs` (all for `node`); the outcomes in request order. Never throws. */
export async function assignGroup(ctx: IpamContext, node: string, reqs: readonly AssignRequest[]): Promise<BatchOutcome[]> {
  const out: (BatchOutcome | undefined)[] = reqs.map(() => undefined);
  const alone: number[] = [];
  try {
    checkNodeName('node name', node);
    await planAndCommitAssigns(ctx, node, reqs, out, alone);
  } catch {
    // The batch could not be tried (store trouble while loading, a bad node name): every
    // request not yet answered runs alone and meets the same error with its own data.
    alone.length = 0;
    reqs.forEach((_, i) => out[i] === undefined && alone.push(i));
  }
  for (const i of alone) {
    try {
      out[i] = { ok: true, assignments: await assignAddresses(ctx, reqs[i]!) };
    } catch (error) {
      out[i] = { ok: false, error };
    }
  }
  return out as BatchOutcome[];
}

async function planAndCommitAssigns(
  ctx: IpamContext,
  node: string,
  reqs: readonly AssignRequest[],
  out: (BatchOutcome | undefined)[],
  alone: number[],
): Promise<void> {
  const view = ctx.cache.node(node);
  const snap = ctx.cache.snapshot ?? (ctx.cache.snapshot = await loadSnapshot(ctx.store));
  if (!view.blocksLoaded) await loadNodeBlocks(ctx.store, view);
  const mine = view.blocks.copy();
  const others = new Map<string, KnownBlock>();
  const compares = new Map<string, number>();
  const ops = new Map<string, Op>();
  const joined: { i: number; plan: Extract<ReturnType<typeof planAssign>, { kind: 'txn' }> }[] = [];
  const handles = new Set<string>();
  for (let i = 0; i < reqs.length; i++) {
    const req = reqs[i]!;
    let plan: ReturnType<typeof planAssign>;
    try {
      if (req.node !== node) throw new Error('another node');
      checkHandle('handle', req.handle);
      if (handles.has(req.handle)) throw new Error('handle twice in one batch');
      plan = planAssign({
        req,
        snap,
        labels: view.labels,
        mine,
        others,
        allListed: false,
        claimMisses: 0,
        claimed: undefined,
        delFence: view.delFenceRev,
        handle: view.handles.get(req.handle) ?? { rev: 0, record: undefined },
        now: ctx.now().toISOString(),
      });
    } catch {
      alone.push(i);
      continue;
    }
    if (plan.kind !== 'txn' || !fits(plan.compares, plan.ops, compares, ops)) {
      alone.push(i);
      continue;
    }
    for (const c of plan.compares) compares.set(c.key, c.rev);
    for (const o of plan.ops) {
      ops.delete(o.key); // the last plan's contents of a key win, written once
      ops.set(o.key, o);
    }
    // Later plans start from this plan's blocks, at the revisions the view holds (the compares).
    for (const [key, block] of plan.blocks) {
      const rev = compares.get(key) ?? 0;
      if (block.affinity === node) mine.set(key, { rev, block });
      else others.set(key, { rev, block });
    }
    handles.add(req.handle);
    joined.push({ i, plan });
  }
  if (joined.length === 0) return;
  const cmp = [...compares].map(([key, rev]): Compare => ({ key, rev }));
  const r = await commitWrite(ctx, {
    what: `group commit of ${joined.length} request(s) on node "${node}"`,
    compares: cmp,
    ops: [...ops.values(), stampOp(ctx)],
    view: snap,
    plantable: true,
  });
  if (!r.succeeded) {
    // Someone changed what the plans saw: learn the current entries, then each request alone.
    r.compares.forEach((c, k) => absorbEntry(ctx.cache, view, new Map(), c.key, r.current?.[k]));
    for (const j of joined) alone.push(j.i);
    alone.sort((a, b) => a - b);
    return;
  }
  crashPoint('cluster.group.committed');
  const last = new Map<string, Block>();
  for (const { plan } of joined) for (const [key, block] of plan.blocks) last.set(key, block);
  for (const [key, block] of last) view.noteBlock(key, r.rev, block);
  for (const { i, plan } of joined) {
    const req = reqs[i]!;
    const prev = view.handles.get(req.handle);
    if (plan.handle) view.noteHandle(req.handle, plan.writesHandle ? r.rev : (prev?.rev ?? 0), plan.handle);
    out[i] = { ok: true, assignments: [...plan.assignments] };
  }
}

/** True when the plan's compares agree with the batch's and the union stays within the op limit. */
export function fits(pc: readonly Compare[], po: readonly Op[], compares: ReadonlyMap<string, number>, ops: ReadonlyMap<string, Op>): boolean {
  for (const c of pc) {
    const have = compares.get(c.key);
    if (have !== undefined && have !== c.rev) return false;
  }
  const nc = new Set([...compares.keys(), ...pc.map((c) => c.key)]).size;
  const no = new Set([...ops.keys(), ...po.map((o) => o.key)]).size;
  return nc <= MAX_BATCH_OPS && no <= MAX_BATCH_OPS;
}
