/**
 * The agent's resource DB lost, through `podipam agent` and the native shim on a SQLite
 * datastore: 5 pods added (their records written behind), the agent stopped, its
 * `resources.db` truncated to nothing or deleted, the agent restarted → the datastore's pod
 * records are the evidence: new pods never get the old pods' addresses, even well past the
 * cooldown; a repeated ADD of an old pod answers its address; the old pods' DELs delete their
 * records (`ipam check` clean after every DEL). A pod ADDed but not yet written behind when the
 * DB is lost (the agent killed right after the pod's DB commit): its address is held out of the
 * idle queue. A resource DB that is not a database stops the agent naming the file, untouched.
 * Two agents on one data directory: the second is refused, naming the holder's pid and the lock.
 * The warm pool without --datastore uses SQLite in the data directory, as the README says.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type RunningAgent, SHIM_BIN, requireShim, startAgent } from '../helpers/agent.js';
import { startArmedAgent, expectCrash } from '../helpers/crash-points.js';
import { PODIPAM_BIN, type PluginCall, runCliSync, runPlugin } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';
import { openStore } from '../../src/store/index.js';
import { ResourceDb } from '../../src/warm/resource-db.js';

const call = (socket: string, command: string, id: string): PluginCall => ({
  command,
  containerId: id,
  ifname: 'eth0',
  config: { cniVersion: '1.0.0', name: 'loss-net', ipam: { type: 'podipam', agent: socket } },
  env: { PODIPAM_PLUGIN: '' },
});

async function add(socket: string, id: string): Promise<string> {
  const r = await runPlugin(SHIM_BIN, call(socket, 'ADD', id));
  assert.equal(r.code, 0, `ADD ${id}: ${r.stdout} ${r.stderr}`);
  return (JSON.parse(r.stdout) as { ips: { address: string }[] }).ips.map((x) => x.address.split('/')[0]!)[0]!;
}

async function del(socket: string, id: string): Promise<void> {
  const r = await runPlugin(SHIM_BIN, call(socket, 'DEL', id));
  assert.equal(r.code, 0, `DEL ${id}: ${r.stdout} ${r.stderr}`);
}

async function drained(agent: RunningAgent): Promise<void> {
  for (let i = 0; ; i++) {
    const s = await agent.status();
    if (s.warmPool!.ready && s.warmPool!.writeBehindDepth === 0) return;
    assert.ok(i < 400, `write-behind not drained: ${JSON.stringify(s.warmPool)}`);
    await sleep(25);
  }
}

function checkClean(url: string, what: string): void {
  const c = runCliSync(url, ['ipam', 'check', '--json']);
  assert.equal(c.code, 0, `${what}: ${c.stdout} ${c.stderr}`);
  assert.deepEqual(JSON.parse(c.stdout), { leaks: [], problems: [] }, what);
}

function setUp(prefix: string): { dir: ReturnType<typeof makeTempDir>; url: string; socket: string; dataDir: string; args: string[] } {
  const dir = makeTempDir(prefix);
  const url = `sqlite:${join(dir.path, 'ds.db')}`;
  const r = runCliSync(url, ['pool', 'create', 'l4', '--cidr', '10.219.0.0/24', '--block-size', '28']);
  assert.equal(r.code, 0, r.stderr);
  const dataDir = join(dir.path, 'agent');
  const socket = join(dir.path, 'run', 'agent.sock');
  // max-idle high: nothing idle goes back to the cluster, so a forgotten address stays in the pool.
  const args = ['--node', 'lnode', '--datastore', url, '--data-dir', dataDir, '--min-idle', '2', '--max-idle', '16', '--capacity', '64', '--cooldown', '1s'];
  return { dir, url, socket, dataDir, args };
}

for (const loss of ['truncated', 'deleted'] as const) {
  test(
    `resource DB ${loss} while the agent is stopped: the datastore's pod records keep the old pods' addresses theirs past the cooldown; their DELs leave no record`,
    { timeout: 180_000 },
    async () => {
      requireShim();
      const { dir, url, socket, dataDir, args } = setUp(`warm-loss-${loss}`);
      let agent: RunningAgent | undefined;
      try {
        agent = await startAgent(socket, args);
        const old = new Map<string, string>();
        for (let i = 0; i < 5; i++) old.set(`old${i}`, await add(socket, `old${i}`));
        await drained(agent);
        assert.equal(await agent.stop(), 0);
        const db = join(dataDir, 'resources.db');
        if (loss === 'truncated') truncateSync(db, 0);
        else rmSync(db);
        agent = await startAgent(socket, args);
        await drained(agent);
        // Well past the cooldown: whatever joined the idle queue is free to hand out by now.
        await sleep(2500);
        const fresh = new Map<string, string>();
        for (let i = 0; i < 12; i++) fresh.set(`new${i}`, await add(socket, `new${i}`));
        const oldAddrs = new Set(old.values());
        for (const [id, a] of fresh) assert.ok(!oldAddrs.has(a), `${id} got ${a}, which old pod ${[...old].find(([, x]) => x === a)?.[0]} still holds`);
        assert.equal(new Set(fresh.values()).size, fresh.size, 'no address twice among the new pods');
        // The old pods are known again: a repeated ADD answers the address each holds.
        for (const [id, a] of old) assert.equal(await add(socket, id), a, `repeated ADD of ${id}`);
        await drained(agent);
        checkClean(url, 'after the restart');
        for (const id of [...old.keys(), ...fresh.keys()]) await del(socket, id);
        await drained(agent);
        const store = await openStore(url);
        try {
          assert.deepEqual(
            (await store.list('agent-pods/')).map((e) => e.key),
            [],
            'every DEL deleted its pod record',
          );
        } finally {
          await store.close();
        }
        checkClean(url, 'after every DEL');
      } finally {
        await agent?.kill();
        dir.remove();
      }
    },
  );
}

test(
  'resource DB deleted with a pod not yet written behind: its address stays out of the idle queue (reported), never handed to a new pod',
  { timeout: 180_000 },
  async () => {
    requireShim();
    const { dir, url, socket, dataDir, args } = setUp('warm-loss-window');
    let agent: RunningAgent | undefined;
    try {
      agent = await startAgent(socket, args);
      const before = new Set<string>();
      for (let i = 0; i < 3; i++) before.add(await add(socket, `w${i}`));
      await drained(agent);
      const s0 = await agent.status();
      assert.equal(await agent.stop(), 0);
      // The next pod's row is committed to the resource DB and the agent dies before answering or writing it behind.
      const armed = startArmedAgent(socket, args, 'agent.add.recorded');
      let died: Awaited<typeof armed.exited> | undefined;
      void armed.exited.then((d) => (died = d));
      for (let i = 0; !died; i++) {
        // Code 11 while the armed agent starts; it dies on the first ADD it serves.
        const r = await runPlugin(SHIM_BIN, call(socket, 'ADD', 'unwritten'));
        assert.notEqual(r.code, 0, `the armed agent answered the ADD: ${r.stdout}`);
        assert.ok(i < 600, `the armed agent did not die: ${r.stdout}`);
        if (!died) await sleep(50);
      }
      await armed.exited;
      assert.ok(died);
      expectCrash({ ...died, stdout: '' }, 'agent.add.recorded', 'agent');
      // The pod the agent committed but never wrote behind (nor answered: the runtime will DEL it).
      const lost = new ResourceDb(dataDir);
      const unwritten = lost.pods().find((p) => p.containerId === 'unwritten')?.addrs[0];
      lost.close();
      assert.ok(unwritten, 'the armed agent committed the pod before it died');
      {
        const store = await openStore(url);
        try {
          assert.equal((await store.list('agent-pods/lnode/')).length, 3, 'its record never reached the datastore');
        } finally {
          await store.close();
        }
      }
      rmSync(join(dataDir, 'resources.db'));
      rmSync(join(dataDir, 'resources.db-wal'), { force: true });
      rmSync(join(dataDir, 'resources.db-shm'), { force: true });
      agent = await startAgent(socket, args);
      await drained(agent);
      const s1 = await agent.status();
      assert.ok((s1.warmPool!.quarantined ?? 0) >= 1, `held out of the idle queue: ${JSON.stringify(s1.warmPool)}`);
      assert.match(agent.log(), /not known to be free/, 'the agent reports the addresses it holds back');
      await sleep(2500);
      const fresh = new Set<string>();
      // Every address the node held before the DB was lost that no pod record names, and more.
      const held = s0.warmPool!.pools.ipv4!.idle + s0.warmPool!.pools.ipv4!.inUse;
      for (let i = 0; i < held + 4; i++) fresh.add(await add(socket, `n${i}`));
      for (const a of before) assert.ok(!fresh.has(a), `a new pod got ${a}, which a pod still holds`);
      assert.ok(!fresh.has(unwritten), `a new pod got ${unwritten}, which the unwritten pod may hold`);
      checkClean(url, 'quarantined addresses are held, not leaks');
    } finally {
      await agent?.kill();
      dir.remove();
    }
  },
);

test('a resource DB that is not a database stops the agent, naming the file; the file is left as it was', { timeout: 60_000 }, () => {
  const { dir, socket, dataDir, args } = setUp('warm-garbage');
  try {
    const db = join(dataDir, 'resources.db');
    spawnSync('mkdir', ['-p', dataDir]);
    const garbage = 'this is not a SQLite database, just text a broken disk left here\n'.repeat(100);
    writeFileSync(db, garbage);
    const r = spawnSync(process.execPath, [PODIPAM_BIN, 'agent', '--socket', socket, '--metrics-listen', 'off', ...args], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.notEqual(r.status, 0, `the agent started on a garbage resource DB: ${r.stderr}`);
    assert.ok(r.stderr.includes(db), `the message names ${db}: ${r.stderr}`);
    assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
    assert.equal(readFileSync(db, 'utf8'), garbage, 'the file was not recreated or changed');
  } finally {
    dir.remove();
  }
});

test('two agents on one data directory: the second is refused, naming the holder and the lock file; the first keeps serving', { timeout: 60_000 }, async () => {
  requireShim();
  const { dir, dataDir, args } = setUp('warm-two');
  let agent: RunningAgent | undefined;
  try {
    const first = join(dir.path, 'run1', 'agent.sock');
    agent = await startAgent(first, args);
    const r = spawnSync(process.execPath, [PODIPAM_BIN, 'agent', '--socket', join(dir.path, 'run2', 'agent.sock'), '--metrics-listen', 'off', ...args], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.notEqual(r.status, 0, `a second agent started on ${dataDir}: ${r.stderr}`);
    assert.ok(r.stderr.includes(join(dataDir, 'agent.lock')), `names the lock file: ${r.stderr}`);
    assert.ok(r.stderr.includes(`pid ${agent.child.pid}`), `names the holder's pid ${agent.child.pid}: ${r.stderr}`);
    assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
    assert.ok(await add(first, 'still'), 'the first agent still serves');
  } finally {
    await agent?.kill();
    dir.remove();
  }
});

test(
  'the warm pool without --datastore uses SQLite in the data directory (as README says), the store the CLI uses by default',
  { timeout: 60_000 },
  async () => {
    requireShim();
    const dir = makeTempDir('warm-default-ds');
    let agent: RunningAgent | undefined;
    try {
      const env = { PODIPAM_DATA_DIR: dir.path };
      const cli = (a: string[]) => spawnSync(PODIPAM_BIN, a, { encoding: 'utf8', timeout: 30_000, env: { PATH: process.env.PATH, ...env } });
      const p = cli(['pool', 'create', 'd4', '--cidr', '10.218.0.0/24']);
      assert.equal(p.status, 0, p.stderr);
      const socket = join(dir.path, 'run', 'agent.sock');
      agent = await startAgent(socket, ['--node', 'dnode', '--data-dir', join(dir.path, 'agent'), '--min-idle', '2'], env);
      const a = await add(socket, 'd0');
      await drained(agent);
      const show = cli(['ipam', 'show', '--json']);
      assert.equal(show.status, 0, show.stderr);
      assert.match(show.stdout, /"d4"/);
      const store = await openStore(`sqlite:${join(dir.path, 'podipam.db')}`);
      try {
        const recs = await store.list('agent-pods/dnode/');
        assert.equal(recs.length, 1, 'the pod record is in the default datastore');
        assert.deepEqual((JSON.parse(recs[0]!.value) as { addrs: string[] }).addrs, [a]);
      } finally {
        await store.close();
      }
    } finally {
      await agent?.kill();
      dir.remove();
    }
  },
);
