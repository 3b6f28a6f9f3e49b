/**
 * The slice of better-sqlite3 12.x that podipam uses (the package ships no types), with typed
 * statements: `db.prepare<Row>(sql)` gives a statement whose `get` returns `Row | undefined` and
 * whose `all` returns `Row[]`. The row type is the caller's promise about the columns its SQL
 * selects (SQLite does not check it); writing it once at the statement keeps every reader free
 * of casts and non-null assertions.
 */

/** What `run` reports: rows changed by the statement. */
export interface RunResult {
  readonly changes: number;
}

/** A prepared statement whose rows are `Row` (positional `?` or named `@name` parameters). */
export interface Statement<Row = unknown> {
  /** The SQL it was prepared from. */
  readonly source: string;
  run(...params: unknown[]): RunResult;
  /** The first row, or undefined when there is none. */
  get(...params: unknown[]): Row | undefined;
  all(...params: unknown[]): Row[];
}

/**
 * A function run in one SQLite transaction; called directly it begins DEFERRED (nested calls:
 * savepoints), `immediate` takes the write lock at BEGIN, `deferred` only when it first writes.
 */
export interface Transaction<A extends unknown[], R> {
  (...args: A): R;
  deferred(...args: A): R;
  immediate(...args: A): R;
}

/** One open connection (openSqlite). */
export interface SqliteDb {
  /** The file it opened. */
  readonly name: string;
  /** A transaction is open on it (SQLite may have rolled one back by itself after an error). */
  readonly inTransaction: boolean;
  prepare<Row = unknown>(sql: string): Statement<Row>;
  exec(sql: string): void;
  /** `PRAGMA source`: its rows, or with `simple` the first column of the first row. */
  pragma(source: string, options?: { simple?: boolean }): unknown;
  transaction<A extends unknown[], R>(fn: (...args: A) => R): Transaction<A, R>;
  /** SQLite's online backup API, into a new file at `destination`. */
  backup(destination: string): Promise<unknown>;
  close(): void;
}

/**
 * The first row of `statement`, for a query that always has one (an aggregate, a row the schema
 * inserts); none is an Error naming the SQL, never undefined read as a row.
 */
export function oneRow<Row>(statement: Statement<Row>, ...params: unknown[]): Row {
  const row = statement.get(...params);
  if (row === undefined) throw new Error(`SQLite returned no row for ${statement.source.trim()}`);
  return row;
}
