/**
 * The default history file belongs to one datastore, through the built `bin/podipam serve` as a
 * new user would run it: `serve --datastore sqlite:…/x.db` once, then plain `serve` (what
 * `npm start` runs) on the default datastore starts, each with its own history file; an explicit
 * --history-db that follows another datastore is refused naming both; a DATA_DIR/history.db an
 * older podipam wrote for another datastore is moved to that datastore's own file, not refused.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { openHistoryDb } from '../../src/history/sqlite-history-db.js';
import { makeTempDir } from '../helpers/tmp.js';
import { api, runCli, startServe, waitFor } from './serve-harness.js';

/** The datastore a history file follows. */
function follows(file: string): string | undefined {
  const db = openHistoryDb(file, { readonly: true });
  try {
    return db.position()?.source;
  } finally {
    db.close();
  }
}

async function serveOnce(args: readonly string[], env: Readonly<Record<string, string>>): Promise<string> {
  const s = await startServe({ rawArgs: true, args: ['--listen', '127.0.0.1:0', '--gc-interval', '0', ...args], env });
  try {
    await waitFor('/healthz 200 with the history running', 20_000, async () => {
      const h = await api(s.url, 'GET', '/healthz');
      return h.status === 200 && h.body.loops?.history?.running === true ? true : undefined;
    });
    return s.stdout();
  } finally {
    assert.equal(await s.stop(), 0, `serve ${args.join(' ')} stops cleanly; stderr: ${s.stderr()}`);
  }
}

test('serve --datastore sqlite:x.db once, then plain serve: it starts, each datastore with its own history file', { timeout: 120_000 }, async () => {
  const home = makeTempDir('serve-history-default');
  try {
    const data = join(home.path, 'state');
    const env = { PODIPAM_DATA_DIR: data };
    const x = `sqlite:${join(home.path, 'x.db')}`;
    await serveOnce(['--datastore', x], env);
    await serveOnce([], env); // refused before: "history store …/history.db follows datastore sqlite:…/x.db, not …"
    assert.equal(follows(join(data, 'history.db')), `sqlite:${join(data, 'podipam.db')}`, 'DATA_DIR/history.db follows the default datastore');
    const out = await serveOnce(['--datastore', x], env);
    const m = /history on \((\S+), retention/.exec(out);
    assert.ok(m && m[1] !== join(data, 'history.db') && m[1]!.startsWith(join(data, 'history') + '/'), `x.db's own file: ${out}`);
    assert.equal(follows(m[1]!), x);

    // An explicit --history-db of another datastore: refused, naming the file and both datastores.
    const r = await runCli(['serve', '--listen', '127.0.0.1:0', '--gc-interval', '0', '--datastore', x, '--history-db', join(data, 'history.db')], env, 30_000);
    assert.notEqual(r.code, 0, r.stdout);
    assert.ok(r.stderr.includes(`history store ${join(data, 'history.db')} follows datastore sqlite:${join(data, 'podipam.db')}, not ${x}`), r.stderr);
  } finally {
    home.remove();
  }
});

test(
  "a DATA_DIR/history.db written for another datastore (by an older podipam) is moved to that datastore's own file; plain serve starts",
  { timeout: 120_000 },
  async () => {
    const home = makeTempDir('serve-history-moved');
    try {
      const data = join(home.path, 'state');
      const env = { PODIPAM_DATA_DIR: data };
      const x = `sqlite:${join(home.path, 'x.db')}`;
      const old = join(data, 'history.db');
      await serveOnce(['--datastore', x, '--history-db', old], env); // what the default was
      assert.equal(follows(old), x);
      const s = await startServe({ rawArgs: true, args: ['--listen', '127.0.0.1:0', '--gc-interval', '0'], env });
      try {
        const moved = /history\.db followed datastore \S+, not this one: moved to (\S+) /.exec(s.stderr());
        assert.ok(moved, s.stderr());
        assert.equal(follows(moved[1]!), x, "the old history kept, as x.db's own");
        assert.ok(existsSync(old));
      } finally {
        assert.equal(await s.stop(), 0);
      }
      assert.equal(follows(old), `sqlite:${join(data, 'podipam.db')}`);
      const again = await serveOnce(['--datastore', x], env);
      assert.match(again, /history on \(\S+sqlite-\S+x\.db-[0-9a-f]{12}\.db,/, 'x.db finds its old history where it was moved');
    } finally {
      home.remove();
    }
  },
);
