/** The resource DB's file on disk: owner-only modes, WAL, synchronous=NORMAL (a commit survives the agent's crash). */
import assert from 'node:assert/strict';
import { rmSync, statSync } from 'node:fs';
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
});
