/**
 * Where a datastore's history file lives when no --history-db names one. A history file follows
 * one datastore, so each datastore gets its own: the default datastore's (sqlite:DATA_DIR/podipam.db)
 * is DATA_DIR/history.db; any other's is DATA_DIR/history/NAME.db, NAME a readable slug of its URL
 * (password hidden, a SQLite path made absolute) and 12 hex digits of the URL's SHA-256. Trying
 * another datastore once therefore never leaves a file behind that the default's serve refuses.
 *
 * A DATA_DIR/history.db that follows another datastore (written before each datastore had its
 * own file) is moved to that datastore's own file, when that file does not exist yet
 * (moveForeignDefaultHistory).
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, renameSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseStoreUrl, redactStoreUrl } from '../store/index.js';
import { sqliteUrlFor } from './datastore-url.js';

/** The name a datastore's history is kept under: `sqlite:/ABS/PATH`, else the URL with its password hidden. */
function historyKey(datastoreUrl: string): string {
  const target = parseStoreUrl(datastoreUrl);
  return target.kind === 'sqlite' ? `sqlite:${resolve(target.path)}` : redactStoreUrl(datastoreUrl);
}

/** The default history file of `datastoreUrl` (see the header). Throws StoreUrlError for a URL parseStoreUrl refuses. */
export function defaultHistoryPath(dataDir: string, datastoreUrl: string): string {
  const kind = parseStoreUrl(datastoreUrl).kind;
  const key = historyKey(datastoreUrl);
  if (key === historyKey(sqliteUrlFor(dataDir))) return join(dataDir, 'history.db');
  const slug = key
    .replace(/^[a-z]+:\/*/i, '')
    .replace(/[^A-Za-z0-9.]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(-48);
  const hash = createHash('sha256').update(key).digest('hex').slice(0, 12);
  return join(dataDir, 'history', `${kind}-${slug}-${hash}.db`);
}

/**
 * When DATA_DIR/history.db follows `recorded`, not the datastore at hand: moves it (with its WAL
 * files) to `recorded`'s own default file and returns that path; undefined when that file exists
 * already (the caller then refuses, naming both) or `recorded` is not a URL this podipam reads.
 */
export function moveForeignDefaultHistory(dataDir: string, recorded: string): string | undefined {
  let to: string;
  try {
    to = defaultHistoryPath(dataDir, recorded);
  } catch {
    return undefined;
  }
  const from = join(dataDir, 'history.db');
  if (to === from || existsSync(to)) return undefined;
  mkdirSync(join(dataDir, 'history'), { recursive: true, mode: 0o700 });
  for (const suffix of ['-wal', '-shm']) if (existsSync(from + suffix)) renameSync(from + suffix, to + suffix);
  renameSync(from, to);
  return to;
}
