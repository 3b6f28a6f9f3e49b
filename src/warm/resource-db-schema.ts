/**
 * The resource DB's tables (resource-db.ts): created when missing, the columns added since the
 * first release added in place, and the statements every method of ResourceDb runs, prepared once.
 */
import type { SqliteDb } from '../sqlite/index.js';
import { tableColumns } from '../sqlite/index.js';
import type { DirectRow, HeldRow, PodRow } from './resource-db.js';

/**
 * `writes.seq` orders the queue: one more than the largest queued (those being written stay until
 * writesDone), so no AUTOINCREMENT — one page fewer per ADD and DEL; a file made before keeps it.
 */
const SCHEMA = `
  CREATE TABLE IF NOT EXISTS held (addr TEXT PRIMARY KEY NOT NULL, family INTEGER NOT NULL, handle TEXT NOT NULL,
    prefix_len INTEGER NOT NULL, gateway TEXT NOT NULL, free_at INTEGER NOT NULL);
  CREATE TABLE IF NOT EXISTS pods (key TEXT PRIMARY KEY NOT NULL, network TEXT NOT NULL, container_id TEXT NOT NULL,
    ifname TEXT NOT NULL, addrs TEXT NOT NULL, since INTEGER NOT NULL);
  CREATE TABLE IF NOT EXISTS writes (seq INTEGER PRIMARY KEY, key TEXT NOT NULL, value TEXT, at INTEGER NOT NULL, why TEXT, evidence TEXT);
  CREATE TABLE IF NOT EXISTS refills (handle TEXT PRIMARY KEY NOT NULL, at INTEGER NOT NULL);
  CREATE TABLE IF NOT EXISTS direct (key TEXT PRIMARY KEY NOT NULL, network TEXT NOT NULL, container_id TEXT NOT NULL,
    ifname TEXT NOT NULL, ips TEXT NOT NULL, since INTEGER NOT NULL);
  CREATE TABLE IF NOT EXISTS quarantine (addr TEXT PRIMARY KEY NOT NULL, family INTEGER NOT NULL, handle TEXT NOT NULL,
    prefix_len INTEGER NOT NULL, gateway TEXT NOT NULL, since INTEGER NOT NULL);
`;

/**
 * Columns added since the first release of the file, added in place to a DB that lacks them
 * (ALTER TABLE … ADD COLUMN: one statement each, atomic in SQLite; the rows queued before
 * get NULL there, which the code reads as "not recorded").
 */
const ADDED_COLUMNS: readonly { readonly table: string; readonly column: string; readonly type: string }[] = [
  // The reason of a queued pod record delete (DEL, CNI GC, warm GC, reconcile): the history stamp's.
  { table: 'writes', column: 'why', type: 'TEXT' },
  // A runtime-absent delete's evidence (model/history.ts's codec, JSON): the history stamp's.
  { table: 'writes', column: 'evidence', type: 'TEXT' },
  // When a pod of this node let the address go: its pool's reuseAfter counts from it (warm-pool.ts).
  { table: 'held', column: 'released_at', type: 'INTEGER' },
];

/** Creates what a file lacks of the schema (a new file all of it). */
export function createTables(db: SqliteDb): void {
  db.exec(SCHEMA);
  migrate(db);
}

function migrate(db: SqliteDb): void {
  for (const c of ADDED_COLUMNS) {
    if (!tableColumns(db, c.table).includes(c.column)) db.exec(`ALTER TABLE ${c.table} ADD COLUMN ${c.column} ${c.type}`);
  }
}

/** A pod row as stored: its addresses as JSON. */
type RawPod = Omit<PodRow, 'addrs'> & { addrs: string };
/** A direct attachment as stored: its addresses as JSON. */
type RawDirect = Omit<DirectRow, 'ips'> & { ips: string };
/** A queued write as stored. */
interface RawWrite {
  seq: number;
  key: string;
  value: string | null;
  at: number;
  why: string | null;
  evidence: string | null;
}

/** The statements of ResourceDb, prepared on `db`. */
export function prepareStatements(db: SqliteDb) {
  return {
    putHeld: db.prepare('INSERT OR REPLACE INTO held (addr, family, handle, prefix_len, gateway, free_at) VALUES (?, ?, ?, ?, ?, ?)'),
    delHeld: db.prepare('DELETE FROM held WHERE addr = ?'),
    freeAt: db.prepare('UPDATE held SET free_at = ?, released_at = ? WHERE addr = ?'),
    putPod: db.prepare('INSERT OR REPLACE INTO pods (key, network, container_id, ifname, addrs, since) VALUES (?, ?, ?, ?, ?, ?)'),
    delPod: db.prepare('DELETE FROM pods WHERE key = ?'),
    queue: db.prepare('INSERT INTO writes (key, value, at, why, evidence) VALUES (?, ?, ?, ?, ?)'),
    unqueue: db.prepare('DELETE FROM writes WHERE seq <= ?'),
    podKeys: db.prepare<{ key: string }>('SELECT key FROM pods'),
    allHeld: db.prepare<HeldRow>(
      'SELECT addr, family, handle, prefix_len AS prefixLen, gateway, free_at AS freeAt, released_at AS releasedAt FROM held ORDER BY addr',
    ),
    allPods: db.prepare<RawPod>('SELECT key, network, container_id AS containerId, ifname, addrs, since FROM pods ORDER BY key'),
    pending: db.prepare<RawWrite>('SELECT seq, key, value, at, why, evidence FROM writes ORDER BY seq LIMIT ?'),
    depth: db.prepare<{ n: number; oldest: number | null }>('SELECT COUNT(*) AS n, MIN(at) AS oldest FROM writes'),
    allWrites: db.prepare<{ key: string; value: string | null }>('SELECT key, value FROM writes ORDER BY seq'),
    putRefill: db.prepare('INSERT OR REPLACE INTO refills (handle, at) VALUES (?, ?)'),
    delRefill: db.prepare('DELETE FROM refills WHERE handle = ?'),
    allRefills: db.prepare<{ handle: string }>('SELECT handle FROM refills'),
    clearRefills: db.prepare('DELETE FROM refills'),
    putQuarantine: db.prepare('INSERT OR REPLACE INTO quarantine (addr, family, handle, prefix_len, gateway, since) VALUES (?, ?, ?, ?, ?, ?)'),
    delQuarantine: db.prepare('DELETE FROM quarantine WHERE addr = ?'),
    putDirect: db.prepare('INSERT OR REPLACE INTO direct (key, network, container_id, ifname, ips, since) VALUES (?, ?, ?, ?, ?, ?)'),
    getDirect: db.prepare<RawDirect>('SELECT key, network, container_id AS containerId, ifname, ips, since FROM direct WHERE key = ?'),
    delDirect: db.prepare('DELETE FROM direct WHERE key = ?'),
    allDirect: db.prepare<RawDirect>('SELECT key, network, container_id AS containerId, ifname, ips, since FROM direct ORDER BY key'),
    allQuarantine: db.prepare<HeldRow>('SELECT addr, family, handle, prefix_len AS prefixLen, gateway, since AS freeAt FROM quarantine ORDER BY addr'),
  };
}
