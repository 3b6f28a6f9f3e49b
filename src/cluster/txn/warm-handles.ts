/**
 * What the warm pool (src/warm) keeps in the cluster datastore, through the cluster back end
 * and nothing else: the names of a node's warm handles (the addresses themselves are assigned
 * and released with the allocator's own assign/releaseAddresses), the records it writes beside
 * them (the pod records, src/warm/warm-handle.ts), and the cached pool list its start reads.
 * Record keys never fall under the allocator's own prefixes (pools, blocks, affinities, handles,
 * reservations, config): such a write is refused before anything is written.
 */
import { commitWrite } from '../gate/index.js';
import type { ReleaseEvidence, ReleaseReason } from '../../model/history.js';
import type { Entry, Op } from '../../store/index.js';
import {
  STAMP_PREFIX,
  type StampedKey,
  plainStampOp,
  AFFINITY_PREFIX,
  BLOCK_PREFIX,
  CONFIG_KEY,
  HANDLE_PREFIX,
  IPSET_PREFIX,
  POOL_PREFIX,
  RESERVATION_PREFIX,
  type Pool,
} from '../records/index.js';
import { loadSnapshot, labelsOf, type IpamContext } from '../views/index.js';
import type { IpRangeSet } from '../../ip/index.js';
import { nodeKey } from '../../model/node-record.js';

/** One record write: `value` undefined deletes the key — at `at` (ms; default now) for `why` (default: the service's reason, else DEL), with `evidence` for a runtime-absent one. */
export interface WarmRecordWrite {
  readonly key: string;
  readonly value: string | undefined;
  readonly at?: number;
  readonly why?: ReleaseReason;
  readonly evidence?: ReleaseEvidence;
}

const OWN = [POOL_PREFIX, BLOCK_PREFIX, AFFINITY_PREFIX, HANDLE_PREFIX, RESERVATION_PREFIX, IPSET_PREFIX, STAMP_PREFIX];

/** A record key under one of the allocator's own prefixes; carries the key. */
export class WarmRecordKeyError extends RangeError {
  override readonly name = 'WarmRecordKeyError';
  constructor(readonly key: string) {
    super(`warm record key ${JSON.stringify(key)} is the cluster allocator's own (under ${[...OWN, CONFIG_KEY].join(', ')})`);
  }
}

function checkRecordKey(key: string): string {
  if (key === '' || key === CONFIG_KEY || OWN.some((p) => key.startsWith(p))) throw new WarmRecordKeyError(key);
  return key;
}

/** The handles whose name starts with `prefix` (a node's warm handles: warmHandlePrefix(node)), by name. */
export async function listWarmHandles(ctx: IpamContext, prefix: string): Promise<string[]> {
  return (await ctx.store.list(HANDLE_PREFIX + prefix)).map((e) => e.key.slice(HANDLE_PREFIX.length));
}

/** The records whose key starts with `prefix` (a node's pod records), in key order. */
export async function readWarmRecords(ctx: IpamContext, prefix: string): Promise<{ key: string; value: string }[]> {
  return (await ctx.store.list(checkRecordKey(prefix))).map((e: Entry) => ({ key: e.key, value: e.value }));
}

/**
 * Puts and deletes the records in one transaction (a key given twice: its last write), with the
 * history stamp (history-stamp.ts) naming each deleted key's time and reason in `keys` — the
 * first delete of a key the batch deletes (a later one deletes nothing more). A put that a later
 * delete of the same batch folds away (ADD then DEL before the flush) is not written, but its
 * value goes into the stamp (`keys[key].value`), so the history still sees that hold. A key whose
 * last write is a put after a delete gets a `keys` entry too: its earlier value ended then.
 *
 * With a `fence` (the agent's write-behind: WRITE_FENCE_PREFIX), the txn holds only if the
 * fence key is still at the revision the writer last saw, and moves it: of two txns from one
 * writer, one given up on a timeout and a later one, the earlier can no longer land after the
 * later and undo it (a put of a record the later one deleted). No extra round trip: the txn's
 * answer carries the fence's new revision, or on a refusal its current one.
 */
export async function writeWarmRecords(ctx: IpamContext, writes: readonly WarmRecordWrite[], fence?: WriteFence): Promise<WarmWriteResult> {
  const last = new Map<string, string | undefined>();
  const keys: Record<string, StampedKey> = {};
  for (const w of writes) {
    const key = checkRecordKey(w.key);
    if (w.value === undefined) {
      const before = last.get(key);
      const deletedAlready = last.has(key) && before === undefined;
      // Every field, set or not (encodeStamp's JSON leaves unset ones out): one shape of object
      // for every release, whichever fields it has.
      if (!deletedAlready) keys[key] = { at: w.at ?? ctx.now().getTime(), why: w.why ?? ctx.why ?? 'del', evidence: w.evidence, value: before };
    }
    last.set(key, w.value);
  }
  if (last.size === 0) return { written: true, fenceRev: fence?.rev ?? 0 };
  const ops: Op[] = [...last].map(([key, value]) => (value === undefined ? { type: 'delete', key } : { type: 'put', key, value }));
  ops.push(plainStampOp(ctx, keys));
  if (fence === undefined) {
    const r = await commitWrite(ctx, { what: 'write warm records', compares: [], ops });
    return { written: true, fenceRev: r.rev };
  }
  const fenceKey = checkRecordKey(fence.key);
  ops.push({ type: 'put', key: fenceKey, value: JSON.stringify({ at: new Date(ctx.now().getTime()).toISOString() }) });
  const r = await commitWrite(ctx, { what: 'write warm records', compares: [{ key: fenceKey, rev: fence.rev }], ops });
  return r.succeeded ? { written: true, fenceRev: r.rev } : { written: false, fenceRev: r.current?.[0]?.rev ?? 0 };
}

/** The writer's fence: its key and the revision it last saw there (0: absent, or not known yet). */
export interface WriteFence {
  readonly key: string;
  readonly rev: number;
}

/**
 * `written` false: the fence had moved (a txn of this writer given up earlier has landed since,
 * or this writer's first guess was wrong); nothing was written, `fenceRev` is the fence's
 * revision now, and the caller writes its queue again with it.
 */
export interface WarmWriteResult {
  readonly written: boolean;
  readonly fenceRev: number;
}

/**
 * The pools as of now: one read of the `config` record, and the snapshot reloaded only when its
 * revision (the config generation every pool write bumps) differs from the cached one. What
 * the warm pool's maintenance reads each tick to learn a pool became draining, disabled or deleting.
 */
export async function currentPools(ctx: IpamContext): Promise<{ readonly pools: readonly Pool[]; readonly configRev: number }> {
  const config = await ctx.store.get(CONFIG_KEY);
  if (ctx.cache.snapshot === undefined || ctx.cache.snapshot.configRev !== (config?.rev ?? 0)) ctx.cache.snapshot = await loadSnapshot(ctx.store);
  return { pools: ctx.cache.snapshot.pools, configRev: ctx.cache.snapshot.configRev };
}

/** What decides whether a node's warm pool may still hand out an idle address (warmView). */
export interface WarmView {
  readonly configRev: number;
  readonly pools: readonly Pool[];
  /** Every reservation's CIDRs. */
  readonly reserved: IpRangeSet;
  /** The node's labels (its `nodes/<name>` record; {} without one), for the pools' node selectors. */
  readonly labels: Readonly<Record<string, string>>;
}

/**
 * currentPools with the reservations and the node's labels: two small reads (`config`, the node
 * record), the snapshot reloaded only when the config generation changed.
 */
export async function warmView(ctx: IpamContext, node: string): Promise<WarmView> {
  const [config, rec] = await ctx.store.getMany([CONFIG_KEY, nodeKey(node)]);
  if (ctx.cache.snapshot === undefined || ctx.cache.snapshot.configRev !== (config?.rev ?? 0)) ctx.cache.snapshot = await loadSnapshot(ctx.store);
  const snap = ctx.cache.snapshot;
  return { configRev: snap.configRev, pools: snap.pools, reserved: snap.reserved, labels: labelsOf(rec?.value) };
}
