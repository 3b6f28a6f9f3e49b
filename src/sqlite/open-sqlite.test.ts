import assert from 'node:assert/strict';
import { chmodSync, existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { makeTempDir, type TempDir } from '../../test/helpers/tmp.js';
import { applyPragmas, createSqliteFile, isBusy, oneRow, openSqlite, retryWhileBusy, SQLITE_DIR_MODE, SQLITE_FILE_MODE, type SqliteDb } from './index.js';

const mode = (p: string): number => statSync(p).mode & 0o777;

describe('the SQLite adapter', () => {
  let dir: TempDir;
  const open: SqliteDb[] = [];
  beforeEach(() => {
    dir = makeTempDir('sqlite');
  });
  afterEach(() => {
    for (const db of open.splice(0)) db.close();
    dir.remove();
  });
  const track = (db: SqliteDb): SqliteDb => (open.push(db), db);

  it('creates a new file 0600 and its missing directories 0700; its -wal and -shm get the file mode', () => {
    assert.equal(SQLITE_FILE_MODE, 0o600);
    assert.equal(SQLITE_DIR_MODE, 0o700);
    const file = join(dir.path, 'a', 'b', 'x.db');
    const db = track(openSqlite(file, { busyTimeoutMs: 100, create: true }));
    applyPragmas(db, { journal: 'wal', synchronous: 'full' });
    db.exec('CREATE TABLE t (v INTEGER)');
    db.prepare('INSERT INTO t (v) VALUES (?)').run(1);
    assert.equal(mode(join(dir.path, 'a')), 0o700);
    assert.equal(mode(join(dir.path, 'a', 'b')), 0o700);
    for (const f of [file, `${file}-wal`, `${file}-shm`]) assert.equal(mode(f), 0o600, f);
  });

  it('leaves an existing file and its mode alone, and opens it', () => {
    const file = join(dir.path, 'kept.db');
    assert.equal(createSqliteFile(file), true);
    const db = track(openSqlite(file, { busyTimeoutMs: 100 }));
    db.exec('CREATE TABLE t (v INTEGER)');
    chmodSync(file, 0o640);
    assert.equal(createSqliteFile(file), false);
    const again = track(openSqlite(file, { busyTimeoutMs: 100, create: true }));
    assert.equal(mode(file), 0o640);
    assert.equal(oneRow(again.prepare<{ n: number }>(`SELECT count(*) AS n FROM sqlite_master WHERE name = 't'`)).n, 1);
  });

  it('without create, a missing file is an error and nothing is created', () => {
    const file = join(dir.path, 'x.db');
    assert.throws(
      () => openSqlite(file, { busyTimeoutMs: 100 }),
      (e: Error & { code?: string }) => e.code === 'SQLITE_CANTOPEN',
    );
    assert.equal(existsSync(file), false);
    assert.throws(() => openSqlite(join(dir.path, 'missing', 'x.db'), { busyTimeoutMs: 100 }), /directory does not exist/);
    assert.equal(existsSync(join(dir.path, 'missing')), false);
  });

  it('applies the pragmas asked for and the busy timeout', () => {
    const full = track(openSqlite(join(dir.path, 'full.db'), { busyTimeoutMs: 1234, create: true }));
    applyPragmas(full, { journal: 'wal', synchronous: 'full' });
    assert.equal(full.pragma('journal_mode', { simple: true }), 'wal');
    assert.equal(full.pragma('synchronous', { simple: true }), 2);
    assert.equal(full.pragma('busy_timeout', { simple: true }), 1234);
    const normal = track(openSqlite(join(dir.path, 'normal.db'), { busyTimeoutMs: 5, create: true }));
    const defaultCache = normal.pragma('cache_size', { simple: true });
    applyPragmas(normal, { journal: 'wal', synchronous: 'normal', cacheSizeKiB: 65536 });
    assert.equal(normal.pragma('synchronous', { simple: true }), 1);
    assert.equal(normal.pragma('cache_size', { simple: true }), -65536);
    assert.notEqual(defaultCache, -65536);
    // WAL is the file's: a later connection finds it.
    const later = track(openSqlite(join(dir.path, 'normal.db'), { busyTimeoutMs: 5 }));
    assert.equal(later.pragma('journal_mode', { simple: true }), 'wal');
  });

  it('a page size applies to a new database only', () => {
    const fresh = track(openSqlite(join(dir.path, 'small-pages.db'), { busyTimeoutMs: 5, create: true }));
    applyPragmas(fresh, { journal: 'wal', synchronous: 'normal', pageSizeBytes: 1024 });
    fresh.exec('CREATE TABLE t (v TEXT)');
    assert.equal(fresh.pragma('page_size', { simple: true }), 1024);
    const old = track(openSqlite(join(dir.path, 'big-pages.db'), { busyTimeoutMs: 5, create: true }));
    applyPragmas(old, { journal: 'wal', synchronous: 'normal' });
    old.exec('CREATE TABLE t (v TEXT)');
    const was = old.pragma('page_size', { simple: true });
    assert.notEqual(was, 1024);
    const again = track(openSqlite(join(dir.path, 'big-pages.db'), { busyTimeoutMs: 5 }));
    applyPragmas(again, { journal: 'wal', synchronous: 'normal', pageSizeBytes: 1024 });
    assert.equal(again.pragma('page_size', { simple: true }), was, 'a file with pages keeps its page size');
  });

  it('read-only: reads, refuses writes', () => {
    const file = join(dir.path, 'ro.db');
    const rw = track(openSqlite(file, { busyTimeoutMs: 100, create: true }));
    rw.exec('CREATE TABLE t (v INTEGER); INSERT INTO t VALUES (7)');
    const ro = track(openSqlite(file, { busyTimeoutMs: 100, readonly: true }));
    assert.equal(ro.prepare<{ v: number }>('SELECT v FROM t').get()?.v, 7);
    assert.throws(
      () => ro.exec('INSERT INTO t VALUES (8)'),
      (e: Error & { code?: string }) => e.code === 'SQLITE_READONLY',
    );
  });

  it('typed statements: get is the row or undefined, all the rows, oneRow names the SQL of a missing row', () => {
    const db = track(openSqlite(join(dir.path, 'typed.db'), { busyTimeoutMs: 100, create: true }));
    db.exec('CREATE TABLE kv (k TEXT PRIMARY KEY, v INTEGER)');
    const put = db.prepare('INSERT INTO kv (k, v) VALUES (?, ?)');
    assert.equal(put.run('a', 1).changes, 1);
    put.run('b', 2);
    const get = db.prepare<{ k: string; v: number }>('SELECT k, v FROM kv WHERE k = ?');
    const row = get.get('a');
    assert.deepEqual(row, { k: 'a', v: 1 });
    // @ts-expect-error the row type has only the selected columns
    assert.equal(row?.w, undefined);
    assert.equal(get.get('zz'), undefined);
    const v: number[] = db
      .prepare<{ v: number }>('SELECT v FROM kv ORDER BY k')
      .all()
      .map((r) => r.v);
    assert.deepEqual(v, [1, 2]);
    assert.throws(() => oneRow(get, 'zz'), /no row for SELECT k, v FROM kv WHERE k = \?/);
    assert.equal(oneRow(get, 'b').v, 2);
  });

  it('retryWhileBusy waits out another connection’s write lock on timers, and gives up after the timeout', async () => {
    const file = join(dir.path, 'busy.db');
    const a = track(openSqlite(file, { busyTimeoutMs: 5, create: true }));
    applyPragmas(a, { journal: 'wal', synchronous: 'full' });
    a.exec('CREATE TABLE t (v INTEGER)');
    const b = track(openSqlite(file, { busyTimeoutMs: 5 }));
    const insert = b.prepare('INSERT INTO t VALUES (1)');
    a.exec('BEGIN IMMEDIATE');
    await assert.rejects(
      retryWhileBusy(() => insert.run(), 60),
      (e) => isBusy(e),
    );
    const waiting = retryWhileBusy(() => insert.run().changes, 5000);
    await new Promise((r) => setTimeout(r, 50));
    a.exec('COMMIT');
    assert.equal(await waiting, 1);
    assert.equal(isBusy(Object.assign(new Error('x'), { code: 'SQLITE_CANTOPEN' })), false);
  });
});
