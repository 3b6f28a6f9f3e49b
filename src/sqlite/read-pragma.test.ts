import assert from 'node:assert/strict';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { makeTempDir, type TempDir } from '../../test/helpers/tmp.js';
import { openSqlite, pragmaInteger, quickCheck, tableColumns, type SqliteDb } from './index.js';

describe('pragmas read as typed values', () => {
  let dir: TempDir;
  let db: SqliteDb;
  beforeEach(() => {
    dir = makeTempDir('read-pragma');
    db = openSqlite(join(dir.path, 'p.db'), { busyTimeoutMs: 100, create: true });
    db.exec('CREATE TABLE t (a INTEGER, b TEXT)');
  });
  afterEach(() => {
    db.close();
    dir.remove();
  });

  it('pragmaInteger reads an integer pragma: the page size and count give the file size', () => {
    assert.equal(pragmaInteger(db, 'page_size'), 4096);
    assert.equal(pragmaInteger(db, 'page_count'), 2);
  });

  it('pragmaInteger refuses a pragma whose answer is not an integer, naming it, the file and the answer', () => {
    assert.throws(
      () => pragmaInteger(db, 'journal_mode'),
      (e: Error) => e.message === `PRAGMA journal_mode on ${join(dir.path, 'p.db')} returned "delete", not an integer`,
    );
  });

  it("tableColumns lists a table's columns in order, none for a missing table", () => {
    assert.deepEqual(tableColumns(db, 't'), ['a', 'b']);
    assert.deepEqual(tableColumns(db, 'missing'), []);
  });

  it('quickCheck answers ok for a sound file', () => {
    assert.deepEqual(quickCheck(db), ['ok']);
  });
});
