/** The resource DB's file on disk: owner-only modes, WAL, synchronous=NORMAL (a commit survives the agent's crash). */
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { makeTempDir, type TempDir } from '../../test/helpers/tmp.js';
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
});
