/**
 * The history stamp: every transaction of the cluster back end that assigns or releases an
 * address also puts `stamps/<writer>` → `{"at":…,"why":…}` (one more op in the same transaction,
 * never one more round trip). The datastore's change stream then tells `podipam serve`'s history
 * follower (src/history) not only what changed but when the writer did it and why — a release
 * by DEL, CNI GC, cluster GC, … — even when the follower reads those revisions long after.
 *
 * Reasons: a release stamps the context's reason (ClusterIpam.withReason), else the operation's
 * own (releaseStampOp: DEL; gc-node.ts CNI GC; gc-findings.ts cluster GC; sticky-holds.ts
 * sticky-expired); an assignment stamps only a reason the context names (an import).
 *
 * One key per writer (a node name, "serve", "cli"), overwritten by each of its transactions: the
 * datastore keeps the key's values as long as it keeps revisions (etcd until compaction, SQLite's
 * bounded change log), which is exactly the window in which the follower can read them.
 *
 * `keys` carries per-record times and reasons for a transaction that settles many attachments at
 * once (the warm pool's write-behind: each pod record's DEL time, and a record whose put was folded
 * away because its DEL came before the flush, so that hold is not lost from the history).
 *
 * `evidence` (top level, or per key) is what a `runtime-absent` release rests on — the runtime's
 * two answers' times, the container id, the age (model/history.ts's ReleaseEvidence and its
 * codec) — so the history shows the proof with the release.
 */
import { type ReleaseEvidence, type ReleaseReason, decodeReleaseEvidence, encodeReleaseEvidence, isReleaseReason } from '../../model/history.js';
import type { Op } from '../../store/index.js';
import { CorruptRecordError } from './errors.js';

export const STAMP_PREFIX = 'stamps/';

/** What a stamp is made of: the fields of an operation's context (views/ipam-context.ts's IpamContext) it reads. */
export interface StampContext {
  /** The clock the stamp's `at` is read from. */
  readonly now: () => Date;
  /** Who writes: the stamp's key. */
  readonly writer: string;
  /** The context's release reason, if it names one. */
  readonly why?: ReleaseReason;
  /** What the context's releases rest on, stamped with `why`. */
  readonly evidence?: ReleaseEvidence;
}

/**
 * What one record of a write-behind batch did (warm-handles.ts): its first delete in the batch, at
 * `at` for `why`; `value`: a put of the same batch that this delete folded away (never written:
 * that hold began at its own `since` and ended at `at`). The transaction's own op on the key is
 * its last write: a delete, or a put written after the delete (then the earlier value ended at `at`).
 */
export interface StampedKey {
  readonly at: number;
  readonly why: ReleaseReason;
  readonly evidence?: ReleaseEvidence;
  readonly value?: string;
}

export interface Stamp {
  /** When the writer ran the transaction (its clock, ms since the epoch). */
  readonly at: number;
  /** Why the addresses this transaction frees were released (absent: it frees none by intent). */
  readonly why?: ReleaseReason;
  /** What a runtime-absent release rests on (the context's, ClusterIpam.withReason). */
  readonly evidence?: ReleaseEvidence;
  /** Per record key (write-behind batches): when and why each was deleted. */
  readonly keys?: Readonly<Record<string, StampedKey>>;
}

export function stampKey(writer: string): string {
  return STAMP_PREFIX + writer;
}

/*
 * STAMP_SHAPE: the stamps an agent writes (stampOp, plainStampOp) and their encoding are built as
 * objects of all four fields, never as `{ at }` plus fields (decodeStamp, which the agent does not
 * run, keeps its own): V8 gives literals of the same field names one hidden class, process-wide, so a
 * `{ at }` literal elsewhere holding a string (the agent's headroom status) turned the number
 * field generic and threw away every optimised function that built or read a stamp — with V8
 * optimising during the agent's warm-up only, for the agent's life (V8's --trace-generalization).
 */
export function encodeStamp(s: Stamp): string {
  // Every field, the absent ones undefined (JSON.stringify leaves them out): see STAMP_SHAPE.
  const o = {
    at: s.at,
    why: s.why,
    evidence: s.evidence !== undefined ? encodeReleaseEvidence(s.evidence) : undefined,
    keys:
      s.keys !== undefined && Object.keys(s.keys).length > 0
        ? Object.fromEntries(Object.entries(s.keys).map(([k, v]) => [k, v.evidence === undefined ? v : { ...v, evidence: encodeReleaseEvidence(v.evidence) }]))
        : undefined,
  };
  return JSON.stringify(o);
}

/** Decodes a stamp value; CorruptRecordError naming the key and the field. */
export function decodeStamp(key: string, value: string): Stamp {
  let o: unknown;
  try {
    o = JSON.parse(value);
  } catch {
    throw new CorruptRecordError(key, 'not JSON');
  }
  if (typeof o !== 'object' || o === null) throw new CorruptRecordError(key, 'not an object');
  const r = o as Record<string, unknown>;
  if (typeof r.at !== 'number' || !Number.isFinite(r.at)) throw new CorruptRecordError(key, `field "at" is ${JSON.stringify(r.at)}`);
  if (r.why !== undefined && !isReleaseReason(r.why)) throw new CorruptRecordError(key, `field "why" is ${JSON.stringify(r.why)}`);
  const evidenceOf = (field: string, v: unknown): ReleaseEvidence | undefined => {
    if (v === undefined) return undefined;
    const e = decodeReleaseEvidence(v);
    if (typeof e === 'string') throw new CorruptRecordError(key, `field ${field}: ${e}`);
    return e;
  };
  const evidence = evidenceOf('"evidence"', r.evidence);
  let keys: Record<string, StampedKey> | undefined;
  if (r.keys !== undefined) {
    if (typeof r.keys !== 'object' || r.keys === null) throw new CorruptRecordError(key, 'field "keys" is not an object');
    keys = {};
    for (const [k, v] of Object.entries(r.keys as Record<string, unknown>)) {
      const e = v as Record<string, unknown> | null;
      if (
        typeof e !== 'object' ||
        e === null ||
        typeof e.at !== 'number' ||
        !isReleaseReason(e.why) ||
        (e.value !== undefined && typeof e.value !== 'string')
      ) {
        throw new CorruptRecordError(key, `keys[${JSON.stringify(k)}] is ${JSON.stringify(v)}`);
      }
      const ev = evidenceOf(`keys[${JSON.stringify(k)}].evidence`, e.evidence);
      keys[k] = { at: e.at, why: e.why, ...(ev ? { evidence: ev } : {}), ...(e.value === undefined ? {} : { value: e.value }) };
    }
  }
  return { at: r.at, ...(r.why === undefined ? {} : { why: r.why }), ...(evidence ? { evidence } : {}), ...(keys ? { keys } : {}) };
}

/** The stamp of a transaction that frees addresses: the context's reason, else `fallback` (the operation's own: DEL, CNI GC, …). */
export function releaseStampOp(ctx: StampContext, fallback: ReleaseReason = 'del', keys?: Readonly<Record<string, StampedKey>>): Op {
  return stampOp(ctx, ctx.why ?? fallback, keys);
}

/** The stamp of a transaction that frees nothing by intent (an assignment, a write-behind batch of record puts): time only, plus `keys`. */
export function plainStampOp(ctx: StampContext, keys?: Readonly<Record<string, StampedKey>>): Op {
  const s: Stamp = { at: ctx.now().getTime(), why: undefined, evidence: undefined, keys }; // STAMP_SHAPE
  return { type: 'put', key: stampKey(ctx.writer), value: encodeStamp(s) };
}

/** The stamp op a transaction of `ctx` appends: now, `why` (default: the context's reason). */
export function stampOp(ctx: StampContext, why: ReleaseReason | undefined = ctx.why, keys?: Readonly<Record<string, StampedKey>>): Op {
  const evidence = why !== undefined && why === ctx.why ? ctx.evidence : undefined;
  // STAMP_SHAPE: every field, the absent ones undefined (left out of the encoded value).
  const s: Stamp = { at: ctx.now().getTime(), why, evidence, keys };
  return { type: 'put', key: stampKey(ctx.writer), value: encodeStamp(s) };
}
