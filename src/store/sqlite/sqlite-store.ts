import { randomInt } from 'node:crypto';
import { accessSync, constants, existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { checkKey, checkKeys, checkListOptions, checkPrefix, checkTxn, checkWatch } from '../check-input.js';
import { StoreCompactedError, StoreError, StoreMissingError, StoreUnavailableError } from '../errors.js';
import { compareKeys, prefixEnd } from '../key-order.js';
import type { Compare, Entry, ListOptions, Op, Store, TxnResult, WatchEvent, WatchOptions } from '../store.js';
import { resolveTimeoutMs, type StoreOptions } from '../store-options.js';
import { WatchFeed } from '../watch-feed.js';
import {
  applyPragmas,
  BUSY_SLICE_MS,
  createSqliteFile,
  isBusy,
  openSqlite,
  pragmaInteger,
  retryWhileBusy,
  oneRow,
  type SqliteDb,
  type Statement,
} from '../../sqlite/index.js';

/**
 * Watches read a change log, not the data: every txn appends its changes to `changes`
 * (value NULL for a delete) in the same SQLite transaction, so a watch in any process gets
 * exactly the events of each revision, deletes included, in order, none lost — which polling
 * `PRAGMA data_version` alone cannot give (it says that something changed, not what, so a
 * watcher would have to diff whole prefixes and could never see a put followed by a delete
 * between two polls). data_version is what wakes the watchers: it is a read of the WAL index
 * in shared memory, no table access, so polling it often costs almost nothing; the log is read
 * only when it moved (or this connection wrote, which data_version does not count). The log
 * keeps the last SQLITE_LOG_REVISIONS revisions (trimmed in each txn); older starts are
 * StoreCompactedError, as with etcd's compaction.
 */
const SCHEMA_VERSION = 2;
const SCHEMA = `
  CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL, rev INTEGER NOT NULL);
  CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL);
  INSERT OR IGNORE INTO meta (name, value) VALUES ('rev', 0), ('schema', ${SCHEMA_VERSION});
`;
// Schema 1 had no change log: history before the upgrade is reported compacted.
const CHANGE_LOG = `
  CREATE TABLE IF NOT EXISTS changes (seq INTEGER PRIMARY KEY, rev INTEGER NOT NULL, key TEXT NOT NULL, value TEXT);
  CREATE INDEX IF NOT EXISTS changes_rev ON changes (rev);
  INSERT OR IGNORE INTO meta (name, value) SELECT 'compacted', value FROM meta WHERE name = 'rev';
  UPDATE meta SET value = ${SCHEMA_VERSION} WHERE name = 'schema';
`;

/** Revisions the change log keeps for watches that start in the past or fall behind. */
export const SQLITE_LOG_REVISIONS = 10_000;
/** How often a watching store polls `PRAGMA data_version`, in milliseconds. */
export const SQLITE_WATCH_POLL_MS = 20;
/** Change rows one poll reads for one watch at most (then whole revisions up to there). */
const WATCH_PAGE = 1000;

interface Watcher {
  readonly prefix: string;
  readonly to: string | undefined;
  /** The first revision not yet delivered. */
  next: number;
  readonly feed: WatchFeed;
}

/**
 * A store in one SQLite file, safe for many processes at once (the CNI plugin runs as one
 * process per pod, all on the same file): WAL mode, so readers never wait for the writer;
 * every txn runs under `BEGIN IMMEDIATE`, so compares and writes see one state (reads —
 * get, getMany, list, revision, watch polls — never take the write lock); table
 * `kv(key, value, rev)` and the store revision in `meta`. Durable at commit
 * (synchronous=FULL). better-sqlite3 is synchronous, so a lock held by another process is
 * never waited for on the event loop beyond a few milliseconds (BUSY_SLICE_MS): the call
 * retries on timers until `timeoutMs` have passed, meanwhile the process serves everything
 * else (the server's /healthz, other requests, its loops). Past `timeoutMs` the call throws
 * StoreUnavailableError (nothing was written). Calls of one store never interleave inside a
 * transaction: each attempt runs whole, synchronously. Other SQLite and file system failures
 * become StoreError.
 */
export class SqliteStore implements Store {
  readonly url: string;
  readonly #db: SqliteDb;
  readonly #timeoutMs: number;
  readonly #sql: ReturnType<typeof prepare>;
  readonly #txn: (compares: readonly Compare[], ops: readonly Op[]) => TxnResult;
  readonly #read: <T>(fn: () => T) => T;
  readonly #watchers = new Set<Watcher>();
  #poll: ReturnType<typeof setInterval> | undefined;
  #dataVersion = -1;
  #wroteSincePoll = false;
  #roundTrips = 0;
  #closed = false;

  private constructor(url: string, db: SqliteDb, timeoutMs: number) {
    this.url = url;
    this.#db = db;
    this.#timeoutMs = timeoutMs;
    this.#sql = prepare(db);
    const apply = db.transaction((compares: readonly Compare[], ops: readonly Op[]) => this.#apply(compares, ops));
    this.#txn = (compares, ops) => apply.immediate(compares, ops);
    // BEGIN DEFERRED with only SELECTs: a read transaction, one snapshot, no write lock.
    const read = db.transaction((fn: () => unknown) => fn());
    this.#read = <T>(fn: () => T) => read.deferred(fn) as T;
  }

  /**
   * Opens (creating it and its directory if missing, unless `options.create` is false: then
   * StoreMissingError) the database file at `path`, relative to the working directory. `url`
   * is kept for messages.
   */
  static async open(url: string, path: string, options?: StoreOptions): Promise<SqliteStore> {
    const timeoutMs = resolveTimeoutMs(options);
    let db: SqliteDb | undefined;
    const file = resolve(path);
    const create = options?.create ?? true;
    try {
      // A new file and its directory get the adapter's owner-only modes.
      if (create) createSqliteFile(file);
      else if (!existsSync(file)) throw new StoreMissingError(url, file);
      // The file must exist now: one removed since the check is an error, not a new empty store.
      db = openSqlite(file, { busyTimeoutMs: BUSY_SLICE_MS });
      const opened = db;
      await retryWhileBusy(() => initialise(opened, url, options?.durable ?? true), timeoutMs);
      return new SqliteStore(url, db, timeoutMs);
    } catch (e) {
      db?.close();
      throw translate(url, e, timeoutMs, file);
    }
  }

  get roundTrips(): number {
    return this.#roundTrips;
  }

  async get(key: string): Promise<Entry | undefined> {
    checkKey(key);
    return this.#call(() => this.#sql.get.get(key));
  }

  async getMany(keys: readonly string[]): Promise<(Entry | undefined)[]> {
    checkKeys(keys);
    const get = this.#sql.get;
    return this.#call(() => this.#read(() => keys.map((key) => get.get(key))));
  }

  async revision(): Promise<number> {
    return this.#call(() => oneRow(this.#sql.rev).value);
  }

  /**
   * `sqlite file ID`: a random id kept in the file's `meta` table, written (under the write lock,
   * once) the first time it is asked for. A copy of the file carries it; a new file has another.
   */
  async identity(): Promise<string> {
    const read = (): number | undefined => this.#sql.id.get()?.value;
    let id = await this.#call(read);
    if (id === undefined) {
      const fresh = randomInt(1, 2 ** 47);
      id = await this.#call(() => this.#db.transaction(() => (this.#sql.setId.run(fresh), read())).immediate());
    }
    return `sqlite file ${(id ?? 0).toString(16)}`;
  }

  watch(prefix: string, fromRevision: number, options?: WatchOptions): AsyncIterable<WatchEvent[]> {
    checkWatch(prefix, fromRevision);
    this.#checkOpen();
    const watcher: Watcher = {
      prefix,
      to: prefixEnd(prefix),
      next: fromRevision,
      feed: new WatchFeed(() => {
        this.#watchers.delete(watcher);
        if (this.#watchers.size === 0 && this.#poll !== undefined) {
          clearInterval(this.#poll);
          this.#poll = undefined;
        }
      }, options?.signal),
    };
    if (watcher.feed.done) return watcher.feed;
    this.#watchers.add(watcher);
    this.#poll ??= setInterval(() => this.#pollWatchers(false), SQLITE_WATCH_POLL_MS);
    setImmediate(() => this.#pollOne(watcher));
    return watcher.feed;
  }

  async list(prefix: string, options?: ListOptions): Promise<Entry[]> {
    checkPrefix(prefix);
    checkListOptions(options);
    const after = options?.after;
    const strict = after !== undefined && compareKeys(after, prefix) >= 0;
    const from = strict ? after : prefix;
    const to = prefixEnd(prefix);
    const limit = options?.limit ?? -1; // SQLite: a negative LIMIT is no limit
    const sql = this.#sql.list[`${strict ? 'gt' : 'ge'}${to === undefined ? '' : 'Lt'}` as const];
    return this.#call(() => (to === undefined ? sql.all(from, limit) : sql.all(from, to, limit)));
  }

  async snapshot(prefix: string): Promise<{ rev: number; entries: Entry[] }> {
    checkPrefix(prefix);
    const to = prefixEnd(prefix);
    const sql = this.#sql;
    return this.#call(() =>
      this.#read(() => ({
        rev: oneRow(sql.rev).value,
        entries: to === undefined ? sql.list.ge.all(prefix, -1) : sql.list.geLt.all(prefix, to, -1),
      })),
    );
  }

  /**
   * SQLite's online backup of the whole database file to `file` (better-sqlite3's
   * db.backup): a consistent copy while other processes keep writing, restorable by copying
   * it in place of the datastore file while nothing has it open.
   */
  async backupTo(file: string): Promise<void> {
    this.#checkOpen();
    try {
      await this.#db.backup(file);
    } catch (e) {
      const t = translate(this.url, e, this.#timeoutMs, file);
      throw t instanceof StoreError ? t : new StoreError(this.url, `cannot back up to ${file}: ${(e as Error).message}`);
    }
  }

  async txn(compares: readonly Compare[], ops: readonly Op[]): Promise<TxnResult> {
    checkTxn(compares, ops);
    const r = await this.#call(() => this.#txn(compares, ops));
    if (this.#watchers.size > 0 && r.succeeded && ops.length > 0) {
      // data_version does not move for this connection's own commits.
      this.#wroteSincePoll = true;
      setImmediate(() => this.#pollWatchers(true));
    }
    return r;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const w of [...this.#watchers]) w.feed.end();
    this.#db.close();
  }

  /** On each tick: when another connection committed (or this one wrote), every watch reads on. */
  #pollWatchers(wrote: boolean): void {
    if (this.#closed || this.#watchers.size === 0) return;
    let version: number;
    try {
      version = pragmaInteger(this.#db, 'data_version');
    } catch (e) {
      if (isBusy(e)) return; // the next tick tries again
      return this.#failWatchers(e);
    }
    if (version === this.#dataVersion && !this.#wroteSincePoll && !wrote) return;
    this.#dataVersion = version;
    this.#wroteSincePoll = false;
    for (const w of [...this.#watchers]) this.#pollOne(w);
  }

  /**
   * Delivers `w`'s next changes: up to about WATCH_PAGE rows, whole revisions, read in one
   * read transaction with the trim point, so a trim can never hide a gap.
   */
  #pollOne(w: Watcher): void {
    if (this.#closed || w.feed.done) return;
    const sql = this.#sql;
    type Row = { rev: number; key: string; value: string | null };
    let read: { rows: Row[]; edge: number; rev: number };
    try {
      read = this.#read(() => {
        const rev = oneRow(sql.rev).value;
        if (w.next > rev) return { rows: [], edge: rev, rev };
        const oldest = Math.max(sql.compacted.get()?.value ?? 0, rev - SQLITE_LOG_REVISIONS) + 1;
        if (w.next < oldest) throw new StoreCompactedError(this.url, w.next, oldest);
        // The revision of the WATCH_PAGE-th change from here: read whole revisions up to it.
        const edge = sql.changeEdge.get(w.next, WATCH_PAGE - 1)?.rev ?? rev;
        const rows = w.to === undefined ? sql.changesFrom.all(w.next, edge, w.prefix) : sql.changesIn.all(w.next, edge, w.prefix, w.to);
        return { rows, edge, rev };
      });
    } catch (e) {
      if (isBusy(e)) return;
      return w.feed.fail(e instanceof StoreCompactedError ? e : translate(this.url, e, this.#timeoutMs));
    }
    let batch: WatchEvent[] = [];
    for (const row of read.rows) {
      if (batch.length > 0 && (batch[0] as WatchEvent).modRevision !== row.rev) {
        w.feed.push(batch);
        batch = [];
      }
      batch.push(
        row.value === null
          ? { type: 'delete', key: row.key, value: '', modRevision: row.rev }
          : { type: 'put', key: row.key, value: row.value, modRevision: row.rev },
      );
    }
    w.feed.push(batch);
    w.next = Math.max(w.next, read.edge + 1);
    // Stopped at a page's edge: read on at once, without waiting for the next tick.
    if (read.edge < read.rev) setImmediate(() => this.#pollOne(w));
  }

  #failWatchers(e: unknown): void {
    const error = translate(this.url, e, this.#timeoutMs);
    for (const w of [...this.#watchers]) w.feed.fail(error);
  }

  async #call<T>(fn: () => T): Promise<T> {
    this.#checkOpen();
    this.#roundTrips++;
    try {
      return await retryWhileBusy(fn, this.#timeoutMs, () => this.#checkOpen());
    } catch (e) {
      throw translate(this.url, e, this.#timeoutMs, this.#db.name);
    }
  }

  #checkOpen(): void {
    if (this.#closed) throw new StoreError(this.url, 'the store is closed');
  }

  // Runs inside BEGIN IMMEDIATE: this process holds the file's write lock throughout.
  #apply(compares: readonly Compare[], ops: readonly Op[]): TxnResult {
    const sql = this.#sql;
    const rev = oneRow(sql.rev).value;
    const holds = compares.every((c) => (sql.revOf.get(c.key)?.rev ?? 0) === c.rev);
    if (!holds) {
      return { succeeded: false, rev, current: compares.map((c) => sql.get.get(c.key)) };
    }
    const next = rev + 1;
    let changed = false;
    for (const op of ops) {
      if (op.type === 'put') {
        sql.put.run(op.key, op.value, next);
        sql.logChange.run(next, op.key, op.value);
        changed = true;
      } else if (sql.delete.run(op.key).changes > 0) {
        sql.logChange.run(next, op.key, null);
        changed = true;
      }
    }
    // As in etcd, a txn that changes nothing keeps the store revision.
    if (!changed) return { succeeded: true, rev };
    sql.setRev.run(next);
    sql.trimChanges.run(next - SQLITE_LOG_REVISIONS);
    return { succeeded: true, rev: next };
  }
}

function initialise(db: SqliteDb, url: string, durable: boolean): void {
  applyPragmas(db, { journal: 'wal', synchronous: durable ? 'full' : 'off' });
  const tables = oneRow(db.prepare<{ n: number }>(`SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name IN ('kv', 'meta')`));
  // Only a new file needs the write lock; opening an existing one stays read-only.
  if (tables.n < 2) db.transaction(() => db.exec(SCHEMA + CHANGE_LOG)).immediate();
  const version = () => db.prepare<{ value: number }>(`SELECT value FROM meta WHERE name = 'schema'`).get()?.value;
  // Upgrade from schema 1 (read again under the write lock: another process may have done it).
  if (version() === 1) db.transaction(() => version() === 1 && db.exec(CHANGE_LOG)).immediate();
  const schema = db.prepare<{ value: number }>(`SELECT value FROM meta WHERE name = 'schema'`).get();
  if (schema?.value !== SCHEMA_VERSION) {
    throw new StoreError(url, `the database has schema version ${String(schema?.value)}, this podipam reads version ${SCHEMA_VERSION}`);
  }
}

function prepare(db: SqliteDb) {
  const select = 'SELECT key, value, rev FROM kv WHERE';
  type Change = { rev: number; key: string; value: string | null };
  return {
    get: db.prepare<Entry>(`${select} key = ?`),
    revOf: db.prepare<{ rev: number }>('SELECT rev FROM kv WHERE key = ?'),
    rev: db.prepare<{ value: number }>(`SELECT value FROM meta WHERE name = 'rev'`),
    setRev: db.prepare(`UPDATE meta SET value = ? WHERE name = 'rev'`),
    id: db.prepare<{ value: number }>(`SELECT value FROM meta WHERE name = 'id'`),
    setId: db.prepare(`INSERT OR IGNORE INTO meta (name, value) VALUES ('id', ?)`),
    put: db.prepare('INSERT INTO kv (key, value, rev) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value, rev = excluded.rev'),
    delete: db.prepare('DELETE FROM kv WHERE key = ?'),
    logChange: db.prepare('INSERT INTO changes (rev, key, value) VALUES (?, ?, ?)'),
    trimChanges: db.prepare('DELETE FROM changes WHERE rev <= ?'),
    compacted: db.prepare<{ value: number }>(`SELECT value FROM meta WHERE name = 'compacted'`),
    changeEdge: db.prepare<{ rev: number }>('SELECT rev FROM changes WHERE rev >= ? ORDER BY rev, seq LIMIT 1 OFFSET ?'),
    changesFrom: db.prepare<Change>('SELECT rev, key, value FROM changes WHERE rev >= ? AND rev <= ? AND key >= ? ORDER BY rev, seq'),
    changesIn: db.prepare<Change>('SELECT rev, key, value FROM changes WHERE rev >= ? AND rev <= ? AND key >= ? AND key < ? ORDER BY rev, seq'),
    list: {
      ge: db.prepare<Entry>(`${select} key >= ? ORDER BY key LIMIT ?`),
      gt: db.prepare<Entry>(`${select} key > ? ORDER BY key LIMIT ?`),
      geLt: db.prepare<Entry>(`${select} key >= ? AND key < ? ORDER BY key LIMIT ?`),
      gtLt: db.prepare<Entry>(`${select} key > ? AND key < ? ORDER BY key LIMIT ?`),
    } satisfies Record<'ge' | 'gt' | 'geLt' | 'gtLt', Statement<Entry>>,
  };
}

/** SQLite's and the file system's errors, in the store's terms; anything else unchanged. */
function translate(url: string, e: unknown, timeoutMs: number, file?: string): unknown {
  if (e instanceof StoreError || e instanceof StoreUnavailableError) return e;
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return e;
  const message = (e as Error).message;
  if (isBusy(e)) {
    return new StoreUnavailableError(url, `the database stayed locked by another connection for over ${timeoutMs} ms (${code}: ${message})`);
  }
  return new StoreError(url, `${code}: ${message}${whyNotWritable(code, file)}`);
}

/**
 * For "cannot open" and "read-only" engine errors, what the file system says (SQLite's own
 * message does not): a read-only file system, or a file or directory we may not write.
 */
function whyNotWritable(code: string, file: string | undefined): string {
  if (file === undefined || !/^SQLITE_(CANTOPEN|READONLY|IOERR)/.test(code)) return '';
  for (const p of [file, dirname(file)]) {
    try {
      accessSync(p, constants.W_OK);
    } catch (e) {
      const c = (e as NodeJS.ErrnoException).code;
      if (c === 'EROFS') return ` (${p} is on a read-only file system)`;
      if (c === 'EACCES' || c === 'EPERM') return ` (${p} is not writable by this process)`;
    }
  }
  return '';
}
