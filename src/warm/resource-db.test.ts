/**
 * The resource DB's file on disk: owner-only modes, WAL, synchronous=NORMAL (a commit survives the
 * agent's crash); `hasPod` (answered from memory) as the committed pods table says, whatever rolls back.
 */
import assert from 'node:assert/strict';
import { mkdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { makeTempDir, type TempDir } from '../../test/helpers/tmp.js';
import { applyPragmas, openSqlite } from '../sqlite/index.js';
import { ResourceDb } from './resource-db.js';

describe('resource DB file', () => {
  let dir: TempDir;
  beforeEach(() => {
    dir = makeTempDir('resource-db');
  });
  afterEach(() => dir.remove());

  it('a new DB is 0600 (its -wal and -shm too) in a new 0700 directory, WAL, synchronous NORMAL, 1 KiB pages', () => {
    const data = join(dir.path, 'data');
    const db = new ResourceDb(data);
    try {
      assert.equal(db.fresh, true);
      db.refillIntent('h', 1);
      for (const p of [db.path, `${db.path}-wal`, `${db.path}-shm`]) assert.equal(statSync(p).mode & 0o777, 0o600, p);
      assert.equal(statSync(data).mode & 0o777, 0o700);
      assert.equal(db.database.pragma('journal_mode', { simple: true }), 'wal');
      assert.equal(db.database.pragma('synchronous', { simple: true }), 1);
      assert.equal(db.database.pragma('busy_timeout', { simple: true }), 5000);
      assert.equal(db.database.pragma('page_size', { simple: true }), 1024);
      assert.equal(db.database.pragma('wal_autocheckpoint', { simple: true }), 16384, '16 MiB of 1 KiB pages');
    } finally {
      db.close();
    }
    const again = new ResourceDb(data);
    try {
      assert.equal(again.fresh, false);
      assert.deepEqual([...again.refillIntents()], ['h']);
      assert.equal(again.database.pragma('page_size', { simple: true }), 1024);
    } finally {
      again.close();
    }
  });

  it('a DB made with 4 KiB pages (an older agent) keeps them, its rows and a 16 MiB checkpoint cap', () => {
    const data = join(dir.path, 'data');
    {
      const first = new ResourceDb(data);
      first.refillIntent('kept', 7);
      first.close();
    }
    // Made again as an older agent made it: 4 KiB pages, WAL, its rows still in the WAL (not closed).
    const file = join(data, 'resources.db');
    rmSync(file);
    for (const f of [`${file}-wal`, `${file}-shm`]) rmSync(f, { force: true });
    const old = openSqlite(file, { busyTimeoutMs: 100, create: true });
    applyPragmas(old, { journal: 'wal', synchronous: 'normal', pageSizeBytes: 4096 });
    old.exec('CREATE TABLE refills (handle TEXT PRIMARY KEY NOT NULL, at INTEGER NOT NULL)');
    old.prepare('INSERT INTO refills (handle, at) VALUES (?, ?)').run('older', 3);
    const db = new ResourceDb(data);
    try {
      assert.equal(db.fresh, false);
      assert.equal(db.database.pragma('page_size', { simple: true }), 4096);
      assert.equal(db.database.pragma('wal_autocheckpoint', { simple: true }), 4096, '16 MiB of 4 KiB pages');
      assert.deepEqual([...db.refillIntents()], ['older']);
    } finally {
      db.close();
      old.close();
    }
  });

  const pod = (key: string) => ({ key, network: 'n', containerId: key, ifname: 'eth0', addrs: ['10.0.0.1'], since: 1 });
  const record = (key: string) => ({ key: `agent-pods/x/${key}`, value: '{}' });
  /** The pods table's keys, read from the file by another connection. */
  const keysOnDisk = (db: ResourceDb): string[] => {
    const other = openSqlite(db.path, { busyTimeoutMs: 100, create: false });
    try {
      return other
        .prepare<{ key: string }>('SELECT key FROM pods ORDER BY key')
        .all()
        .map((r) => r.key);
    } finally {
      other.close();
    }
  };

  it('hasPod answers as the committed pods table does: alone, in a transaction, after a rollback, after a reopen', () => {
    const data = join(dir.path, 'data');
    const db = new ResourceDb(data);
    try {
      db.addPod(pod('a'), record('a'));
      db.transaction(() => {
        db.addPod(pod('b'), record('b'));
        assert.equal(db.hasPod('b'), false, 'not before the commit');
      });
      db.adoptPod(pod('c'));
      assert.deepEqual(
        ['a', 'b', 'c'].map((k) => db.hasPod(k)),
        [true, true, true],
      );
      assert.throws(() =>
        db.transaction(() => {
          db.removePod('a', [], 2, record('a').key, 2, 'del');
          db.addPod(pod('d'), record('d'));
          throw new Error('rolled back');
        }),
      );
      assert.deepEqual(
        ['a', 'd'].map((k) => db.hasPod(k)),
        [true, false],
        'a rolled-back transaction changes nothing',
      );
      // A savepoint rolled back (the inner call threw, the outer caught it): its keys only.
      db.transaction(() => {
        db.removePod('b', [], 2, record('b').key, 2, 'del');
        try {
          db.transaction(() => {
            db.addPod(pod('e'), record('e'));
            throw new Error('inner');
          });
        } catch {
          /* the outer goes on */
        }
      });
      assert.deepEqual(
        ['b', 'e'].map((k) => db.hasPod(k)),
        [false, false],
      );
      assert.deepEqual(keysOnDisk(db), ['a', 'c']);
    } finally {
      db.close();
    }
    const again = new ResourceDb(data);
    try {
      assert.deepEqual(
        ['a', 'b', 'c', 'e'].map((k) => again.hasPod(k)),
        [true, false, true, false],
      );
    } finally {
      again.close();
    }
  });

  it('a call that fails inside a transaction (no savepoint of its own) rolls the transaction back whole, even if caught', () => {
    const db = new ResourceDb(join(dir.path, 'data'));
    try {
      db.addPod(pod('a'), record('a'));
      assert.throws(
        () =>
          db.transaction(() => {
            db.removePod('a', [], 2, record('a').key, 2, 'del');
            try {
              // Its second statement fails (the queued write's key is NOT NULL): the first one ran.
              db.addPod(pod('f'), { key: null as unknown as string, value: '{}' });
              assert.fail('the insert of a null value must fail');
            } catch (e) {
              if (!/NOT NULL/.test((e as Error).message)) throw e;
            }
          }),
        /NOT NULL/,
      );
      assert.deepEqual(keysOnDisk(db), ['a'], 'neither the removal nor the half-done insert');
      assert.deepEqual(
        ['a', 'f'].map((k) => db.hasPod(k)),
        [true, false],
      );
      assert.equal(db.pendingWrites(10).length, 1, "only a's queued write");
      // The next transaction commits as usual.
      db.transaction(() => db.addPod(pod('g'), record('g')));
      assert.equal(db.hasPod('g'), true);
    } finally {
      db.close();
    }
  });

  it('the write queue keeps its order, emptied and refilled; a new file has no AUTOINCREMENT, an older one keeps it', () => {
    const data = join(dir.path, 'data');
    const db = new ResourceDb(data);
    const tableSql = (d: ResourceDb): string => d.database.prepare<{ sql: string }>("SELECT sql FROM sqlite_master WHERE name = 'writes'").all()[0]!.sql;
    try {
      assert.doesNotMatch(tableSql(db), /AUTOINCREMENT/);
      for (const k of ['a', 'b', 'c']) db.addPod(pod(k), record(k));
      const first = db.pendingWrites(2);
      assert.deepEqual(
        first.map((w) => w.key),
        [record('a').key, record('b').key],
      );
      // Queued while the first two are being written: after them.
      db.removePod('a', [], 5, record('a').key, 5, 'del');
      db.writesDone(first[1]!.seq);
      assert.deepEqual(
        db.pendingWrites(10).map((w) => [w.key, w.value === undefined]),
        [
          [record('c').key, false],
          [record('a').key, true],
        ],
      );
      db.writesDone(db.pendingWrites(10).at(-1)!.seq);
      assert.equal(db.writeDepth().depth, 0);
      db.addPod(pod('d'), record('d'));
      db.removePod('d', [], 6, record('d').key, 6, 'del');
      assert.deepEqual(
        db.pendingWrites(10).map((w) => [w.key, w.value === undefined]),
        [
          [record('d').key, false],
          [record('d').key, true],
        ],
        'put, then its delete',
      );
    } finally {
      db.close();
    }
    // A file whose queue was made with AUTOINCREMENT (an older agent) keeps it and works alike.
    const older = join(dir.path, 'older');
    mkdirSync(older, { mode: 0o700 });
    const raw = openSqlite(join(older, 'resources.db'), { busyTimeoutMs: 100, create: true });
    raw.exec('CREATE TABLE writes (seq INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL, value TEXT, at INTEGER NOT NULL)');
    raw.close();
    const old = new ResourceDb(older);
    try {
      assert.match(tableSql(old), /AUTOINCREMENT/);
      old.addPod(pod('x'), record('x'));
      assert.deepEqual(
        old.pendingWrites(10).map((w) => w.key),
        [record('x').key],
      );
    } finally {
      old.close();
    }
  });

  it('a failure inside a savepoint, caught by the outer transaction, spoils only the savepoint; async functions and writes after SQLite rolled back are refused', () => {
    const db = new ResourceDb(join(dir.path, 'data'));
    try {
      db.transaction(() => {
        db.addPod(pod('a'), record('a'));
        try {
          db.transaction(() => db.addPod(pod('b'), { key: null as unknown as string, value: '{}' }));
        } catch {
          /* the outer goes on: the savepoint took back b's half-done insert */
        }
      });
      assert.deepEqual(keysOnDisk(db), ['a']);
      assert.deepEqual(
        ['a', 'b'].map((k) => db.hasPod(k)),
        [true, false],
      );
      // A function that returns a promise would write after the commit: refused, as better-sqlite3 refuses it.
      assert.throws(() => db.transaction(async () => {}), /cannot return a promise/);
      // SQLite rolled the transaction back by itself (emulated) and the caller caught the error: the
      // writes after it are refused, not committed one by one, and hasPod follows the table.
      assert.throws(() =>
        db.transaction(() => {
          db.addPod(pod('c'), record('c'));
          db.database.exec('ROLLBACK');
          try {
            db.addPod(pod('d'), record('d'));
          } catch (e) {
            assert.match((e as Error).message, /rolled back before this write/);
          }
        }),
      );
      assert.deepEqual(keysOnDisk(db), ['a']);
      assert.deepEqual(
        ['a', 'c', 'd'].map((k) => db.hasPod(k)),
        [true, false, false],
      );
      db.addPod(pod('e'), record('e'));
      assert.deepEqual(keysOnDisk(db), ['a', 'e']);
    } finally {
      db.close();
    }
  });
});
