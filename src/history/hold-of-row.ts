/** The rows of the history file's `holds` and `gaps` tables (history-schema.ts) and the model values they hold. */
import { type HistoryGap, type HistoryTime, type Hold, type ReleaseReason, decodeReleaseEvidence } from '../model/history.js';

/** One row of `holds`. */
export interface HoldRow {
  address: string;
  handle: string;
  pod_ns: string | null;
  pod_name: string | null;
  pod_uid: string | null;
  container_id: string | null;
  ifname: string | null;
  network: string | null;
  node: string | null;
  pool: string | null;
  block: string | null;
  from_at: number;
  from_earliest: number | null;
  until_at: number | null;
  until_earliest: number | null;
  why: string | null;
  evidence: string | null;
}

export interface GapRow {
  from_at: number;
  until_at: number;
  cause: string;
}

/** The holds' columns read; a file written before `evidence` existed, opened read-only, reads NULL there. */
export function holdColumns(hasEvidence: boolean): string {
  return `address, handle, pod_ns, pod_name, pod_uid, container_id, ifname, network, node, pool, block, from_at, from_earliest, until_at, until_earliest, why, ${hasEvidence ? 'evidence' : 'NULL AS evidence'}`;
}

/** The end of the hold in `r`, which ended at `at` (its `until_at`). */
export function untilOfRow(at: number, r: HoldRow): NonNullable<Hold['until']> {
  const why = (r.why ?? 'unknown') as ReleaseReason;
  // Evidence that does not decode (a hand-edited file) is left out, never guessed.
  const decoded = r.evidence === null ? undefined : decodeReleaseEvidence(r.evidence);
  const evidence = decoded === undefined || typeof decoded === 'string' ? {} : { evidence: decoded };
  return r.until_earliest === null ? { at, why, ...evidence } : { at, earliest: r.until_earliest, why, ...evidence };
}

export function holdOfRow(r: HoldRow): Hold {
  const from: HistoryTime = r.from_earliest === null ? { at: r.from_at } : { at: r.from_at, earliest: r.from_earliest };
  const h: { -readonly [K in keyof Hold]: Hold[K] } = { address: r.address, handle: r.handle, from };
  if (r.pod_ns !== null && r.pod_name !== null)
    h.pod = r.pod_uid === null ? { namespace: r.pod_ns, name: r.pod_name } : { namespace: r.pod_ns, name: r.pod_name, uid: r.pod_uid };
  if (r.container_id !== null) h.containerId = r.container_id;
  if (r.ifname !== null) h.ifname = r.ifname;
  if (r.network !== null) h.network = r.network;
  if (r.node !== null) h.node = r.node;
  if (r.pool !== null) h.pool = r.pool;
  if (r.block !== null) h.block = r.block;
  if (r.until_at !== null) h.until = untilOfRow(r.until_at, r);
  return h;
}

export function gapOfRow(r: GapRow): HistoryGap {
  return { from: r.from_at, until: r.until_at, cause: r.cause };
}
