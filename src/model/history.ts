/**
 * Allocation history: who held an address, from when until when, and why it was
 * released. The shared vocabulary of the writers (src/cluster stamps every allocating or
 * releasing transaction, src/history/history-stamp.ts documents the stamp), the follower that
 * derives holds from the datastore's change stream (src/history), and the readers (CLI, API,
 * dashboard).
 *
 * Times are milliseconds since the epoch, as the writer's clock read them. A time that is not
 * known exactly (it fell in a gap of the history: serve was away longer than the datastore kept
 * its changes, or the hold began before history did) is an interval `{at, earliest}`: it happened
 * after `earliest` and at or before `at`. Answers inside such an interval say "unknown", never guess.
 */
import type { PodRef } from './pod-ref.js';

/** Why an address stopped being held. */
export const RELEASE_REASONS = [
  /** The runtime's CNI DEL (per-pod plugin, agent, warm pool). */
  'del',
  /** The runtime's CNI GC (its valid-attachments list did not name the attachment). */
  'cni-gc',
  /** `podipam serve`'s cluster GC (a deleted node's pods, a proven leak). */
  'cluster-gc',
  /** The agent's warm-pool GC (the API server says the pod is deleted). */
  'warm-gc',
  /** A sticky pod's hold expired and serve's GC released it. */
  'sticky-expired',
  /** An operator: `podipam ipam release`, the API's release. */
  'release',
  /** An importer replaced the record. */
  'import',
  /** A reconcile proved the hold stale (agent restart against the datastore). */
  'reconcile',
  /** The node's container runtime, asked twice over CRI past the creation grace, lists no sandbox of that id (runtime reconciliation). */
  'runtime-absent',
  /** Not stated by the writer (an older writer, a tool): the follower saw the record go. */
  'unknown',
] as const;
export type ReleaseReason = (typeof RELEASE_REASONS)[number];

export function isReleaseReason(v: unknown): v is ReleaseReason {
  return typeof v === 'string' && (RELEASE_REASONS as readonly string[]).includes(v);
}

/**
 * What a `runtime-absent` release rests on: the runtime's two answers (the times their requests
 * were sent, ms) that both lacked the container id, and the allocation's age at the earlier one
 * (a lower bound, ms). Kept with the release in the history (the stamp, the warm pool's queued
 * delete, the history file) in one form: encodeReleaseEvidence / decodeReleaseEvidence.
 */
export interface ReleaseEvidence {
  readonly containerId: string;
  readonly lists: readonly [number, number];
  readonly ageMs: number;
}

/** The evidence as the plain object every record keeps (JSON: `{"containerId","lists":[t1,t2],"ageMs"}`). */
export function encodeReleaseEvidence(e: ReleaseEvidence): { containerId: string; lists: [number, number]; ageMs: number } {
  return { containerId: e.containerId, lists: [e.lists[0], e.lists[1]], ageMs: e.ageMs };
}

/** The evidence from a record's field (parsed JSON, or its text); a string naming what is wrong otherwise. */
export function decodeReleaseEvidence(v: unknown): ReleaseEvidence | string {
  let o = v;
  if (typeof v === 'string') {
    try {
      o = JSON.parse(v);
    } catch {
      return `evidence is not JSON: ${JSON.stringify(v.slice(0, 80))}`;
    }
  }
  const r = o as Record<string, unknown> | null;
  if (typeof r !== 'object' || r === null) return `evidence is ${JSON.stringify(o)}, not an object`;
  const lists = r.lists;
  const time = (t: unknown): t is number => typeof t === 'number' && Number.isFinite(t);
  if (typeof r.containerId !== 'string' || r.containerId === '') return `evidence.containerId is ${JSON.stringify(r.containerId)}`;
  if (!Array.isArray(lists) || lists.length !== 2 || !time(lists[0]) || !time(lists[1]) || lists[0] > lists[1])
    return `evidence.lists is ${JSON.stringify(lists)}, not two times in order`;
  if (!time(r.ageMs) || r.ageMs < 0) return `evidence.ageMs is ${JSON.stringify(r.ageMs)}`;
  return { containerId: r.containerId, lists: [lists[0], lists[1]], ageMs: r.ageMs };
}

/** An instant, exact (`earliest` absent) or known only to lie in (earliest, at]. */
export interface HistoryTime {
  readonly at: number;
  readonly earliest?: number;
}

/** Who held an address: the pod and attachment, as the allocation's records named them. */
export interface HolderInfo {
  readonly address: string;
  /** The datastore handle the address was held under (a warm pool's pod: its attachment key). */
  readonly handle: string;
  readonly pod?: PodRef;
  readonly containerId?: string;
  readonly ifname?: string;
  readonly network?: string;
  readonly node?: string;
  readonly pool?: string;
  /** The block the address lies in (canonical CIDR), when known. */
  readonly block?: string;
}

/** One holding of one address: from its assignment to its release (absent: still held). */
export interface Hold extends HolderInfo {
  readonly from: HistoryTime;
  /** The release: when, why, and for a `runtime-absent` one what it rested on. */
  readonly until?: HistoryTime & { readonly why: ReleaseReason; readonly evidence?: ReleaseEvidence };
}

/** An interval the history cannot cover; answers about instants inside it are "unknown". */
export interface HistoryGap {
  readonly from: number;
  readonly until: number;
  /** Why, in words: "serve was not following the datastore and etcd compacted revisions 120-4000", "before history began". */
  readonly cause: string;
}

/** The answer about one instant: the holder (or none), or unknown because the instant is in a gap. */
export type HolderAt = { readonly known: true; readonly hold: Hold | undefined } | { readonly known: false; readonly gap: HistoryGap };
