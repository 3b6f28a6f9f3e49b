/** The rows of the history export's query (prepare-history-statements.ts, `records`) and the records they are. */
import type { HistoryRecord } from './history-db.js';
import { type HoldRow, holdOfRow, untilOfRow } from './hold-of-row.js';

/** Where the row sits in the export's order (t, k, id). */
interface RecordKey {
  t: number;
  id: number;
}

/**
 * One row of the export: a hold's start (k 1), a hold's end (k 0: its `until_at` is set) or a
 * gap (k 2: `from_at`, `until_at` and, as `why`, its cause; the hold columns NULL).
 */
export type RecordRow =
  (HoldRow & RecordKey & { k: 1 }) | (HoldRow & RecordKey & { k: 0; until_at: number }) | (HoldRow & RecordKey & { k: 2; until_at: number; why: string });

export function recordOfRow(r: RecordRow): HistoryRecord {
  if (r.k === 2) return { event: 'gap', from: r.from_at, until: r.until_at, cause: r.why };
  const { from: _from, until, ...info } = holdOfRow(r);
  if (r.k === 1)
    return r.from_earliest === null ? { event: 'assigned', at: r.from_at, ...info } : { event: 'assigned', at: r.from_at, earliest: r.from_earliest, ...info };
  // holdOfRow read the end of a row whose until_at is set; untilOfRow only gives the type that.
  const u = until ?? untilOfRow(r.until_at, r);
  const evidence = u.evidence ? { evidence: u.evidence } : {};
  return u.earliest === undefined
    ? { event: 'released', at: u.at, why: u.why, ...evidence, ...info }
    : { event: 'released', at: u.at, earliest: u.earliest, why: u.why, ...evidence, ...info };
}
