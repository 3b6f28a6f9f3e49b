/**
 * A datastore that does not answer must not freeze `podipam serve`: with another process
 * holding `BEGIN EXCLUSIVE` on its SQLite file, parallel writes wait side by side (and fail
 * with 503 together after the store's 2 s deadline, or land once the lock goes) while
 * /healthz keeps answering at once; with its etcd member hung (SIGSTOP), /healthz still
 * answers at once, then says 503 once the check has failed.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { after, before, test } from 'node:test';
import { startEtcd, type EtcdCluster } from '../helpers/etcd.js';
import { api, startServe, type ApiAnswer, type ServeProcess } from './serve-harness.js';

const BETTER_SQLITE3 = createRequire(import.meta.url).resolve('better-sqlite3');

/** A child process sitting in BEGIN EXCLUSIVE on `file` until killed; resolves once it holds the lock. */
async function lockHolder(file: string) {
  const source = `const Database = require(${JSON.stringify(BETTER_SQLITE3)});
    const db = new Database(${JSON.stringify(file)});
    db.exec('BEGIN EXCLUSIVE');
    console.log('locked');
    setInterval(() => {}, 1000);`;
  const proc = spawn(process.execPath, ['-e', source], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exited = new Promise<void>((resolve) => proc.on('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the lock holder did not lock within 10 s: ${err}`)), 10_000);
    proc.stdout.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      if (out.includes('locked')) {
        clearTimeout(timer);
        resolve();
      }
    });
    void exited.then(() => reject(new Error(`the lock holder exited: ${err}`)));
  });
  return {
    release: async () => {
      proc.kill('SIGKILL');
      await exited;
    },
  };
}

/** Calls /healthz every 50 ms until `until` settles; returns the slowest answer's time and every status. */
async function pollHealth(url: string, until: Promise<unknown>): Promise<{ slowestMs: number; statuses: number[] }> {
  let done = false;
  void until.finally(() => (done = true)).catch(() => {});
  let slowestMs = 0;
  const statuses: number[] = [];
  for (let i = 0; i < 400 && !done; i++) {
    const t0 = performance.now();
    statuses.push((await api(url, 'GET', '/healthz')).status);
    slowestMs = Math.max(slowestMs, performance.now() - t0);
    await new Promise((r) => setTimeout(r, 50));
  }
  return { slowestMs, statuses };
}

const addNodes = (url: string, tag: string): Promise<{ answer: ApiAnswer; ms: number }[]> => {
  const t0 = performance.now();
  return Promise.all(
    Array.from({ length: 5 }, async (_, i) => {
      const answer = await api(url, 'POST', '/api/v1/nodes', { name: `${tag}-${i}` });
      return { answer, ms: performance.now() - t0 };
    }),
  );
};

let s: ServeProcess;
before(async () => {
  s = await startServe();
});
after(() => s?.stop());

test('serve on a locked SQLite file: 5 writes wait side by side, /healthz answers at once, writes land when the lock goes', { timeout: 60_000 }, async () => {
  const file = s.datastore.slice('sqlite:'.length);

  // Held past the store's 2 s deadline: every write fails with 503, all about 2 s after they began.
  let holder = await lockHolder(file);
  try {
    const writes = addNodes(s.url, 'held');
    const health = await pollHealth(s.url, writes);
    const results = await writes;
    for (const r of results) {
      assert.equal(r.answer.status, 503, JSON.stringify(r.answer.body));
      assert.equal(r.answer.body.error?.code, 'datastore_unavailable', JSON.stringify(r.answer.body));
    }
    const times = results.map((r) => r.ms.toFixed(0)).join(', ');
    assert.ok(Math.max(...results.map((r) => r.ms)) < 5000, `the writes failed after ${times} ms: they waited one after another`);
    assert.ok(health.statuses.length >= 5, `only ${health.statuses.length} /healthz answers while the writes waited`);
    assert.ok(
      health.statuses.every((st) => st === 200),
      `healthz answered ${health.statuses.join(',')}`,
    );
    assert.ok(health.slowestMs < 1000, `/healthz took ${health.slowestMs.toFixed(0)} ms while the writes waited`);
  } finally {
    await holder.release();
  }

  // Released before the deadline: the waiting writes land.
  holder = await lockHolder(file);
  try {
    const writes = addNodes(s.url, 'later');
    await new Promise((r) => setTimeout(r, 700));
    await holder.release();
    for (const r of await writes) assert.equal(r.answer.status, 201, JSON.stringify(r.answer.body));
  } finally {
    await holder.release();
  }
  const nodes = (await api(s.url, 'GET', '/api/v1/nodes')).body.items.map((n: { name: string }) => n.name);
  for (let i = 0; i < 5; i++) assert.ok(nodes.includes(`later-${i}`), `node later-${i} missing: ${nodes.join(',')}`);
  assert.ok(!nodes.some((n: string) => n.startsWith('held-')), 'a write refused with 503 was applied');
});

test('serve on a hung etcd member: /healthz answers at once, then 503 once the check failed, then ok again', { timeout: 90_000 }, async () => {
  let etcd: EtcdCluster | undefined;
  let e: ServeProcess | undefined;
  try {
    etcd = await startEtcd({ members: 1 });
    e = await startServe({ env: { PODIPAM_DATASTORE: etcd.url } });
    assert.equal((await api(e.url, 'GET', '/healthz')).body.datastore, 'ok');
    const member = etcd.members[0]!;
    await member.pause();
    try {
      const t0 = performance.now();
      const first = await api(e.url, 'GET', '/healthz');
      const ms = performance.now() - t0;
      assert.equal(first.status, 200, JSON.stringify(first.body));
      assert.equal(first.body.datastore, 'slow');
      assert.ok(ms < 1000, `/healthz took ${ms.toFixed(0)} ms on a hung datastore`);
      // The check gives up after the store's 2 s deadline; from then on /healthz says 503, still at once.
      let failed: ApiAnswer | undefined;
      for (let i = 0; i < 100 && failed === undefined; i++) {
        await new Promise((r) => setTimeout(r, 100));
        const t = performance.now();
        const h = await api(e.url, 'GET', '/healthz');
        const took = performance.now() - t;
        assert.ok(took < 1000, `/healthz took ${took.toFixed(0)} ms on a hung datastore`);
        if (h.status === 503) failed = h;
        else assert.equal(h.body.datastore, 'slow', JSON.stringify(h.body));
      }
      assert.ok(failed, '/healthz never reported the hung datastore');
      assert.equal(failed.body.error?.code, 'datastore_unavailable', JSON.stringify(failed.body));
    } finally {
      member.resume();
    }
    let ok = false;
    for (let i = 0; i < 100 && !ok; i++) {
      ok = (await api(e.url, 'GET', '/healthz')).body.datastore === 'ok';
      if (!ok) await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(ok, '/healthz did not recover after the member resumed');
  } finally {
    await e?.stop();
    await etcd?.stop();
  }
});
