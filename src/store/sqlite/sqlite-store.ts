import { accessSync, constants, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import { checkKey, checkListOptions, checkPrefix, checkTxn } from '../check-input.js';
import { StoreError, StoreUnavailableError } from '../errors.js';
import { compareKeys, prefixEnd } from '../key-order.js';
import type { Compare, Entry, ListOptions, Op, Store, TxnResult } from '../store.js';
import { resolveTimeoutMs, type StoreOptions } from '../store-options.js';
import { BUSY_SLICE_MS, isBusy, retryWhileBusy } from './retry-while-busy.js';

// The slice of better-sqlite3 12.x this file uses (the package ships no types). Loaded when
// this module is, which openStore does only for sqlite: URLs.
interface Statement {
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  run(...params: unknown[]): { changes: number };
}
interface Database {
  pragma(source: string, options?: { simple?: boolean }): unknown;
  prepare(sql: string): Statement;
  exec(sql: string): void;
  transaction<A extends unknown[], R>(fn: (...args: A) => R): { immediate(...args: A): R };
  close(): void;
  /** The file it opened. */
  readonly name: string;
}
type DatabaseConstructor = new (path: string, options?: { timeout?: number }) => Database;
const Database = createRequire(import.meta.url)('better-sqlite3') as DatabaseConstructor;

const SCHEMA_VERSION = 1;
const SCHEMA = `
  CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL, rev INTEGER NOT NULL);
  CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL);
  INSERT OR IGNORE INTO meta (name, value) VALUES ('rev', 0), ('schema', ${SCHEMA_VERSION});
`;

/**
 * A store in one SQLite file, safe for many processes at once (the CNI plugin runs as one
 * process per pod, all on the same file): WAL mode, so readers never wait for the writer;
 * every txn runs under `BEGIN IMMEDIATE`, so compares and writes see one state; table
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
  readonly #db: Database;
  readonly #timeoutMs: number;
  readonly #sql: ReturnType<typeof prepare>;
  readonly #txn: (compares: readonly Compare[], ops: readonly Op[]) => TxnResult;
  #roundTrips = 0;
  #closed = false;

  private constructor(url: string, db: Database, timeoutMs: number) {
    this.url = url;
    this.#db = db;
    this.#timeoutMs = timeoutMs;
    this.#sql = prepare(db);
    const apply = db.transaction((compares: readonly Compare[], ops: readonly Op[]) => this.#apply(compares, ops));
    this.#txn = (compares, ops) => apply.immediate(compares, ops);
  }

  /**
   * Opens (creating it and its directory if missing) the database file at `path`, relative
   * to the working directory. `url` is kept for messages.
   */
  static async open(url: string, path: string, options?: StoreOptions): Promise<SqliteStore> {
    const timeoutMs = resolveTimeoutMs(options);
    let db: Database | undefined;
    const file = resolve(path);
    try {
      mkdirSync(dirname(file), { recursive: true });
      db = new Database(file, { timeout: BUSY_SLICE_MS });
      const opened = db;
      await retryWhileBusy(() => initialise(opened, url), timeoutMs);
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
    return this.#call(() => this.#sql.get.get(key) as Entry | undefined);
  }

  async list(prefix: string, options?: ListOptions): Promise<Entry[]> {
    checkPrefix(prefix);
    checkListOptions(options);
    const after = options?.after;
    const strict = after !== undefined && compareKeys(after, prefix) >= 0;
    const from = strict ? after : prefix;
    const to = prefixEnd(prefix);
    const limit = options?.limit ?? -1; // SQLite: a negative LIMIT is no limit
    const sql = this.#sql.list[`${strict ? 'gt' : 'ge'}${to === undefined ? '' : 'Lt'}`];
    return this.#call(() => (to === undefined ? sql.all(from, limit) : sql.all(from, to, limit)) as Entry[]);
  }

  async txn(compares: readonly Compare[], ops: readonly Op[]): Promise<TxnResult> {
    checkTxn(compares, ops);
    return this.#call(() => this.#txn(compares, ops));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#db.close();
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
    const rev = (sql.rev.get() as { value: number }).value;
    const holds = compares.every((c) => ((sql.revOf.get(c.key) as { rev: number } | undefined)?.rev ?? 0) === c.rev);
    if (!holds) {
      return { succeeded: false, rev, current: compares.map((c) => sql.get.get(c.key) as Entry | undefined) };
    }
    const next = rev + 1;
    let changed = false;
    for (const op of ops) {
      if (op.type === 'put') {
        sql.put.run(op.key, op.value, next);
        changed = true;
      } else if (sql.delete.run(op.key).changes > 0) {
        changed = true;
      }
    }
    // As in etcd, a txn that changes nothing keeps the store revision.
    if (!changed) return { succeeded: true, rev };
    sql.setRev.run(next);
    return { succeeded: true, rev: next };
  }
}

function initialise(db: Database, url: string): void {
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  const tables = db.prepare(`SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name IN ('kv', 'meta')`).get() as { n: number };
  // Only a new file needs the write lock; opening an existing one stays read-only.
  if (tables.n < 2) db.transaction(() => db.exec(SCHEMA)).immediate();
  const schema = db.prepare(`SELECT value FROM meta WHERE name = 'schema'`).get() as { value: number } | undefined;
  if (schema?.value !== SCHEMA_VERSION) {
    throw new StoreError(url, `the database has schema version ${String(schema?.value)}, this podipam reads version ${SCHEMA_VERSION}`);
  }
}

function prepare(db: Database) {
  const select = 'SELECT key, value, rev FROM kv WHERE';
  return {
    get: db.prepare(`${select} key = ?`),
    revOf: db.prepare('SELECT rev FROM kv WHERE key = ?'),
    rev: db.prepare(`SELECT value FROM meta WHERE name = 'rev'`),
    setRev: db.prepare(`UPDATE meta SET value = ? WHERE name = 'rev'`),
    put: db.prepare('INSERT INTO kv (key, value, rev) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value, rev = excluded.rev'),
    delete: db.prepare('DELETE FROM kv WHERE key = ?'),
    list: {
      ge: db.prepare(`${select} key >= ? ORDER BY key LIMIT ?`),
      gt: db.prepare(`${select} key > ? ORDER BY key LIMIT ?`),
      geLt: db.prepare(`${select} key >= ? AND key < ? ORDER BY key LIMIT ?`),
      gtLt: db.prepare(`${select} key > ? AND key < ? ORDER BY key LIMIT ?`),
    } as Record<string, Statement>,
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
