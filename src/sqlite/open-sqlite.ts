/**
 * Opening a podipam SQLite file (the datastore, the history file, the agent's resource DB).
 *
 * - New files are created by podipam, not by SQLite: the file with mode SQLITE_FILE_MODE (0600,
 *   owner only: they hold pod names and addresses; SQLite gives its -wal and -shm files the
 *   same mode), a missing directory (and its missing parents) with mode SQLITE_DIR_MODE (0700).
 *   Both before the process umask. An existing file or directory keeps its mode.
 * - The connection then opens a file that must exist (one removed meanwhile is an error, never a
 *   new empty database), with SQLite's busy timeout `busyTimeoutMs`.
 * - applyPragmas sets what each database needs: WAL, the synchronous level (a durability
 *   choice, so there is no default and no `off`), the page cache.
 *
 * better-sqlite3 (a native addon) is loaded by the first open, not by importing this module.
 */
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import type { SqliteDb } from './sqlite-db.js';

/** The mode of every SQLite file podipam creates. */
export const SQLITE_FILE_MODE = 0o600;
/** The mode of every directory podipam creates for a SQLite file. */
export const SQLITE_DIR_MODE = 0o700;

export interface OpenSqliteOptions {
  /** How long one statement waits inside SQLite for another connection's lock (its busy timeout), in ms. */
  readonly busyTimeoutMs: number;
  /** Create the file (and its directory) when missing; otherwise a missing file is an error. Default false. */
  readonly create?: boolean;
  /** Open read-only: nothing is written, not even the journal mode. Default false. */
  readonly readonly?: boolean;
}

export interface SqlitePragmas {
  readonly journal: 'wal';
  /** NORMAL: a commit survives the process's crash; FULL (and EXTRA): also a power loss; OFF: neither (a database thrown away after use). */
  readonly synchronous: 'off' | 'normal' | 'full' | 'extra';
  /** The page cache of this connection, in KiB (SQLite's default otherwise). */
  readonly cacheSizeKiB?: number;
  /**
   * Page size in bytes (a power of two, 512 to 65536) of a database still without pages; one
   * that has pages keeps its own (SQLite ignores the pragma; WAL mode cannot change it later).
   * A commit writes each page it changed whole into the WAL: small pages, fewer bytes per
   * small transaction.
   */
  readonly pageSizeBytes?: number;
}

type DatabaseConstructor = new (path: string, options: { timeout: number; fileMustExist: boolean; readonly: boolean }) => SqliteDb;
let loaded: DatabaseConstructor | undefined;

/**
 * Creates the empty file `file` (SQLITE_FILE_MODE) and its missing directories (SQLITE_DIR_MODE)
 * unless the file exists; true when this call created it. File system errors are thrown as they
 * are (they name the path).
 */
export function createSqliteFile(file: string): boolean {
  mkdirSync(dirname(file), { recursive: true, mode: SQLITE_DIR_MODE });
  try {
    closeSync(openSync(file, 'wx', SQLITE_FILE_MODE));
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw e;
  }
}

/** Opens a connection to `file` (created first when `options.create`); SQLite's and the file system's errors are thrown as they are. */
export function openSqlite(file: string, options: OpenSqliteOptions): SqliteDb {
  if (options.create === true) createSqliteFile(file);
  loaded ??= createRequire(import.meta.url)('better-sqlite3') as DatabaseConstructor;
  return new loaded(file, { timeout: options.busyTimeoutMs, fileMustExist: true, readonly: options.readonly ?? false });
}

/** Sets `pragmas` on `db`, in this order: page size (before the WAL: see SqlitePragmas), journal mode, synchronous, cache size. */
export function applyPragmas(db: SqliteDb, pragmas: SqlitePragmas): void {
  if (pragmas.pageSizeBytes !== undefined) db.pragma(`page_size = ${Math.trunc(pragmas.pageSizeBytes)}`);
  db.pragma(`journal_mode = ${pragmas.journal.toUpperCase()}`);
  db.pragma(`synchronous = ${pragmas.synchronous.toUpperCase()}`);
  if (pragmas.cacheSizeKiB !== undefined) db.pragma(`cache_size = -${Math.trunc(pragmas.cacheSizeKiB)}`);
}
