/**
 * Release loops: plan (pure) → one compare-and-swap txn → on conflict fold `current` and
 * plan again. With a node view that remembers the handle (the ADD on this node wrote it),
 * release by handle is one round trip; otherwise one read of the handle first — together with
 * `config`, in the same round trip, in a process without a cached snapshot: its list of the
 * pools' quarantines says whether a freed address is quarantined (config-quarantines.ts; one list
 * of the pools instead when the record does not carry it).
 */
import { commitWrite } from '../gate/index.js';
import { crashPoint } from '../../util/crash-point.js';
import { ordinalsOf } from '../../alloc/block.js';
import { type Addr, formatPrefix, type Prefix } from '../../ip/index.js';
import type { Compare, Entry } from '../../store/index.js';
import { absorbEntry, loadSnapshot, type KnownBlock, type NodeView, type IpamContext, readKeys } from '../views/index.js';
import {
  type Pool,
  decodePool,
  decodeBlock,
  decodeHandle,
  BLOCK_PREFIX,
  CONFIG_KEY,
  HANDLE_PREFIX,
  POOL_PREFIX,
  handleKey,
  delFenceOp,
  quarantineIn,
  quarantinesOfConfig,
  releaseStampOp,
  ContentionError,
  CorruptRecordError,
  quarantineFor,
} from '../records/index.js';
import { listAll } from '../../store/list-all.js';
import type { Quarantine } from '../../alloc/block-quarantine.js';
import { checkHandle } from '../../model/handle-id.js';
import { checkNodeName } from '../../model/node-name.js';
import { type HandleState, type ReleaseInput, type ReleasePlan, planReleaseAddrs, planReleaseHandle } from '../plan/index.js';

/** One freed address and the handle that held it. */
export interface Released {
  readonly addr: Addr;
  readonly handle: string;
}

/**
 * Frees every address `handle` holds and deletes the handle, in one transaction. Idempotent:
 * an absent handle releases nothing and succeeds. `node` names the node the release runs on
 * (its view supplies hints and the empty-block policy); omit it from tools. Throws
 * ContentionError after ctx.maxAttempts conflicts, StoreUnavailableError (nothing or
 * everything may have landed; repeating is safe), CorruptRecordError.
 */
export async function releaseByHandle(ctx: IpamContext, handle: string, node?: string): Promise<Released[]> {
  return (await releaseHandleLoop(ctx, handle, node, []))!;
}

/**
 * releaseByHandle, but only while every compare of `guard` holds (the proof the release rests
 * on, compared in the same transaction): undefined, nothing released, once one does not.
 */
export async function releaseByHandleIf(ctx: IpamContext, handle: string, guard: readonly Compare[]): Promise<Released[] | undefined> {
  return releaseHandleLoop(ctx, handle, undefined, guard);
}

async function releaseHandleLoop(ctx: IpamContext, handle: string, node: string | undefined, guard: readonly Compare[]): Promise<Released[] | undefined> {
  checkHandle('handle', handle);
  if (node !== undefined) checkNodeName('node name', node);
  const view = node === undefined ? undefined : ctx.cache.node(node);
  const others = new Map<string, KnownBlock>();
  let hs: HandleState | undefined = view?.handles.get(handle);
  // Whether a freed address is quarantined: the snapshot's pools, else config's list (read with
  // the handle), else the pools listed — once.
  let quarantine: ((cidr: Prefix, now: number) => Quarantine) | undefined = ctx.cache.snapshot && poolsQuarantine(ctx.cache.snapshot.pools);
  let conflict: string[] = [];
  for (let attempt = 1; attempt <= ctx.maxAttempts; attempt++) {
    if (hs === undefined && quarantine === undefined) {
      const read = await readKeys(ctx.store, [handleKey(handle), CONFIG_KEY]);
      const q = quarantinesOfConfig(read.get(CONFIG_KEY));
      if (q) quarantine = (cidr, now) => quarantineIn(q, cidr, now);
      hs = await handleState(ctx, handle, read.get(handleKey(handle)));
    }
    if (hs === undefined) hs = await handleState(ctx, handle, await ctx.store.get(handleKey(handle)));
    const record = hs.record;
    if (!record) {
      if (view === undefined) return []; // a tool's release (no node): nothing to fence
      // Absent on this node's DEL: move the node's DEL fence while the handle is still absent,
      // so an ADD of it whose answer was lost can no longer land (del-fence-record.ts).
      const fenced = await fenceAbsentHandle(ctx, view, handle);
      if (fenced === true) return [];
      hs = fenced;
      continue;
    }
    quarantine ??= poolsQuarantine((await listAll(ctx.store, POOL_PREFIX)).map(decodePool));
    const planned = planReleaseHandle(input(ctx, view, others, quarantine), handle, { rev: hs.rev, record });
    // A guard on a key the plan compares too (the handle itself) replaces the plan's compare.
    const plan: ReleasePlan =
      planned.kind === 'txn' && guard.length > 0
        ? { ...planned, compares: [...planned.compares.filter((c) => !guard.some((g) => g.key === c.key)), ...guard] }
        : planned;
    const done = await runPlan(ctx, view, others, plan, handle);
    if (done === true) {
      view?.noteHandle(handle, 0, undefined);
      return plan.kind === 'txn' ? [...plan.released] : [];
    }
    conflict = [...done.keys()];
    if (guard.some((g) => done.has(g.key))) return undefined;
    if (done.has(handleKey(handle))) hs = await handleState(ctx, handle, done.get(handleKey(handle)));
  }
  throw new ContentionError(`release handle "${handle}"`, ctx.maxAttempts, conflict);
}

/**
 * Moves `view`'s node's DEL fence in one txn that compares `handle` absent: true once done (no
 * ADD of the handle sent before can land any more), else the handle as it now is (an ADD landed
 * between the read and this txn: the caller releases it).
 */
async function fenceAbsentHandle(ctx: IpamContext, view: NodeView, handle: string): Promise<true | HandleState> {
  const r = await commitWrite(ctx, {
    what: `move the DEL fence of node "${view.node}" for handle "${handle}"`,
    compares: [{ key: handleKey(handle), rev: 0 }],
    ops: [delFenceOp(view.node, handle, ctx.now())],
  });
  if (r.succeeded) {
    view.noteHandle(handle, 0, undefined);
    view.delFenceRev = r.rev;
    return true;
  }
  return handleState(ctx, handle, r.current?.[0]);
}

/**
 * Frees the given addresses whoever holds them — or, with `heldBy`, only while a handle of that
 * set holds them (the caller's belief about who holds an address is checked in the same
 * transaction, so an address meanwhile handed to another pod stays its) — decrementing (or
 * deleting) their handles, in one transaction. Returns what was freed; addresses that were not
 * allocated (to `heldBy`) are simply not in the result. Same errors as releaseByHandle.
 */
export async function releaseAddresses(ctx: IpamContext, addrs: readonly Addr[], heldBy?: ReadonlySet<string>): Promise<Released[]> {
  const others = new Map<string, KnownBlock>();
  const handles = new Map<string, HandleState>();
  let conflict: string[] = [];
  for (let attempt = 1; attempt <= ctx.maxAttempts; attempt++) {
    const snap = ctx.cache.snapshot ?? (ctx.cache.snapshot = await loadSnapshot(ctx.store));
    const plan = planReleaseAddrs(input(ctx, undefined, others, poolsQuarantine(snap.pools)), snap, addrs, handles, heldBy);
    if (plan.kind === 'read') {
      for (const [key, entry] of await readKeys(ctx.store, plan.keys)) {
        if (key.startsWith(HANDLE_PREFIX))
          handles.set(key.slice(HANDLE_PREFIX.length), entry ? { rev: entry.rev, record: decodeHandle(entry) } : { rev: 0, record: undefined });
        else absorbEntry(ctx.cache, undefined, others, key, entry);
      }
      continue;
    }
    const r = await commitWrite(ctx, { what: `release ${addrs.length} address(es)`, compares: plan.compares, ops: [...plan.ops, releaseStampOp(ctx)] });
    if (r.succeeded) {
      crashPoint('cluster.release-addrs.committed');
      // The node views this instance keeps (the agent's warm returns) must see the freed
      // ordinals, or their node claims new blocks beside half-empty ones it believes full.
      for (const [key, block] of plan.blocks) if (block?.affinity) ctx.cache.peek(block.affinity)?.noteBlock(key, r.rev, block);
      return [...plan.released];
    }
    conflict = [];
    plan.compares.forEach((c, i) => {
      const entry = r.current?.[i];
      if ((entry?.rev ?? 0) !== c.rev) conflict.push(c.key);
      if (c.key.startsWith(HANDLE_PREFIX)) handles.delete(c.key.slice(HANDLE_PREFIX.length));
      else absorbEntry(ctx.cache, undefined, others, c.key, entry);
    });
  }
  throw new ContentionError(`release ${addrs.length} address(es)`, ctx.maxAttempts, conflict);
}

/**
 * The handle as stored. A record that does not decode must not make DEL fail forever: its
 * allocations are then found by scanning every block (one list; rare), and releasing deletes
 * the corrupt record along with them.
 */
async function handleState(ctx: IpamContext, handle: string, entry: Entry | undefined): Promise<HandleState> {
  if (!entry) return { rev: 0, record: undefined };
  try {
    return { rev: entry.rev, record: decodeHandle(entry) };
  } catch (e) {
    if (!(e instanceof CorruptRecordError)) throw e;
  }
  const blocks = new Map<string, number>();
  for (const b of await ctx.store.list(BLOCK_PREFIX)) {
    let n: number;
    try {
      n = ordinalsOf(decodeBlock(b), handle).length;
    } catch {
      continue; // a corrupt block cannot be released from; ipam check reports it
    }
    if (n > 0) blocks.set(formatPrefix(decodeBlock(b).cidr), n);
  }
  return { rev: entry.rev, record: { node: '', blocks } };
}

function poolsQuarantine(pools: readonly Pool[]): (cidr: Prefix, now: number) => Quarantine {
  return (cidr, now) => quarantineFor(pools, cidr, now);
}

function input(
  ctx: IpamContext,
  view: NodeView | undefined,
  others: Map<string, KnownBlock>,
  quarantine: (cidr: Prefix, now: number) => Quarantine,
): ReleaseInput {
  const now = ctx.now().getTime();
  const snap = ctx.cache.snapshot;
  return {
    state: (key) => view?.blocks.get(key) ?? others.get(key),
    policy: view && snap ? { node: view.node, mine: view.blocks, snap } : undefined,
    quarantine: (cidr) => quarantine(cidr, now),
  };
}

/**
 * Runs a read or a txn: true when a txn succeeded, else the current entries of the keys whose
 * compare failed (none after a read); everything learned is folded into the knowledge.
 */
async function runPlan(
  ctx: IpamContext,
  view: NodeView | undefined,
  others: Map<string, KnownBlock>,
  plan: ReleasePlan,
  handle: string,
): Promise<true | Map<string, Entry | undefined>> {
  if (plan.kind === 'read') {
    for (const [key, entry] of await readKeys(ctx.store, plan.keys)) absorbEntry(ctx.cache, view, others, key, entry);
    return new Map();
  }
  // A node's release moves its DEL fence in the same txn (no ADD planned before it can land after it).
  const fence = view === undefined ? [] : [delFenceOp(view.node, handle, ctx.now())];
  const r = await commitWrite(ctx, { what: 'release addresses', compares: plan.compares, ops: [...plan.ops, ...fence, releaseStampOp(ctx)] });
  if (r.succeeded) {
    if (view !== undefined) view.delFenceRev = r.rev;
    crashPoint([...plan.blocks.values()].includes(null) ? 'cluster.block.released' : 'cluster.release.committed');
    for (const [key, block] of plan.blocks) {
      view?.noteBlock(key, block ? r.rev : 0, block);
      others.set(key, { rev: block ? r.rev : 0, block });
    }
    return true;
  }
  const conflict = new Map<string, Entry | undefined>();
  plan.compares.forEach((c, i) => {
    const entry = r.current?.[i];
    if ((entry?.rev ?? 0) !== c.rev) conflict.set(c.key, entry);
    absorbEntry(ctx.cache, view, others, c.key, entry);
  });
  return conflict;
}
