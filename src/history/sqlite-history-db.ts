/**
 * The history store on SQLite (history-db.ts is the contract; history-schema.ts the tables).
 *
 * `podipam serve` opens it read-write (the follower is its only writer); the CLI opens serve's live
 * file read-only. WAL: a reader never waits for the writer and sees whole batches only.
 * synchronous=NORMAL: a committed batch survives serve's crash; a power loss may lose the last
 * batches together with their position, which the follower then applies again.
 *
 * Choices the contract leaves open:
 * - An end with no open hold (the hold began before history did, or in a gap whose relist the
 *   follower did not see) is kept as a hold with `from = {at: until.at, earliest: E}`, E being the
 *   start of the oldest gap recorded before the end, else 0: it began at an unknown time before
 *   its end, no earlier than the history can say anything. An end that repeats a hold already
 *   closed at the same time (address, handle, until.at) is a replay and ignored, like a replayed
 *   start.
 * - A batch whose `source` differs from the position's is refused (HistoryDbError): a history file
 *   follows one datastore.
 * - After `purge(before)`, instants before `before` that no kept hold covers are unknown (the
 *   retention horizon, kept in the file).
 * - Instants after the position's time are answered from what was applied (the follower's
 *   position time is that of the last change, not of the last check).
 */
import { closeSync, mkdirSync, openSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import { formatAddr, tryParseAddr } from '../ip/addr.js';
import type { Failure } from '../model/failure.js';
import {
  type HistoryGap,
  type HistoryTime,
  type Hold,
  type HolderAt,
  type ReleaseReason,
  decodeReleaseEvidence,
  encodeReleaseEvidence,
} from '../model/history.js';
import type { FollowPosition, HistoryBatch, HistoryDb, HistoryRecord, HoldEnd, HoldStart, TimeRange } from './history-db.js';
import { HISTORY_KIND, HISTORY_SCHEMA, HISTORY_SCHEMA_VERSION } from './history-schema.js';
import { holderAtOf } from './holder-at.js';
import type { UsageCounts } from './usage-series.js';

interface Statement {
  run(...params: unknown[]): { changes: number };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
}
interface Transaction<A extends unknown[], R> {
  (...args: A): R;
  deferred(...args: A): R;
  immediate(...args: A): R;
}
interface Database {
  pragma(source: string, options?: { simple?: boolean }): unknown;
  prepare(sql: string): Statement;
  exec(sql: string): void;
  transaction<A extends unknown[], R>(fn: (...args: A) => R): Transaction<A, R>;
  close(): void;
}
type DatabaseConstructor = new (path: string, options?: { timeout?: number; fileMustExist?: boolean; readonly?: boolean }) => Database;

const BUSY_TIMEOUT_MS = 5000;
/** Rows per page of the export (records()). */
const RECORDS_PAGE = 2000;

/** The history file cannot be opened, is not a history file, or refuses a batch; the message names the file. */
export class HistoryDbError extends Error {
  override readonly name = 'HistoryDbError';
  readonly failure: Failure = 'io';
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(message);
  }
}

export interface OpenHistoryDbOptions {
  /** Read-only (the CLI reading serve's live file): the file must exist and is never created or changed. */
  readonly readonly?: boolean;
}

/** Opens (creating it, unless read-only) the history file at `path`. */
export function openHistoryDb(path: string, options: OpenHistoryDbOptions = {}): HistoryDb {
  return SqliteHistoryDb.open(path, options.readonly ?? false);
}

/** One row of `holds`. */
interface HoldRow {
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
interface GapRow {
  from_at: number;
  until_at: number;
  cause: string;
}
/** One row of the export's query: a hold's start (k 1), end (k 0) or a gap (k 2). */
interface RecordRow extends HoldRow {
  k: 0 | 1 | 2;
  t: number;
  id: number;
}

/** The holds' columns read; a file written before `evidence` existed, opened read-only, reads NULL there. */
function holdColumns(hasEvidence: boolean): string {
  return `address, handle, pod_ns, pod_name, pod_uid, container_id, ifname, network, node, pool, block, from_at, from_earliest, until_at, until_earliest, why, ${hasEvidence ? 'evidence' : 'NULL AS evidence'}`;
}

/** Columns added to `holds` since schema version 1 was first written: added in place on a writable open (NULL in older rows). */
const ADDED_HOLD_COLUMNS = [{ column: 'evidence', type: 'TEXT' }] as const;

function hasColumn(db: Database, column: string): boolean {
  return (db.pragma('table_info(holds)') as { name: string }[]).some((c) => c.name === column);
}

/** The canonical text of an address (the form rows are kept and looked up in); other text as given. */
export function canonicalAddress(text: string): string {
  const a = tryParseAddr(text);
  return a === undefined ? text : formatAddr(a);
}

function holdOfRow(r: HoldRow): Hold {
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
  if (r.until_at !== null) {
    const why = (r.why ?? 'unknown') as ReleaseReason;
    // Evidence that does not decode (a hand-edited file) is left out, never guessed.
    const decoded = r.evidence === null ? undefined : decodeReleaseEvidence(r.evidence);
    const evidence = decoded === undefined || typeof decoded === 'string' ? {} : { evidence: decoded };
    h.until = r.until_earliest === null ? { at: r.until_at, why, ...evidence } : { at: r.until_at, earliest: r.until_earliest, why, ...evidence };
  }
  return h;
}

function gapOfRow(r: GapRow): HistoryGap {
  return { from: r.from_at, until: r.until_at, cause: r.cause };
}

function checkTime(what: string, t: HistoryTime | undefined): void {
  if (t === undefined || !Number.isFinite(t.at)) throw new TypeError(`history batch: ${what}.at must be a finite number, got ${JSON.stringify(t?.at)}`);
  if (t.earliest !== undefined && !(Number.isFinite(t.earliest) && t.earliest <= t.at)) {
    throw new TypeError(`history batch: ${what}.earliest must be a finite number not after ${what}.at (${t.at}), got ${JSON.stringify(t.earliest)}`);
  }
}

function checkBatch(b: HistoryBatch): void {
  const str = (what: string, v: unknown): void => {
    if (typeof v !== 'string' || v === '') throw new TypeError(`history batch: ${what} must be a non-empty string, got ${JSON.stringify(v)}`);
  };
  b.ends.forEach((e, i) => {
    str(`ends[${i}].address`, e.address);
    str(`ends[${i}].handle`, e.handle);
    checkTime(`ends[${i}].until`, e.until);
  });
  b.starts.forEach((s, i) => {
    str(`starts[${i}].address`, s.address);
    str(`starts[${i}].handle`, s.handle);
    checkTime(`starts[${i}].from`, s.from);
  });
  (b.gaps ?? []).forEach((g, i) => {
    if (!(Number.isFinite(g.from) && Number.isFinite(g.until) && g.from <= g.until)) {
      throw new TypeError(`history batch: gaps[${i}] must have finite from <= until, got ${JSON.stringify({ from: g.from, until: g.until })}`);
    }
  });
  str('position.source', b.position.source);
  if (!Number.isSafeInteger(b.position.revision) || b.position.revision < 0) {
    throw new TypeError(`history batch: position.revision must be a non-negative integer, got ${JSON.stringify(b.position.revision)}`);
  }
  if (!Number.isFinite(b.position.at)) throw new TypeError(`history batch: position.at must be a finite number, got ${JSON.stringify(b.position.at)}`);
  if (b.position.identity !== undefined) str('position.identity', b.position.identity);
}

class SqliteHistoryDb implements HistoryDb {
  readonly path: string;
  readonly #db: Database;
  readonly #readonly: boolean;
  readonly #st: ReturnType<typeof prepare>;
  readonly #apply: Transaction<[HistoryBatch], void>;
  readonly #read: Transaction<[() => unknown], unknown>;
  #closed = false;

  private constructor(path: string, db: Database, readonly: boolean) {
    this.path = path;
    this.#db = db;
    this.#readonly = readonly;
    this.#st = prepare(db, hasColumn(db, 'evidence'));
    this.#apply = db.transaction((b: HistoryBatch) => this.#applyIn(b));
    this.#read = db.transaction((fn: () => unknown) => fn());
  }

  static open(path: string, readonly: boolean): SqliteHistoryDb {
    const file = resolve(path);
    const fail = (why: string): HistoryDbError => new HistoryDbError(file, `history file ${file}: ${why}`);
    let size: number | undefined;
    try {
      const st = statSync(file);
      if (!st.isFile()) throw fail('not a regular file');
      size = st.size;
    } catch (e) {
      if (e instanceof HistoryDbError) throw e;
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw fail((e as Error).message);
    }
    if (size === undefined && readonly) throw fail('does not exist (podipam serve creates it when it follows a datastore with history on)');
    if (size === undefined) {
      try {
        mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
        // Pod names and addresses: readable by the owner only (SQLite gives -wal and -shm the same mode).
        closeSync(openSync(file, 'wx', 0o600));
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw fail(`cannot be created: ${(e as Error).message}`);
      }
    }
    const Db = createRequire(import.meta.url)('better-sqlite3') as DatabaseConstructor;
    let db: Database | undefined;
    try {
      db = new Db(file, { timeout: BUSY_TIMEOUT_MS, fileMustExist: true, readonly });
      if (!readonly) {
        db.pragma('journal_mode = WAL');
        db.pragma('synchronous = NORMAL');
        db.pragma('cache_size = -65536');
        const opened = db;
        const tables = (): number => (opened.prepare(`SELECT count(*) AS n FROM sqlite_master`).get() as { n: number }).n;
        // A new (empty) file gets the schema; an existing one is never written over.
        if (tables() === 0) {
          db.transaction(() => {
            if (tables() !== 0) return;
            opened.exec(HISTORY_SCHEMA);
            const put = opened.prepare('INSERT INTO meta (name, value) VALUES (?, ?)');
            put.run('kind', HISTORY_KIND);
            put.run('schema', HISTORY_SCHEMA_VERSION);
          }).immediate();
        }
      }
      checkKind(db, fail);
      if (!readonly) {
        const opened = db;
        for (const c of ADDED_HOLD_COLUMNS) if (!hasColumn(opened, c.column)) opened.exec(`ALTER TABLE holds ADD COLUMN ${c.column} ${c.type}`);
      }
      return new SqliteHistoryDb(file, db, readonly);
    } catch (e) {
      db?.close();
      if (e instanceof HistoryDbError) throw e;
      if ((e as { code?: string }).code === 'SQLITE_NOTADB') throw fail(`not a podipam history file (${(e as Error).message})`);
      throw fail((e as Error).message);
    }
  }

  position(): FollowPosition | undefined {
    this.#checkOpen();
    return this.#read.deferred(() => this.#positionIn()) as FollowPosition | undefined;
  }

  #positionIn(): FollowPosition | undefined {
    const rows = this.#st.meta.all() as { name: string; value: unknown }[];
    const m = new Map(rows.map((r) => [r.name, r.value]));
    const source = m.get('source');
    if (typeof source !== 'string') return undefined;
    const identity = m.get('identity');
    return { source, revision: Number(m.get('revision')), at: Number(m.get('at')), ...(typeof identity === 'string' ? { identity } : {}) };
  }

  apply(batch: HistoryBatch): void {
    this.#checkWritable();
    checkBatch(batch);
    this.#apply.immediate(batch);
  }

  #applyIn(b: HistoryBatch): void {
    const st = this.#st;
    const pos = this.#positionIn();
    if (pos !== undefined && pos.source !== b.position.source) {
      throw new HistoryDbError(
        this.path,
        `history file ${this.path} follows datastore ${pos.source}, not ${b.position.source}: use another history file for another datastore`,
      );
    }
    let oldestGap: number | null | undefined;
    for (const e of b.ends) this.#end(e, () => (oldestGap === undefined ? (oldestGap = (st.oldestGap.get() as { t: number | null }).t) : oldestGap));
    for (const s of b.starts) this.#start(s);
    for (const g of b.gaps ?? []) st.putGap.run(g.from, g.until, g.cause);
    st.putMeta.run('source', b.position.source);
    st.putMeta.run('revision', b.position.revision);
    st.putMeta.run('at', b.position.at);
    if (b.position.identity !== undefined) st.putMeta.run('identity', b.position.identity);
  }

  #end(e: HoldEnd, oldestGap: () => number | null): void {
    const st = this.#st;
    const address = canonicalAddress(e.address);
    const earliest = e.until.earliest ?? null;
    const evidence = e.evidence === undefined ? null : JSON.stringify(encodeReleaseEvidence(e.evidence));
    if (st.end.run(e.until.at, earliest, e.why, evidence, address, e.handle).changes > 0) return;
    if (st.closedAt.get(address, e.handle, e.until.at) !== undefined) return; // a replayed end
    const g = oldestGap();
    const lowest = Math.min(e.until.at, earliest ?? e.until.at);
    const fromEarliest = g !== null && g <= lowest ? g : Math.min(0, lowest);
    st.putHold.run(
      address,
      e.handle,
      null,
      null,
      null,
      null,
      null,
      null,
      null,
      null,
      null,
      fromEarliest,
      e.until.at,
      fromEarliest,
      e.until.at,
      earliest,
      e.why,
      evidence,
    );
  }

  #start(s: HoldStart): void {
    const earliest = s.from.earliest ?? null;
    const n = (v: string | undefined): string | null => v ?? null;
    this.#st.putHold.run(
      canonicalAddress(s.address),
      s.handle,
      n(s.pod?.namespace),
      n(s.pod?.name),
      n(s.pod?.uid),
      n(s.containerId),
      n(s.ifname),
      n(s.network),
      n(s.node),
      n(s.pool),
      n(s.block),
      earliest ?? s.from.at,
      s.from.at,
      earliest,
      null,
      null,
      null,
      null,
    );
  }

  openHolds(): Hold[] {
    this.#checkOpen();
    return (this.#st.open.all() as HoldRow[]).map(holdOfRow);
  }

  holdsOfAddress(address: string, range: TimeRange = {}): Hold[] {
    this.#checkOpen();
    const rows = this.#st.ofAddress.all(canonicalAddress(address), range.until ?? Number.MAX_VALUE, range.since ?? -Number.MAX_VALUE) as HoldRow[];
    return rows.map(holdOfRow);
  }

  holderAt(address: string, at: number): HolderAt {
    this.#checkOpen();
    if (!Number.isFinite(at)) throw new TypeError(`holderAt: the instant must be a finite number of ms, got ${String(at)}`);
    const addr = canonicalAddress(address);
    return this.#read.deferred(() => {
      const holds = (this.#st.mayCover.all(addr, at, at) as HoldRow[]).map(holdOfRow);
      const gaps = (this.#st.gapsAt.all(at, at) as GapRow[]).map(gapOfRow);
      const horizon = this.#st.getMeta.get('horizon') as { value: number } | undefined;
      return holderAtOf(holds, gaps, at, horizon?.value);
    }) as HolderAt;
  }

  holdsOfPod(namespace: string, name: string, range: TimeRange = {}): Hold[] {
    this.#checkOpen();
    const rows = this.#st.ofPod.all(namespace, name, range.until ?? Number.MAX_VALUE, range.since ?? -Number.MAX_VALUE) as HoldRow[];
    return rows.map(holdOfRow);
  }

  gaps(range: TimeRange = {}): HistoryGap[] {
    this.#checkOpen();
    return (this.#st.gaps.all(range.until ?? Number.MAX_VALUE, range.since ?? -Number.MAX_VALUE) as GapRow[]).map(gapOfRow);
  }

  *records(since: number, limit = Infinity): Iterable<HistoryRecord> {
    this.#checkOpen();
    let left = limit;
    let after = { t: since, k: -1, id: -1 };
    while (left > 0) {
      const n = Math.min(RECORDS_PAGE, left);
      const rows = this.#st.records.all({ t: after.t, k: after.k, id: after.id, n }) as RecordRow[];
      for (const r of rows) yield recordOfRow(r);
      left -= rows.length;
      if (rows.length < n) return;
      const last = rows[rows.length - 1]!;
      after = { t: last.t, k: last.k, id: last.id };
    }
  }

  poolUsage(since: number, step: number): Map<string, UsageCounts> {
    this.#checkOpen();
    const out = new Map<string, { open: number; starts: Map<number, number>; ends: Map<number, number> }>();
    const of = (pool: string): { open: number; starts: Map<number, number>; ends: Map<number, number> } => {
      let c = out.get(pool);
      if (!c) out.set(pool, (c = { open: 0, starts: new Map(), ends: new Map() }));
      return c;
    };
    if (!Number.isInteger(since) || !Number.isInteger(step) || step < 1)
      throw new RangeError(`poolUsage: since must be an integer of ms and step a positive one: got ${since}, ${step}`);
    // One read transaction: the open count and the changes describe one state of the file.
    return this.#read.deferred(() => {
      for (const r of this.#st.openByPool.all() as { pool: string; n: number }[]) of(r.pool).open = r.n;
      for (const r of this.#st.startsByStep.all({ since, step }) as { pool: string; k: number; n: number }[]) of(r.pool).starts.set(r.k, r.n);
      for (const r of this.#st.endsByStep.all({ since, step }) as { pool: string; k: number; n: number }[]) of(r.pool).ends.set(r.k, r.n);
      return out;
    }) as Map<string, UsageCounts>;
  }

  purge(before: number): number {
    this.#checkWritable();
    if (!Number.isFinite(before)) throw new TypeError(`purge: the instant must be a finite number of ms, got ${String(before)}`);
    return this.#db
      .transaction(() => {
        const dropped = this.#st.purgeHolds.run(before).changes;
        this.#st.purgeGaps.run(before);
        const h = this.#st.getMeta.get('horizon') as { value: number } | undefined;
        if (h === undefined || h.value < before) this.#st.putMeta.run('horizon', before);
        return dropped;
      })
      .immediate();
  }

  stats(): { readonly holds: number; readonly openHolds: number; readonly gaps: number; readonly bytes: number } {
    this.#checkOpen();
    return this.#read.deferred(() => {
      const c = this.#st.counts.get() as { holds: number; open: number; gaps: number };
      const pages = this.#db.pragma('page_count', { simple: true }) as number;
      const pageSize = this.#db.pragma('page_size', { simple: true }) as number;
      return { holds: c.holds, openHolds: c.open, gaps: c.gaps, bytes: pages * pageSize };
    }) as { holds: number; openHolds: number; gaps: number; bytes: number };
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#db.close();
  }

  #checkOpen(): void {
    if (this.#closed) throw new HistoryDbError(this.path, `history file ${this.path} is closed`);
  }

  #checkWritable(): void {
    this.#checkOpen();
    if (this.#readonly) throw new HistoryDbError(this.path, `history file ${this.path} is open read-only`);
  }
}

function checkKind(db: Database, fail: (why: string) => HistoryDbError): void {
  let kind: unknown;
  let schema: unknown;
  try {
    const get = db.prepare('SELECT value FROM meta WHERE name = ?');
    kind = (get.get('kind') as { value: unknown } | undefined)?.value;
    schema = (get.get('schema') as { value: unknown } | undefined)?.value;
  } catch (e) {
    throw fail(`not a podipam history file (${(e as Error).message})`);
  }
  if (kind !== HISTORY_KIND) throw fail('not a podipam history file (an SQLite database of something else)');
  if (schema !== HISTORY_SCHEMA_VERSION) throw fail(`has schema version ${String(schema)}, this podipam reads version ${HISTORY_SCHEMA_VERSION}`);
}

function recordOfRow(r: RecordRow): HistoryRecord {
  if (r.k === 2) return { event: 'gap', from: r.from_at, until: r.until_at!, cause: r.why! };
  const { from: _from, until, ...info } = holdOfRow(r);
  if (r.k === 1)
    return r.from_earliest === null ? { event: 'assigned', at: r.from_at, ...info } : { event: 'assigned', at: r.from_at, earliest: r.from_earliest, ...info };
  const u = until!;
  const evidence = u.evidence ? { evidence: u.evidence } : {};
  return u.earliest === undefined
    ? { event: 'released', at: u.at, why: u.why, ...evidence, ...info }
    : { event: 'released', at: u.at, earliest: u.earliest, why: u.why, ...evidence, ...info };
}

function prepare(db: Database, hasEvidence: boolean) {
  const p = (sql: string): Statement => db.prepare(sql);
  const HOLD_COLUMNS = holdColumns(hasEvidence);
  // Writes name `evidence`; only a read-only open of an older file lacks it, and never writes.
  const w = (sql: string): Statement => (hasEvidence ? p(sql) : p('SELECT NULL WHERE 0'));
  const nulls = Array.from({ length: 11 }, () => 'NULL').join(', ');
  return {
    meta: p('SELECT name, value FROM meta'),
    getMeta: p('SELECT value FROM meta WHERE name = ?'),
    putMeta: p('INSERT OR REPLACE INTO meta (name, value) VALUES (?, ?)'),
    end: w('UPDATE holds SET until_at = ?, until_earliest = ?, why = ?, evidence = ? WHERE address = ? AND handle = ? AND until_at IS NULL'),
    closedAt: p('SELECT 1 FROM holds WHERE address = ? AND handle = ? AND until_at = ?'),
    oldestGap: p('SELECT min(from_at) AS t FROM gaps'),
    // A start for an (address, handle) already open meets holds_open and is ignored.
    putHold: w(`INSERT OR IGNORE INTO holds (address, handle, pod_ns, pod_name, pod_uid, container_id, ifname, network, node, pool, block,
      lo, from_at, from_earliest, until_at, until_earliest, why, evidence) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
    putGap: p('INSERT INTO gaps (from_at, until_at, cause) VALUES (?, ?, ?)'),
    open: p(`SELECT ${HOLD_COLUMNS} FROM holds WHERE until_at IS NULL ORDER BY address, from_at`),
    // Overlapping [since, until]: began (at the earliest) at or before `until`, not ended by `since`.
    ofAddress: p(`SELECT ${HOLD_COLUMNS} FROM holds WHERE address = ? AND lo <= ? AND (until_at IS NULL OR until_at > ?) ORDER BY from_at, id`),
    // Every hold that may cover the instant: began (at the earliest) before it, not ended by it.
    mayCover: p(`SELECT ${HOLD_COLUMNS} FROM holds WHERE address = ? AND lo <= ? AND (until_at IS NULL OR until_at > ?)`),
    ofPod: p(`SELECT ${HOLD_COLUMNS} FROM holds WHERE pod_ns = ? AND pod_name = ? AND lo <= ? AND (until_at IS NULL OR until_at > ?) ORDER BY from_at, id`),
    gaps: p('SELECT from_at, until_at, cause FROM gaps WHERE from_at <= ? AND until_at >= ? ORDER BY from_at, id'),
    gapsAt: p('SELECT from_at, until_at, cause FROM gaps WHERE from_at < ? AND until_at > ?'),
    // The export: ends (k 0) before starts (k 1) before gaps (k 2) at one instant; keyset paging on (t, k, id).
    records: p(`
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
    openByPool: p('SELECT pool, count(*) AS n FROM holds INDEXED BY holds_open WHERE until_at IS NULL AND pool IS NOT NULL GROUP BY pool'),
    startsByStep: p(
      'SELECT pool, CAST((from_at - @since + @step - 1) / @step AS INTEGER) AS k, count(*) AS n FROM holds WHERE from_at > @since AND pool IS NOT NULL GROUP BY pool, k',
    ),
    endsByStep: p(
      'SELECT pool, CAST((until_at - @since + @step - 1) / @step AS INTEGER) AS k, count(*) AS n FROM holds WHERE until_at > @since AND pool IS NOT NULL GROUP BY pool, k',
    ),
    purgeHolds: p('DELETE FROM holds WHERE until_at < ?'),
    purgeGaps: p('DELETE FROM gaps WHERE until_at < ?'),
    counts: p(
      'SELECT (SELECT count(*) FROM holds) AS holds, (SELECT count(*) FROM holds INDEXED BY holds_open WHERE until_at IS NULL) AS open, (SELECT count(*) FROM gaps) AS gaps',
    ),
  };
}
