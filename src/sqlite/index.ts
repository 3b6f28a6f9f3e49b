/**
 * The one SQLite adapter: opening a file with podipam's modes, the pragmas, typed statements and
 * waiting out another process's lock. The datastore, the history file and the agent's resource DB
 * all open their files through it.
 */
export { checkpointWhenIdle, type IdleCheckpointer } from './checkpoint-when-idle.js';
export { applyPragmas, createSqliteFile, openSqlite, SQLITE_DIR_MODE, SQLITE_FILE_MODE, type OpenSqliteOptions, type SqlitePragmas } from './open-sqlite.js';
export { pragmaInteger, quickCheck, tableColumns } from './read-pragma.js';
export { BUSY_SLICE_MS, isBusy, retryWhileBusy } from './retry-while-busy.js';
export { oneRow, type RunResult, type SqliteDb, type Statement, type Transaction } from './sqlite-db.js';
