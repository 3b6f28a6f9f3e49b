/**
 * The agent's warm-up (src/agent/warm-up.ts), through the built binary: it runs ADDs and DELs
 * through the agent's request path over a private socket before listening, every one answered
 * with success, and leaves nothing behind — no allocation or block in the agent's datastore, no
 * store of its own among the agent's, no counted call, no scan, no file in its temp directory.
 * Its cluster calls run on a datastore of the agent's kind (a SQLite file in its private directory
 * when the agent's is SQLite, else memory), a new one every few rounds early on (`epochOf`).
 * An agent with a warm pool warms its warm pool's path too (a warm pool of the warm-up's own):
 * its rounds carry a warm ADD and DEL, and the agent's own warm pool is untouched.
 * `--warm-up 0s` runs none.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startAgent, warmSizing } from '../helpers/agent.js';
import { runCliSync } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';
import { callsOfRounds, epochOf, warmUpCompleted } from '../../src/agent/warm-up-rounds.js';

const dir = makeTempDir('agent-warm-up');
after(() => dir.remove());

test('the warm-up answers its calls over the socket path and writes nothing the agent serves', { timeout: 120_000 }, async () => {
  const url = `sqlite:${join(dir.path, 'ds.db')}`;
  // A pool the warm-up's addresses (TEST-NET-1) would fall in, were it to use the agent's datastore.
  const created = runCliSync(url, ['pool', 'create', 'p', '--cidr', '192.0.2.0/24']);
  assert.equal(created.code, 0, created.stderr);
  const tmp = join(dir.path, 'tmp');
  mkdirSync(tmp);
  // What an agent killed during its warm-up left (its lock free, untouched for an hour): removed.
  const stale = join(tmp, 'podipam-agent-warm-up-abcdef');
  mkdirSync(join(stale, 'data'), { recursive: true });
  writeFileSync(join(stale, 'lock'), '');
  const hourAgo = Date.now() / 1000 - 3600;
  utimesSync(stale, hourAgo, hourAgo);
  // 1 s: past the early epochs (`epochOf`), so the cluster calls' later datastores are made and used too.
  const agent = await startAgent(join(dir.path, 'a', 'agent.sock'), ['--node', 'wu-node', '--datastore', url, '--warm-up', '1s'], { TMPDIR: tmp });
  try {
    const st = await agent.status();
    const w = st.warmUp;
    assert.ok(w, `status names the warm-up: ${JSON.stringify(st)}`);
    assert.ok(w.rounds >= 8, `at least 8 rounds: ${JSON.stringify(w)}`);
    assert.equal(w.failed, 0, JSON.stringify(w));
    assert.equal(w.staleRemoved, 1, `the dead agent's warm-up directory is removed: ${JSON.stringify(w)}`);
    assert.equal(w.store, 'sqlite', "the agent's datastore is SQLite: so is the warm-up's (a file in its private directory)");
    assert.equal(w.datastores, epochOf(w.rounds - 1, w.target) + 1, `a new datastore per early epoch: ${JSON.stringify(w)}`);
    assert.ok(w.datastores >= 2, `1 s makes at least one new datastore: ${JSON.stringify(w)}`);
    assert.equal(
      w.calls,
      callsOfRounds(w.rounds, 3),
      `an ADD+DEL on each of two local networks and the cluster per round, and the bursts', each answered ok over the socket: ${JSON.stringify(w)}`,
    );
    assert.deepEqual(st.requests, {}, 'no warm-up call is counted');
    assert.deepEqual(st.backends, {});
    assert.deepEqual(st.datastore.open, [url], "only the agent's own datastore is open");
    assert.equal(st.datastore.groupCommits, 0);
    assert.deepEqual({ full: st.localScans.full, incremental: st.localScans.incremental }, { full: 0, incremental: 0 }, "the agent's scan cache is untouched");
    assert.deepEqual(readdirSync(tmp), [], "the private directory is removed, and the dead agent's");
    const shown = runCliSync(url, ['pool', 'show', 'p', '-o', 'json']);
    assert.equal(shown.code, 0, shown.stderr);
    const p = JSON.parse(shown.stdout) as { allocated: number; blocks: number; nodes: unknown[] };
    assert.deepEqual({ allocated: p.allocated, blocks: p.blocks, nodes: p.nodes }, { allocated: 0, blocks: 0, nodes: [] }, shown.stdout);
  } finally {
    await agent.stop();
  }
});

test(
  "a warm-pool agent's warm-up runs the warm pool's ADD and DEL too, on a warm pool of its own: the agent's is untouched",
  { timeout: 120_000 },
  async () => {
    const url = `sqlite:${join(dir.path, 'warm-ds.db')}`;
    const created = runCliSync(url, ['pool', 'create', 'w', '--cidr', '10.213.0.0/24']);
    assert.equal(created.code, 0, created.stderr);
    const tmp = join(dir.path, 'warm-tmp');
    mkdirSync(tmp);
    const data = join(dir.path, 'warm-data');
    // A sticky policy matching every warm-up pod: the agent's, not the warm-up pool's (whose
    // capacity sticky reservations would fill, failing its ADDs).
    const sticky = ['--sticky-namespaces', 'podipam-warm-up'];
    const args = ['--node', 'wu-warm', '--datastore', url, '--data-dir', data, ...warmSizing(2, 4, 8), '--warm-up', '1s', ...sticky];
    const agent = await startAgent(join(dir.path, 'w', 'agent.sock'), args, { TMPDIR: tmp });
    try {
      // The agent's own warm pool starts once the socket listens: its status once it is restored.
      let st = await agent.status();
      for (let i = 0; !st.warmPool?.ready; i++) {
        assert.ok(i < 300, `the agent's warm pool not ready in 30 s: ${JSON.stringify(st.warmPool)}`);
        await new Promise((w) => setTimeout(w, 100));
        st = await agent.status();
      }
      const w = st.warmUp;
      assert.ok(w, `status names the warm-up: ${JSON.stringify(st)}`);
      assert.equal(w.failed, 0, JSON.stringify(w));
      assert.ok(w.rounds >= 8, JSON.stringify(w));
      assert.equal(
        w.calls,
        callsOfRounds(w.rounds, 4),
        `two local networks, the cluster and the warm pool, an ADD+DEL each per round, and the bursts': ${JSON.stringify(w)}`,
      );
      // Completed (its 67 target rounds) on a quiet machine; on a busy one it may fall short: then V8 optimises on.
      assert.equal(st.optimizing, !warmUpCompleted(w), `V8 stopped optimising exactly when the warm-up completed: ${JSON.stringify(w)}`);
      const pool = st.warmPool;
      assert.ok(pool, JSON.stringify(st));
      assert.deepEqual(
        { hits: pool.hits, misses: pool.misses, writeTxns: pool.writeTxns, inUse: pool.pools.ipv4?.inUse, families: pool.families },
        { hits: 0, misses: 0, writeTxns: 0, inUse: 0, families: [4] },
        "the agent's warm pool served none of the warm-up's calls",
      );
      assert.deepEqual(st.requests, {}, 'no warm-up call is counted');
      assert.deepEqual(st.datastore.open, [url], "only the agent's own datastore is open");
      assert.deepEqual(readdirSync(tmp), [], 'the private directory (and the warm-up pool resource DB in it) is removed');
      // Removed files stay open on Linux: none of the agent's descriptors points into it.
      const fds = readdirSync(`/proc/${st.pid}/fd`).map((fd) => {
        try {
          return readlinkSync(`/proc/${st.pid}/fd/${fd}`);
        } catch {
          return ''; // closed meanwhile
        }
      });
      assert.deepEqual(
        fds.filter((l) => l.startsWith(tmp)),
        [],
        "the warm-up's resource DB, lock and data directories are closed",
      );
      const listed = runCliSync(url, ['pool', 'list', '-o', 'json']);
      assert.equal(listed.code, 0, listed.stderr);
      assert.deepEqual(
        (JSON.parse(listed.stdout) as { items: { name: string }[] }).items.map((p) => p.name),
        ['w'],
        "the warm-up's pools are in its own datastore only",
      );
    } finally {
      await agent.stop();
    }
  },
);

test(
  "an agent on etcd warms up on loopback etcds of its own, whatever PODIPAM_ETCD_* its environment holds (never its cluster's)",
  { timeout: 60_000 },
  async () => {
    // No etcd listens there: the agent starts anyway (its datastore is tried again by the first call).
    const env = { PODIPAM_ETCD_USERNAME: 'root', PODIPAM_ETCD_PASSWORD: 'secret', PODIPAM_ETCD_CA: join(dir.path, 'no-such-ca.pem') };
    const agent = await startAgent(join(dir.path, 'e', 'agent.sock'), ['--node', 'wu-etcd', '--datastore', 'etcd://127.0.0.1:1', '--warm-up', '500ms'], env);
    try {
      const w = (await agent.status()).warmUp;
      assert.ok(w && w.rounds >= 8 && w.failed === 0 && w.error === undefined, JSON.stringify(w));
      assert.equal(w.store, 'etcd', JSON.stringify(w));
    } finally {
      await agent.stop();
    }
  },
);

test('an agent on a memory datastore warms up on a memory store of its own', { timeout: 60_000 }, async () => {
  const agent = await startAgent(join(dir.path, 'm', 'agent.sock'), ['--node', 'wu-mem', '--datastore', 'memory:wu-mem', '--warm-up', '300ms']);
  try {
    const w = (await agent.status()).warmUp;
    assert.ok(w && w.rounds >= 8 && w.failed === 0, JSON.stringify(w));
    assert.equal(w.store, 'memory', JSON.stringify(w));
  } finally {
    await agent.stop();
  }
});

test('--warm-up 0s runs no warm-up', { timeout: 60_000 }, async () => {
  const agent = await startAgent(join(dir.path, 'b', 'agent.sock'), ['--warm-up', '0s']);
  try {
    assert.equal((await agent.status()).warmUp, undefined);
  } finally {
    await agent.stop();
  }
});
