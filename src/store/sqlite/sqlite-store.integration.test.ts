import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { storeConformance, takeEvents } from '../../../test/suites/conformance.js';
import { openSqlite } from '../../sqlite/index.js';
import { StoreCompactedError, StoreError, StoreUnavailableError } from '../errors.js';
import { openStore } from '../open-store.js';
import type { Store } from '../store.js';

let dir = '';
let files = 0;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'podipam-sqlite-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));
const freshUrl = () => `sqlite:${join(dir, `t${files++}`, 'store.db')}`;

storeConformance('sqlite', () => openStore(freshUrl()), { peer: (s) => openStore(s.url) });

const openStoreModule = new URL('../open-store.js', import.meta.url).href;

/** Runs `script` (an ES module body; `openStore` is in scope) in a child node process. */
function child(script: string, env: Record<string, string>) {
  const source = `const { openStore } = await import(${JSON.stringify(openStoreModule)});\n${script}`;
  const proc = spawn(process.execPath, ['--input-type=module', '-e', source], {
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  proc.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  proc.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    proc.on('exit', (code) => resolve({ code, stdout, stderr })),
  );
  const printed = (text: string) =>
    new Promise<void>((resolve, reject) => {
      const check = () => (stdout.includes(text) ? resolve() : undefined);
      proc.stdout.on('data', check);
      void exited.then((r) => reject(new Error(`child exited (${r.code}) before printing ${text}: ${r.stderr}`)));
      check();
    });
  return { proc, exited, printed };
}

// One process's share of the counter race: `count` successful CAS increments, retrying
// conflicts from the `current` the failed txn returns.
const INCREMENTER = `
  const store = await openStore(process.env.URL, { timeoutMs: 60000 });
  const count = Number(process.env.COUNT);
  console.log('ready');
  await new Promise((go) => process.stdin.once('data', go)); // start together, so they race
  process.stdin.destroy();
  let seen = await store.get('counter'), done = 0, conflicts = 0;
  for (let tries = 0; done < count; tries++) {
    if (tries > count * 100) throw new Error('too many CAS retries');
    const n = seen === undefined ? 0 : Number(seen.value);
    const r = await store.txn([{ key: 'counter', rev: seen?.rev ?? 0 }], [{ type: 'put', key: 'counter', value: String(n + 1) }]);
    if (r.succeeded) { done++; seen = { key: 'counter', value: String(n + 1), rev: r.rev }; }
    else { conflicts++; seen = r.current[0]; }
  }
  await store.close();
  console.log(JSON.stringify({ done, conflicts }));
`;

/**
 * A child process that opens the file of `url` with better-sqlite3 itself and sits in
 * `BEGIN <mode>` (holding the write lock) until it is killed; resolves once it holds the lock.
 */
async function lockHolder(url: string, mode: 'IMMEDIATE' | 'EXCLUSIVE'): Promise<ReturnType<typeof child>> {
  const holder = child(
    `const { createRequire } = await import('node:module');
     const Database = createRequire(${JSON.stringify(openStoreModule)})('better-sqlite3');
     const db = new Database(process.env.FILE);
     db.exec('BEGIN ${mode}');
     console.log('locked');
     setInterval(() => {}, 1000);`,
    { FILE: url.slice('sqlite:'.length) },
  );
  await holder.printed('locked');
  return holder;
}

/**
 * Counts the ticks of a 10 ms interval while `pending()` holds: a loop blocked for the whole
 * wait (a synchronous busy timeout) gets none or one, a free one many — counted, not timed,
 * so a loaded machine that delays ticks still passes.
 */
function loopWatch(pending: () => boolean): { stop(): number } {
  let ticks = 0;
  const timer = setInterval(() => {
    if (pending()) ticks++;
  }, 10);
  return {
    stop() {
      clearInterval(timer);
      return ticks;
    },
  };
}

describe('SqliteStore', () => {
  it('8 processes × 200 CAS increments on one new file lose no update', { timeout: 240_000 }, async () => {
    const url = freshUrl();
    const procs = Array.from({ length: 8 }, () => child(INCREMENTER, { URL: url, COUNT: '200' }));
    await Promise.all(procs.map((p) => p.printed('ready')));
    for (const p of procs) p.proc.stdin.write('go\n');
    const results = await Promise.all(procs.map((p) => p.exited));
    let conflicts = 0;
    for (const r of results) {
      assert.equal(r.code, 0, r.stderr);
      const out = JSON.parse(r.stdout.trim().split('\n').pop() as string) as { done: number; conflicts: number };
      assert.equal(out.done, 200);
      conflicts += out.conflicts;
    }
    const store = await openStore(url);
    try {
      const counter = await store.get('counter');
      assert.equal(counter?.value, '1600');
      assert.equal(counter?.rev, 1600, 'one revision per successful txn, none for failed ones');
      assert.ok(conflicts > 0, 'the processes never conflicted: the test proves nothing');
    } finally {
      await store.close();
    }
  });

  it('a txn facing another process holding the write lock fails with StoreUnavailableError after the timeout', { timeout: 20_000 }, async () => {
    const url = freshUrl();
    const store = await openStore(url, { timeoutMs: 300 });
    let holder: ReturnType<typeof child> | undefined;
    try {
      await store.txn([], [{ type: 'put', key: 'k', value: 'before' }]);
      holder = await lockHolder(url, 'IMMEDIATE');
      const t0 = performance.now();
      await assert.rejects(store.txn([], [{ type: 'put', key: 'k', value: 'during' }]), (e: unknown) => {
        assert.ok(e instanceof StoreUnavailableError, String(e));
        assert.equal(e.url, url);
        assert.match(e.reason, /locked .* over 300 ms/);
        return true;
      });
      const waited = performance.now() - t0;
      assert.ok(waited >= 250 && waited < 20_000, `waited ${waited} ms for a 300 ms timeout`); // the upper bound only proves it gives up
      // WAL: readers are not blocked by the writer
      assert.equal((await store.get('k'))?.value, 'before');
      holder.proc.kill('SIGKILL');
      await holder.exited;
      assert.equal((await store.txn([], [{ type: 'put', key: 'k', value: 'after' }])).succeeded, true);
      assert.equal((await store.get('k'))?.value, 'after');
    } finally {
      holder?.proc.kill('SIGKILL');
      await store.close();
    }
  });

  it('getMany, list, revision and a watch are reads: they answer while another process holds the write lock', { timeout: 30_000 }, async () => {
    const url = freshUrl();
    const store = await openStore(url, { timeoutMs: 300 });
    let holder: ReturnType<typeof child> | undefined;
    try {
      const r = await store.txn(
        [],
        [
          { type: 'put', key: 'a', value: '1' },
          { type: 'put', key: 'b', value: '2' },
        ],
      );
      const watch = store.watch('', 1);
      holder = await lockHolder(url, 'IMMEDIATE');
      // A BEGIN IMMEDIATE here would wait 300 ms and fail: these come back at once.
      assert.deepEqual(
        (await store.getMany(['b', 'a', 'c'])).map((e) => e?.value),
        ['2', '1', undefined],
      );
      assert.equal(await store.revision(), r.rev);
      assert.equal((await store.list('')).length, 2);
      assert.deepEqual(
        (await takeEvents(watch, 2)).events.map((e) => e.key),
        ['a', 'b'],
      );
      await assert.rejects(store.txn([], [{ type: 'put', key: 'c', value: '3' }]), StoreUnavailableError); // the lock is real
    } finally {
      holder?.proc.kill('SIGKILL');
      await store.close();
    }
  });

  it('a watch sees the writes of another process, in order, deletes included', { timeout: 30_000 }, async () => {
    const url = freshUrl();
    const store = await openStore(url);
    try {
      const watch = store.watch('w/', (await store.revision()) + 1);
      const writer = child(
        `const s = await openStore(process.env.URL);
         for (let i = 0; i < 20; i++) await s.txn([], [{ type: 'put', key: 'w/' + i, value: String(i) }, { type: 'put', key: 'other/' + i, value: '' }]);
         await s.txn([], [{ type: 'delete', key: 'w/3' }]);
         await s.close();`,
        { URL: url },
      );
      const { events } = await takeEvents(watch, 21);
      assert.equal((await writer.exited).code, 0);
      assert.deepEqual(
        events.slice(0, 20).map((e) => [e.type, e.key, e.value, e.modRevision]),
        Array.from({ length: 20 }, (_, i) => ['put', `w/${i}`, String(i), i + 1]),
      );
      assert.deepEqual(events[20], { type: 'delete', key: 'w/3', value: '', modRevision: 21 });
    } finally {
      await store.close();
    }
  });

  it('opens a schema-1 file, adding the change log; history from before is reported compacted', async () => {
    const { createRequire } = await import('node:module');
    const Database = createRequire(import.meta.url)('better-sqlite3') as new (p: string) => { exec(s: string): void; close(): void };
    const file = join(dir, 'schema1.db');
    const db = new Database(file);
    db.exec(`CREATE TABLE kv (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL, rev INTEGER NOT NULL);
      CREATE TABLE meta (name TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL);
      INSERT INTO meta (name, value) VALUES ('rev', 7), ('schema', 1);
      INSERT INTO kv (key, value, rev) VALUES ('old', 'x', 7);`);
    db.close();
    const s = await openStore(`sqlite:${file}`);
    try {
      assert.equal((await s.get('old'))?.value, 'x');
      await assert.rejects(takeEvents(s.watch('', 3), 1), (e: unknown) => e instanceof StoreCompactedError && e.oldest === 8 && e.fromRevision === 3);
      const watch = s.watch('', 8);
      const r = await s.txn([], [{ type: 'put', key: 'new', value: 'y' }]);
      assert.equal(r.rev, 8);
      assert.deepEqual((await takeEvents(watch, 1)).events, [{ type: 'put', key: 'new', value: 'y', modRevision: 8 }]);
    } finally {
      await s.close();
    }
  });

  it('5 parallel txns waiting for a BEGIN EXCLUSIVE of another process leave the event loop free, and land once it ends', { timeout: 30_000 }, async () => {
    const url = freshUrl();
    const store = await openStore(url, { timeoutMs: 10_000 });
    let holder: ReturnType<typeof child> | undefined;
    try {
      await store.txn([], [{ type: 'put', key: 'k', value: 'before' }]);
      holder = await lockHolder(url, 'EXCLUSIVE');
      let settled = false;
      const watch = loopWatch(() => !settled);
      const writes = Promise.allSettled(Array.from({ length: 5 }, (_, i) => store.txn([], [{ type: 'put', key: `w${i}`, value: String(i) }])));
      void writes.then(() => (settled = true));
      // Reads are not blocked by the writer (WAL), and not queued behind the waiting writes:
      // the read answers while the lock is still held and the writes still wait.
      assert.equal((await store.get('k'))?.value, 'before');
      assert.equal(settled, false, 'the read answered while the writes still waited');
      await new Promise((resolve) => setTimeout(resolve, 1500));
      assert.equal(settled, false, 'the writes wait as long as the lock is held');
      holder.proc.kill('SIGKILL');
      await holder.exited;
      const results = await writes;
      const ticks = watch.stop();
      assert.ok(
        results.every((r) => r.status === 'fulfilled' && r.value.succeeded),
        results.map((r) => (r.status === 'fulfilled' ? 'ok' : String(r.reason))).join('; '),
      );
      assert.equal((await store.list('w')).length, 5);
      assert.ok(ticks >= 10, `the event loop ran only ${ticks} timer ticks in the 1.5 s the writes waited: it was blocked`);
    } finally {
      holder?.proc.kill('SIGKILL');
      await store.close();
    }
  });

  it(
    '5 parallel txns facing a lock that outlasts the timeout all fail after about timeoutMs, together, without blocking the event loop',
    { timeout: 30_000 },
    async () => {
      const url = freshUrl();
      const store = await openStore(url, { timeoutMs: 1000 });
      let holder: ReturnType<typeof child> | undefined;
      try {
        holder = await lockHolder(url, 'EXCLUSIVE');
        let failed = 0;
        const watch = loopWatch(() => failed < 5);
        const t0 = performance.now();
        const failedAfter = await Promise.all(
          Array.from({ length: 5 }, async (_, i) => {
            await assert.rejects(store.txn([], [{ type: 'put', key: `w${i}`, value: String(i) }]), (e: unknown) => {
              assert.ok(e instanceof StoreUnavailableError, String(e));
              assert.match(e.reason, /locked .* over 1000 ms/);
              return true;
            });
            failed++;
            return performance.now() - t0;
          }),
        );
        const ticks = watch.stop();
        assert.ok(
          failedAfter.every((ms) => ms >= 950),
          `failed after ${failedAfter.map((ms) => ms.toFixed(0)).join(', ')} ms, before the 1000 ms timeout`,
        );
        // One after another, the last would fail after 5 × 1000 ms; together, all near 1000 ms.
        assert.ok(Math.max(...failedAfter) < 4000, `failed after ${failedAfter.map((ms) => ms.toFixed(0)).join(', ')} ms: the 5 waits did not overlap`);
        assert.ok(ticks >= 10, `the event loop ran only ${ticks} timer ticks while the writes waited: it was blocked`);
        holder.proc.kill('SIGKILL');
        await holder.exited;
        assert.equal((await store.list('w')).length, 0, 'a failed txn wrote something');
      } finally {
        holder?.proc.kill('SIGKILL');
        await store.close();
      }
    },
  );

  it('a call waiting for a lock when the store is closed fails with StoreError', { timeout: 60_000 }, async () => {
    const url = freshUrl();
    // A long timeout, so that failing at close (not at the timeout) shows with a generous bound.
    const store = await openStore(url, { timeoutMs: 40_000 });
    let holder: ReturnType<typeof child> | undefined;
    try {
      holder = await lockHolder(url, 'EXCLUSIVE');
      const t0 = performance.now();
      const write = store.txn([], [{ type: 'put', key: 'k', value: 'v' }]);
      await new Promise((resolve) => setTimeout(resolve, 100));
      await store.close();
      await assert.rejects(write, (e: unknown) => e instanceof StoreError && /closed/.test(e.message));
      assert.ok(performance.now() - t0 < 20_000, 'the waiting call outlived close() (it would fail only at the 40 s timeout)');
    } finally {
      holder?.proc.kill('SIGKILL');
    }
  });

  it('keeps data and revisions across reopen, creating missing directories', async () => {
    const url = `sqlite:${join(dir, 'a', 'b', 'c', 'reopen.db')}`;
    let s: Store = await openStore(url);
    const r = await s.txn([], [{ type: 'put', key: 'k', value: 'v' }]);
    await s.close();
    s = await openStore(url);
    assert.deepEqual(await s.get('k'), { key: 'k', value: 'v', rev: r.rev });
    assert.equal((await s.txn([], [{ type: 'put', key: 'k2', value: '' }])).rev, r.rev + 1);
    await s.close();
  });

  it('creates a new file owner-only (0600, its -wal and -shm too) in new directories 0700, in WAL mode', async () => {
    const file = join(dir, 'modes', 'inner', 'store.db');
    const s = await openStore(`sqlite:${file}`);
    try {
      await s.txn([], [{ type: 'put', key: 'k', value: 'v' }]);
      for (const p of [file, `${file}-wal`, `${file}-shm`]) assert.equal(statSync(p).mode & 0o777, 0o600, p);
      for (const d of [join(dir, 'modes'), join(dir, 'modes', 'inner')]) assert.equal(statSync(d).mode & 0o777, 0o700, d);
      const reader = openSqlite(file, { busyTimeoutMs: 100, readonly: true });
      assert.equal(reader.pragma('journal_mode', { simple: true }), 'wal');
      reader.close();
    } finally {
      await s.close();
    }
  });

  it('accepts a path relative to the working directory', async () => {
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      const s = await openStore('sqlite:rel/store.db');
      await s.txn([], [{ type: 'put', key: 'k', value: 'v' }]);
      await s.close();
    } finally {
      process.chdir(cwd);
    }
    const s = await openStore(`sqlite:${join(dir, 'rel', 'store.db')}`);
    assert.equal((await s.get('k'))?.value, 'v');
    await s.close();
  });

  it('a file that is not a podipam database, or cannot be created, gives StoreError naming the URL', async () => {
    const junk = join(dir, 'junk.db');
    writeFileSync(junk, 'this is not an SQLite database, just text that is long enough to have a header.'.repeat(20));
    await assert.rejects(openStore(`sqlite:${junk}`), (e: unknown) => {
      assert.ok(e instanceof StoreError, String(e));
      assert.match(e.message, /SQLITE_NOTADB/);
      assert.ok(e.message.includes(junk));
      return true;
    });
    await assert.rejects(openStore(`sqlite:${junk}/sub/x.db`), (e: unknown) => e instanceof StoreError && /ENOTDIR/.test(e.message));
    const other = join(dir, 'other.db');
    const s = await openStore(`sqlite:${other}`);
    await s.close();
    const { createRequire } = await import('node:module');
    const Database = createRequire(import.meta.url)('better-sqlite3') as new (p: string) => { exec(s: string): void; close(): void };
    const db = new Database(other);
    db.exec(`UPDATE meta SET value = 99 WHERE name = 'schema'`);
    db.close();
    await assert.rejects(openStore(`sqlite:${other}`), (e: unknown) => e instanceof StoreError && /schema version 99/.test(e.message));
  });
});

describe('sqlite identity', () => {
  it('is kept in the file: reopened and copied it answers the same, a new file at the same path another', async () => {
    const url = freshUrl();
    const file = url.slice('sqlite:'.length);
    let s = await openStore(url);
    await s.txn([], [{ type: 'put', key: 'k', value: 'v' }]);
    const id = await s.identity();
    assert.match(id, /^sqlite file [0-9a-f]+$/);
    await s.close();
    s = await openStore(url);
    assert.equal(await s.identity(), id, 'reopened');
    await s.close();
    const copy = join(dir, 'identity-copy.db');
    copyFileSync(file, copy);
    const c = await openStore(`sqlite:${copy}`);
    try {
      assert.equal(await c.identity(), id, 'a copy of the file (a restored image) carries it');
    } finally {
      await c.close();
    }
    for (const f of [file, `${file}-wal`, `${file}-shm`]) rmSync(f, { force: true });
    s = await openStore(url);
    try {
      assert.notEqual(await s.identity(), id, 'a new file at the same path is another datastore');
    } finally {
      await s.close();
    }
  });
});

describe('sqlite durability', () => {
  /**
   * The fsync and fdatasync calls of a child process's 20 txns on a new file opened with
   * `options` (strace; counted after the store is open: making a new file's WAL syncs anyway).
   */
  async function syncsOf(options: string): Promise<number> {
    const trace = join(dir, `syncs-${files}.txt`);
    const script = `const { openStore } = await import(${JSON.stringify(openStoreModule)});
      const s = await openStore(process.env.URL, ${options});
      process.stdout.write('commits\\n');
      for (let i = 0; i < 20; i++) await s.txn([], [{ type: 'put', key: 'k' + i, value: 'v' }]);
      await s.close();`;
    const proc = spawn('strace', ['-f', '-qq', '-e', 'trace=fsync,fdatasync,write', '-o', trace, process.execPath, '--input-type=module', '-e', script], {
      env: { ...process.env, URL: freshUrl() },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    proc.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const code = await new Promise<number | null>((resolve, reject) => {
      proc.on('error', (e) => reject(new Error(`strace (Debian's strace package) is needed to count a store's fsyncs: ${e.message}`)));
      proc.on('exit', resolve);
    });
    assert.equal(code, 0, stderr);
    const lines = readFileSync(trace, 'utf8').split('\n');
    const from = lines.findIndex((l) => /write\(1, "commits/.test(l));
    assert.ok(from >= 0, `the child's marker is in the trace: ${lines.slice(-5).join('\n')}`);
    return lines.slice(from).filter((l) => /\b(fsync|fdatasync)\(/.test(l)).length;
  }

  it("flushes every commit by default, and none of a store opened with durable: false (the agent's warm-up's)", async () => {
    const durable = await syncsOf('{}');
    assert.ok(durable >= 20, `a durable store fsyncs each of its 20 commits: ${durable}`);
    assert.equal(await syncsOf('{ durable: false }'), 0, 'a throwaway store never waits for the disk');
  });
});
