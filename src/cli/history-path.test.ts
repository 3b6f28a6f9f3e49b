import assert from 'node:assert/strict';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { after, it } from 'node:test';
import { makeTempDir } from '../../test/helpers/tmp.js';
import { defaultHistoryPath, moveForeignDefaultHistory } from './history-path.js';

const dir = makeTempDir('history-path');
after(() => dir.remove());
const data = join(dir.path, 'data');

it('defaultHistoryPath: the default datastore keeps DATA_DIR/history.db, however its path is written', () => {
  assert.equal(defaultHistoryPath(data, `sqlite:${join(data, 'podipam.db')}`), join(data, 'history.db'));
  assert.equal(defaultHistoryPath(data, `sqlite:${relative(process.cwd(), join(data, 'podipam.db'))}`), join(data, 'history.db'));
});

it('defaultHistoryPath: every other datastore its own file under DATA_DIR/history, named after its URL, no password in it', () => {
  const x = defaultHistoryPath(data, `sqlite:${join(dir.path, 'x.db')}`);
  const y = defaultHistoryPath(data, `sqlite:${join(dir.path, 'y.db')}`);
  const e = defaultHistoryPath(data, 'etcd://root:s3cret@10.0.0.1:2379,10.0.0.2:2379');
  const m = defaultHistoryPath(data, 'memory:');
  for (const p of [x, y, e, m]) assert.equal(join(p, '..'), join(data, 'history'), p);
  assert.equal(new Set([x, y, e, m]).size, 4, 'one file per datastore');
  assert.match(x, /\/sqlite-[^/]*x\.db-[0-9a-f]{12}\.db$/);
  assert.match(e, /\/etcd-[^/]*10\.0\.0\.1-2379-10\.0\.0\.2-2379-[0-9a-f]{12}\.db$/);
  assert.doesNotMatch(e, /s3cret/);
  assert.equal(defaultHistoryPath(data, 'etcd://root:other@10.0.0.1:2379,10.0.0.2:2379'), e, 'a new password: the same datastore');
  assert.equal(defaultHistoryPath(data, `sqlite:${relative(process.cwd(), join(dir.path, 'x.db'))}`), x, 'a relative path: the same file');
});

it("moveForeignDefaultHistory: DATA_DIR/history.db of another datastore goes to that datastore's own file, never over one", () => {
  mkdirSync(data, { recursive: true });
  const other = `sqlite:${join(dir.path, 'x.db')}`;
  writeFileSync(join(data, 'history.db'), 'h');
  writeFileSync(join(data, 'history.db-wal'), 'w');
  const to = moveForeignDefaultHistory(data, other);
  assert.equal(to, defaultHistoryPath(data, other));
  assert.ok(existsSync(to) && existsSync(`${to}-wal`));
  assert.ok(!existsSync(join(data, 'history.db')) && !existsSync(join(data, 'history.db-wal')));
  writeFileSync(join(data, 'history.db'), 'h2');
  assert.equal(moveForeignDefaultHistory(data, other), undefined, 'its own file exists: nothing moved');
  assert.ok(existsSync(join(data, 'history.db')));
  assert.equal(moveForeignDefaultHistory(data, 'nonsense'), undefined, 'not a datastore URL');
});
