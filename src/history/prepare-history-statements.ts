/**
 * The history file's prepared statements (history-schema.ts has the tables), each typed with the
 * row its SQL selects.
 */
import type { SqliteDb, Statement } from '../sqlite/index.js';
import { type GapRow, type HoldRow, holdColumns } from './hold-of-row.js';
import type { RecordRow } from './record-of-row.js';

/** A pool's count of starts or ends in grid step `k`. */
interface PoolStep {
  pool: string;
  k: number;
  n: number;
}

export function prepareHistoryStatements(db: SqliteDb, hasEvidence: boolean) {
  const p = <Row = unknown>(sql: string): Statement<Row> => db.prepare<Row>(sql);
  const HOLD_COLUMNS = holdColumns(hasEvidence);
  // Writes name `evidence`; only a read-only open of an older file lacks it, and never writes.
  const w = (sql: string): Statement => (hasEvidence ? p(sql) : p('SELECT NULL WHERE 0'));
  const nulls = Array.from({ length: 11 }, () => 'NULL').join(', ');
  return {
    meta: p<{ name: string; value: unknown }>('SELECT name, value FROM meta'),
    getMeta: p<{ value: number }>('SELECT value FROM meta WHERE name = ?'),
    putMeta: p('INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)'),
    end: w('UPDATE holds SET until_at = ?, until_earliest = ?, why = ?, evidence = ? WHERE address = ? AND handle = ? AND until_at IS NULL'),
    closedAt: p('SELECT 1 FROM holds WHERE address = ? AND handle = ? AND until_at = ?'),
    oldestGap: p<{ t: number | null }>('SELECT min(from_at) AS t FROM gaps'),
    // A start for an (address, handle) already open meets holds_open and is ignored.
    putHold: w(`INSERT OR IGNORE INTO holds (address, handle, pod_ns, pod_name, pod_uid, container_id, ifname, network, node, pool, block,
      lo, from_at, from_earliest, until_at, until_earliest, why, evidence) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
    putGap: p('INSERT INTO gaps (from_at, until_at, cause) VALUES (?, ?, ?)'),
    open: p<HoldRow>(`SELECT ${HOLD_COLUMNS} FROM holds WHERE until_at IS NULL ORDER BY address, from_at`),
    // Overlapping [since, until]: began (at the earliest) at or before `until`, not ended by `since`.
    ofAddress: p<HoldRow>(`SELECT ${HOLD_COLUMNS} FROM holds WHERE address = ? AND lo <= ? AND (until_at IS NULL OR until_at > ?) ORDER BY from_at, id`),
    // Every hold that may cover the instant: began (at the earliest) before it, not ended by it.
    mayCover: p<HoldRow>(`SELECT ${HOLD_COLUMNS} FROM holds WHERE address = ? AND lo <= ? AND (until_at IS NULL OR until_at > ?)`),
    ofPod: p<HoldRow>(
      `SELECT ${HOLD_COLUMNS} FROM holds WHERE pod_ns = ? AND pod_name = ? AND lo <= ? AND (until_at IS NULL OR until_at > ?) ORDER BY from_at, id`,
    ),
    gaps: p<GapRow>('SELECT from_at, until_at, cause FROM gaps WHERE from_at <= ? AND until_at >= ? ORDER BY from_at, id'),
    gapsAt: p<GapRow>('SELECT from_at, until_at, cause FROM gaps WHERE from_at < ? AND until_at > ?'),
    // The export: ends (k 0) before starts (k 1) before gaps (k 2) at one instant; keyset paging on (t, k, id).
    records: p<RecordRow>(`
      SELECT 1 AS k, from_at AS t, id, ${HOLD_COLUMNS} FROM holds
        WHERE from_at >= @t AND NOT (from_at = @t AND (1 < @k OR (1 = @k AND id <= @id)))
      UNION ALL
      SELECT 0 AS k, until_at AS t, id, ${HOLD_COLUMNS} FROM holds
        WHERE until_at >= @t AND NOT (until_at = @t AND (0 < @k OR (0 = @k AND id <= @id)))
      UNION ALL
      SELECT 2 AS k, until_at AS t, id, ${nulls}, from_at, NULL, until_at, NULL, cause, NULL FROM gaps
        WHERE until_at >= @t AND NOT (until_at = @t AND (2 < @k OR (2 = @k AND id <= @id)))
      ORDER BY t, k, id LIMIT @n`),
    // A pool's usage (usage-series.ts): open holds by pool, changes after @since by grid step (t − since) / step rounded up.
    openByPool: p<{ pool: string; n: number }>(
      'SELECT pool, count(*) AS n FROM holds INDEXED BY holds_open WHERE until_at IS NULL AND pool IS NOT NULL GROUP BY pool',
    ),
    startsByStep: p<PoolStep>(
      'SELECT pool, CAST((from_at - @since + @step - 1) / @step AS INTEGER) AS k, count(*) AS n FROM holds WHERE from_at > @since AND pool IS NOT NULL GROUP BY pool, k',
    ),
    endsByStep: p<PoolStep>(
      'SELECT pool, CAST((until_at - @since + @step - 1) / @step AS INTEGER) AS k, count(*) AS n FROM holds WHERE until_at > @since AND pool IS NOT NULL GROUP BY pool, k',
    ),
    purgeHolds: p('DELETE FROM holds WHERE until_at < ?'),
    purgeGaps: p('DELETE FROM gaps WHERE until_at < ?'),
    counts: p<{ holds: number; open: number; gaps: number }>(
      'SELECT (SELECT count(*) FROM holds) AS holds, (SELECT count(*) FROM holds INDEXED BY holds_open WHERE until_at IS NULL) AS open, (SELECT count(*) FROM gaps) AS gaps',
    ),
  };
}
