import assert from 'node:assert/strict';
import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { makeTempDir } from '../../test/helpers/tmp.js';
import { applyPragmas, checkpointWhenIdle, oneRow, openSqlite } from './index.js';

/** Rows of `t` in the database file alone (copied without its WAL): what checkpoints have moved there. */
function rowsInMainFile(file: string, dir: string): number {
  const copy = join(dir, `copy-${Math.random().toString(36).slice(2)}.db`);
  copyFileSync(file, copy);
  const db = openSqlite(copy, { busyTimeoutMs: 100 });
  try {
    const t = oneRow(db.prepare<{ n: number }>("SELECT count(*) AS n FROM sqlite_master WHERE name = 't'")).n;
    return t === 0 ? 0 : oneRow(db.prepare<{ n: number }>('SELECT count(*) AS n FROM t')).n;
  } finally {
    db.close();
  }
}

test('checkpointWhenIdle: no checkpoint while commits keep coming, one after idleMs of quiet; the inline threshold is capPages', async () => {
  const dir = makeTempDir('ckpt-idle');
  const file = join(dir.path, 'x.db');
  const db = openSqlite(file, { busyTimeoutMs: 100, create: true });
  applyPragmas(db, { journal: 'wal', synchronous: 'normal' });
  db.exec('CREATE TABLE t (v INTEGER)');
  db.pragma('wal_checkpoint(TRUNCATE)'); // the table itself in the main file, the WAL empty
  const c = checkpointWhenIdle(db, { idleMs: 1000, capPages: 4000 });
  try {
    assert.equal(db.pragma('wal_autocheckpoint', { simple: true }), 4000);
    const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
    // Commits every ~5 ms for ~300 ms: never a second of quiet, so the timer never checkpoints.
    for (let i = 0; i < 60; i++) {
      insert.run(i);
      await sleep(5);
    }
    assert.equal(c.checkpoints, 0, 'no checkpoint while commits keep coming');
    assert.equal(rowsInMainFile(file, dir.path), 0, 'the rows are in the WAL only');
    await sleep(2500);
    assert.ok(c.checkpoints >= 1, 'checkpointed in the quiet');
    assert.equal(rowsInMainFile(file, dir.path), 60, 'every committed row moved into the database file');
    const after = c.checkpoints;
    await sleep(2200);
    assert.equal(c.checkpoints, after, 'nothing new written: no more checkpoints');
  } finally {
    c.stop();
    db.close();
    dir.remove();
  }
});

/** The WAL header's checkpoint sequence number and salts (bytes 12-23): new each time SQLite starts the WAL over. */
function walGeneration(file: string): string {
  return readFileSync(`${file}-wal`).subarray(12, 24).toString('hex');
}

test('checkpointWhenIdle: the WAL is started over by the timer, not by the next commit (whose caller would wait for the new header to be synced)', async () => {
  const dir = makeTempDir('ckpt-restart');
  const file = join(dir.path, 'x.db');
  const db = openSqlite(file, { busyTimeoutMs: 100, create: true });
  applyPragmas(db, { journal: 'wal', synchronous: 'normal' });
  db.exec('CREATE TABLE t (v INTEGER)');
  db.pragma('user_version = 7');
  const c = checkpointWhenIdle(db, { idleMs: 50, capPages: 4000 });
  try {
    const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 5; i++) insert.run(i);
      const before = walGeneration(file);
      const checkpoints = c.checkpoints;
      for (let i = 0; i < 100 && c.checkpoints === checkpoints; i++) await sleep(20);
      assert.ok(c.checkpoints > checkpoints, `round ${round}: checkpointed in the quiet`);
      const restarted = walGeneration(file);
      assert.notEqual(restarted, before, `round ${round}: the timer started the WAL over after its checkpoint`);
      insert.run(100 + round);
      assert.equal(walGeneration(file), restarted, `round ${round}: the next commit appended to the WAL the timer started`);
    }
    assert.equal(db.pragma('user_version', { simple: true }), 7, 'the restart changed nothing');
    assert.equal(oneRow(db.prepare<{ n: number }>('SELECT count(*) AS n FROM t')).n, 18);
    const after = c.checkpoints;
    await sleep(400);
    assert.ok(c.checkpoints <= after + 1, `its own restart is not news to the timer: ${c.checkpoints - after} more checkpoints in 8 quiet ticks`);
  } finally {
    c.stop();
    db.close();
    dir.remove();
  }
});
