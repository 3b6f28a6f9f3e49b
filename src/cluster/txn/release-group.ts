/**
 * Group release: several releases by handle of ONE node planned one after the other on the
 * same view, each seeing the blocks the earlier ones freed, and written as ONE compare-and-swap
 * transaction. The node agent uses it for the DELs that wait in a node's queue while a
 * transaction is in flight, as it groups ADDs (assign-group.ts).
 *
 * Correctness rests on the same compares as a single release: every handle is compared at the
 * revision the view holds, every block any plan read at the view's revision, and a block
 * written by several plans is written once, with the last plan's contents (which carry the
 * earlier plans' freed ordinals and release stamps). The empty-block policy of each plan sees
 * the blocks the earlier plans deleted. A release the view cannot plan alone (the handle not
 * known to the view, a block to read first, no snapshot of the pools), a handle asked twice, or
 * one that would grow the transaction past etcd's op limit runs alone through releaseByHandle
 * after the batch — as does every release of the batch when its transaction fails a compare or
 * its outcome is unknown (releaseByHandle is conditional and idempotent: an already freed
 * handle releases nothing). So each release gets exactly what releaseByHandle would give it,
 * only sooner; one failing never loses or repeats another.
 */
import { crashPoint } from '../../util/crash-point.js';
import type { Block } from '../../alloc/block.js';
import type { Compare, Op } from '../../store/index.js';
import { commitWrite } from '../gate/index.js';
import { absorbEntry, type IpamContext, type KnownBlock } from '../views/index.js';
import { delFenceOp, releaseStampOp, quarantineFor } from '../records/index.js';
import { MAX_BATCH_OPS, fits } from './assign-group.js';
import { checkHandle } from '../../model/handle-id.js';
import { checkNodeName } from '../../model/node-name.js';
import { planReleaseHandle } from '../plan/index.js';
import { type Released, releaseByHandle } from './release.js';

export { MAX_BATCH_OPS };

export type ReleaseOutcome = { readonly ok: true; readonly released: Released[] } | { readonly ok: false; readonly error: unknown };

/** Releases every handle of `handles` (all on `node`); the outcomes in request order. Never throws. */
export async function releaseGroup(ctx: IpamContext, node: string, handles: readonly string[]): Promise<ReleaseOutcome[]> {
  const out: (ReleaseOutcome | undefined)[] = handles.map(() => undefined);
  const alone: number[] = [];
  try {
    checkNodeName('node name', node);
    await planAndCommitReleases(ctx, node, handles, out, alone);
  } catch {
    // Store trouble on the batch (its outcome unknown) or a bad node name: every release not
    // yet answered runs alone and meets the same condition with its own compares.
    alone.length = 0;
    handles.forEach((_, i) => out[i] === undefined && alone.push(i));
  }
  for (const i of alone) {
    try {
      out[i] = { ok: true, released: await releaseByHandle(ctx, handles[i]!, node) };
    } catch (error) {
      out[i] = { ok: false, error };
    }
  }
  return out as ReleaseOutcome[];
}

async function planAndCommitReleases(
  ctx: IpamContext,
  node: string,
  handles: readonly string[],
  out: (ReleaseOutcome | undefined)[],
  alone: number[],
): Promise<void> {
  const snap = ctx.cache.snapshot;
  const view = ctx.cache.node(node);
  if (!snap) {
    // Without the pools a release reads them first (their reuseAfter): one at a time, as before.
    handles.forEach((_, i) => alone.push(i));
    return;
  }
  const now = ctx.now().getTime();
  // What the plans see: the view's blocks, then each plan's result at the compared revision.
  const mine = new Map<string, KnownBlock>(view.blocks);
  const others = new Map<string, KnownBlock>();
  const compares = new Map<string, number>();
  const ops = new Map<string, Op>();
  const joined: { i: number; plan: Extract<ReturnType<typeof planReleaseHandle>, { kind: 'txn' }> }[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < handles.length; i++) {
    const handle = handles[i]!;
    const hs = view.handles.get(handle);
    let plan: ReturnType<typeof planReleaseHandle>;
    try {
      checkHandle('handle', handle);
      if (seen.has(handle) || hs === undefined) throw new Error('not plannable in the batch');
      plan = planReleaseHandle(
        { state: (key) => mine.get(key) ?? others.get(key), policy: { node, mine, snap }, quarantine: (cidr) => quarantineFor(snap.pools, cidr, now) },
        handle,
        hs,
      );
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
    for (const [key, block] of plan.blocks) {
      const known = { rev: compares.get(key) ?? 0, block };
      if (mine.has(key)) mine.set(key, known);
      else others.set(key, known);
    }
    seen.add(handle);
    joined.push({ i, plan });
  }
  if (joined.length === 0) return;
  const cmp = [...compares].map(([key, rev]): Compare => ({ key, rev }));
  const r = await commitWrite(ctx, {
    what: `group release of ${joined.length} handle(s) on node "${node}"`,
    compares: cmp,
    // The node's DEL fence moves with its releases (release.ts, del-fence-record.ts).
    ops: [...ops.values(), delFenceOp(node, handles[joined[joined.length - 1]!.i]!, ctx.now()), releaseStampOp(ctx)],
  });
  if (!r.succeeded) {
    // Someone changed what the plans saw: learn the current entries, then each release alone.
    r.compares.forEach((c, k) => absorbEntry(ctx.cache, view, new Map(), c.key, r.current?.[k]));
    for (const j of joined) alone.push(j.i);
    alone.sort((a, b) => a - b);
    return;
  }
  crashPoint('cluster.release-group.committed');
  view.delFenceRev = r.rev;
  const last = new Map<string, Block | null>();
  for (const { plan } of joined) for (const [key, block] of plan.blocks) last.set(key, block);
  for (const [key, block] of last) view.noteBlock(key, block ? r.rev : 0, block);
  for (const { i, plan } of joined) {
    view.noteHandle(handles[i]!, 0, undefined);
    out[i] = { ok: true, released: [...plan.released] };
  }
}
