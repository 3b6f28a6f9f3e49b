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
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { type HistoryGap, type Hold, type HolderAt, encodeReleaseEvidence } from '../model/history.js';
import { applyPragmas, createSqliteFile, oneRow, openSqlite, pragmaInteger, tableColumns, type SqliteDb, type Transaction } from '../sqlite/index.js';
import { canonicalAddress } from './canonical-address.js';
import { checkBatch } from './check-batch.js';
import type { FollowPosition, HistoryBatch, HistoryDb, HistoryRecord, HoldEnd, HoldStart, TimeRange } from './history-db.js';
import { HistoryDbError } from './history-db-error.js';
import { HISTORY_KIND, HISTORY_SCHEMA, HISTORY_SCHEMA_VERSION } from './history-schema.js';
import { holderAtOf } from './holder-at.js';
import { gapOfRow, holdOfRow } from './hold-of-row.js';
import { prepareHistoryStatements } from './prepare-history-statements.js';
import { recordOfRow } from './record-of-row.js';
import type { UsageCounts } from './usage-series.js';

export { canonicalAddress, HistoryDbError };

const BUSY_TIMEOUT_MS = 5000;
/** Rows per page of the export (records()). */
const RECORDS_PAGE = 2000;

export interface OpenHistoryDbOptions {
  /** Read-only (the CLI reading serve's live file): the file must exist and is never created or changed. */
  readonly readonly?: boolean;
}

/** Opens (creating it, unless read-only) the history file at `path`. */
export function openHistoryDb(path: string, options: OpenHistoryDbOptions = {}): HistoryDb {
  return SqliteHistoryDb.open(path, options.readonly ?? false);
}

/** Columns added to `holds` since schema version 1 was first written: added in place on a writable open (NULL in older rows). */
const ADDED_HOLD_COLUMNS = [{ column: 'evidence', type: 'TEXT' }] as const;

function hasColumn(db: SqliteDb, column: string): boolean {
  return tableColumns(db, 'holds').includes(column);
}

class SqliteHistoryDb implements HistoryDb {
  readonly path: string;
  readonly #db: SqliteDb;
  readonly #readonly: boolean;
  readonly #st: ReturnType<typeof prepareHistoryStatements>;
  readonly #apply: Transaction<[HistoryBatch], void>;
  /** Runs `fn` in one read transaction (BEGIN DEFERRED, only SELECTs): one snapshot of the file. */
  readonly #read: <T>(fn: () => T) => T;
  #closed = false;

  private constructor(path: string, db: SqliteDb, readonly: boolean) {
    this.path = path;
    this.#db = db;
    this.#readonly = readonly;
    this.#st = prepareHistoryStatements(db, hasColumn(db, 'evidence'));
    this.#apply = db.transaction((b: HistoryBatch) => this.#applyIn(b));
    const read = db.transaction((fn: () => unknown) => fn());
    this.#read = <T>(fn: () => T): T => read.deferred(fn) as T;
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
        // Pod names and addresses: the adapter's owner-only modes.
        createSqliteFile(file);
      } catch (e) {
        throw fail(`cannot be created: ${(e as Error).message}`);
      }
    }
    let db: SqliteDb | undefined;
    try {
      db = openSqlite(file, { busyTimeoutMs: BUSY_TIMEOUT_MS, readonly });
      if (!readonly) {
        applyPragmas(db, { journal: 'wal', synchronous: 'normal', cacheSizeKiB: 65536 });
        const count = db.prepare<{ n: number }>(`SELECT count(*) AS n FROM sqlite_master`);
        const tables = (): number => oneRow(count).n;
        const opened = db;
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
    return this.#read(() => this.#positionIn());
  }

  #positionIn(): FollowPosition | undefined {
    const rows = this.#st.meta.all();
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
    for (const e of b.ends) this.#end(e, () => (oldestGap === undefined ? (oldestGap = oneRow(st.oldestGap).t) : oldestGap));
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
    return this.#st.open.all().map(holdOfRow);
  }

  holdsOfAddress(address: string, range: TimeRange = {}): Hold[] {
    this.#checkOpen();
    const rows = this.#st.ofAddress.all(canonicalAddress(address), range.until ?? Number.MAX_VALUE, range.since ?? -Number.MAX_VALUE);
    return rows.map(holdOfRow);
  }

  holderAt(address: string, at: number): HolderAt {
    this.#checkOpen();
    if (!Number.isFinite(at)) throw new TypeError(`holderAt: the instant must be a finite number of ms, got ${String(at)}`);
    const addr = canonicalAddress(address);
    return this.#read(() => {
      const holds = this.#st.mayCover.all(addr, at, at).map(holdOfRow);
      const gaps = this.#st.gapsAt.all(at, at).map(gapOfRow);
      const horizon = this.#st.getMeta.get('horizon');
      return holderAtOf(holds, gaps, at, horizon?.value);
    });
  }

  holdsOfPod(namespace: string, name: string, range: TimeRange = {}): Hold[] {
    this.#checkOpen();
    const rows = this.#st.ofPod.all(namespace, name, range.until ?? Number.MAX_VALUE, range.since ?? -Number.MAX_VALUE);
    return rows.map(holdOfRow);
  }

  gaps(range: TimeRange = {}): HistoryGap[] {
    this.#checkOpen();
    return this.#st.gaps.all(range.until ?? Number.MAX_VALUE, range.since ?? -Number.MAX_VALUE).map(gapOfRow);
  }

  *records(since: number, limit = Infinity): Iterable<HistoryRecord> {
    this.#checkOpen();
    let left = limit;
    let after = { t: since, k: -1, id: -1 };
    while (left > 0) {
      const n = Math.min(RECORDS_PAGE, left);
      const rows = this.#st.records.all({ t: after.t, k: after.k, id: after.id, n });
      for (const r of rows) yield recordOfRow(r);
      left -= rows.length;
      const last = rows.at(-1);
      if (rows.length < n || last === undefined) return;
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
    return this.#read(() => {
      for (const r of this.#st.openByPool.all()) of(r.pool).open = r.n;
      for (const r of this.#st.startsByStep.all({ since, step })) of(r.pool).starts.set(r.k, r.n);
      for (const r of this.#st.endsByStep.all({ since, step })) of(r.pool).ends.set(r.k, r.n);
      return out;
    });
  }

  purge(before: number): number {
    this.#checkWritable();
    if (!Number.isFinite(before)) throw new TypeError(`purge: the instant must be a finite number of ms, got ${String(before)}`);
    return this.#db
      .transaction(() => {
        const dropped = this.#st.purgeHolds.run(before).changes;
        this.#st.purgeGaps.run(before);
        const h = this.#st.getMeta.get('horizon');
        if (h === undefined || h.value < before) this.#st.putMeta.run('horizon', before);
        return dropped;
      })
      .immediate();
  }

  stats(): { readonly holds: number; readonly openHolds: number; readonly gaps: number; readonly bytes: number } {
    this.#checkOpen();
    return this.#read(() => {
      const c = oneRow(this.#st.counts);
      const pages = pragmaInteger(this.#db, 'page_count');
      const pageSize = pragmaInteger(this.#db, 'page_size');
      return { holds: c.holds, openHolds: c.open, gaps: c.gaps, bytes: pages * pageSize };
    });
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

function checkKind(db: SqliteDb, fail: (why: string) => HistoryDbError): void {
  let kind: unknown;
  let schema: unknown;
  try {
    const get = db.prepare<{ value: unknown }>('SELECT value FROM meta WHERE name = ?');
    kind = get.get('kind')?.value;
    schema = get.get('schema')?.value;
  } catch (e) {
    throw fail(`not a podipam history file (${(e as Error).message})`);
  }
  if (kind !== HISTORY_KIND) throw fail('not a podipam history file (an SQLite database of something else)');
  if (schema !== HISTORY_SCHEMA_VERSION) throw fail(`has schema version ${String(schema)}, this podipam reads version ${HISTORY_SCHEMA_VERSION}`);
}
