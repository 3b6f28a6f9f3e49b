/**
 * Pragmas read as typed values. The driver types a pragma's answer as nothing in particular (rows,
 * or with `simple` the first column of the first row); these check its shape and return it typed,
 * or throw an Error naming the pragma, the file and what came back — never a wrong value read as a
 * right one. SQLite's own errors are thrown as they are.
 */
import type { SqliteDb } from './sqlite-db.js';

/** `PRAGMA name` as a safe integer: page_count, page_size, data_version, user_version, … */
export function pragmaInteger(db: SqliteDb, name: string): number {
  const value = db.pragma(name, { simple: true });
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) throw shapeError(db, name, value, 'an integer');
  return value;
}

/** The names of `table`'s columns, in order (PRAGMA table_info); none when there is no such table. */
export function tableColumns(db: SqliteDb, table: string): string[] {
  return textColumn(db, `table_info(${table})`, 'name');
}

/** PRAGMA quick_check's messages: `['ok']` for a file that passes, else up to 100 problems. */
export function quickCheck(db: SqliteDb): string[] {
  return textColumn(db, 'quick_check', 'quick_check');
}

function textColumn(db: SqliteDb, source: string, column: string): string[] {
  const rows = db.pragma(source);
  if (!Array.isArray(rows)) throw shapeError(db, source, rows, 'rows');
  return rows.map((row: unknown) => {
    const value: unknown = typeof row === 'object' && row !== null ? Reflect.get(row, column) : undefined;
    if (typeof value !== 'string') throw shapeError(db, source, row, `rows with a text column "${column}"`);
    return value;
  });
}

function shapeError(db: SqliteDb, source: string, value: unknown, wanted: string): Error {
  const shown = typeof value === 'bigint' ? `${value}n` : (JSON.stringify(value) ?? String(value));
  return new Error(`PRAGMA ${source} on ${db.name} returned ${shown}, not ${wanted}`);
}
