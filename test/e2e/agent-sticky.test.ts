/**
 * Sticky IPs and the pod GC of the agent's warm pool, end to end: the real `podipam agent` on a
 * real SQLite datastore file, the native shim as the CNI client, the Kubernetes API test double
 * (test/helpers/fake-kube-apiserver.ts) serving the pods.
 * - A StatefulSet pod deleted (CNI DEL) and recreated (new uid, CNI ADD with a new container id)
 *   within the window gets the same address, also across an agent restart; a ReplicaSet pod
 *   does not; after the window (a short --sticky-for), not.
 * - GC: a pod removed from the API server without a CNI DEL is released (at once when not
 *   sticky, not before its window when sticky); with the API server stopped nothing is
 *   released and a pod lookup failure does not fail the ADD.
 * - `--config FILE`: its options apply, flags win, a bad key or value is refused naming it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type RunningAgent, SHIM_BIN, requireShim, startAgent } from '../helpers/agent.js';
import { addPod, podCall, untilStatus } from '../helpers/agent-pods.js';
import { type FakeKubeApiServer, startFakeKubeApiServer } from '../helpers/fake-kube-apiserver.js';
import { PODIPAM_BIN, runCliSync, runPlugin } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';

const NODE = 'stickynode';

const call = (socket: string, command: string, containerId: string, namespace: string, name: string, uid: string) =>
  podCall(socket, 'sticky-net', command, containerId, namespace, name, uid);
/** CNI ADD through the shim for the pod `fake` has under namespace/name; returns its IPv4 address. */
const add = (fake: FakeKubeApiServer, socket: string, containerId: string, namespace: string, name: string) =>
  addPod(fake, socket, 'sticky-net', containerId, namespace, name);
const until = untilStatus;

async function del(socket: string, containerId: string, namespace: string, name: string): Promise<void> {
  const r = await runPlugin(SHIM_BIN, call(socket, 'DEL', containerId, namespace, name, 'any'));
  assert.equal(r.code, 0, `DEL ${namespace}/${name} ${containerId}: ${r.stdout} ${r.stderr}`);
}

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

function setup(prefix: string): { dir: ReturnType<typeof makeTempDir>; url: string; socket: string; kubeconfig: string } {
  const dir = makeTempDir(prefix);
  const url = `sqlite:${join(dir.path, 'ds.db')}`;
  const r = runCliSync(url, ['pool', 'create', 's4', '--cidr', '10.213.0.0/16']);
  assert.equal(r.code, 0, r.stderr);
  return { dir, url, socket: join(dir.path, 'run', 'agent.sock'), kubeconfig: join(dir.path, 'kubeconfig') };
}

const warmArgs = (url: string, dir: string, stickyFor: string, more: string[] = []): string[] => [
  '--node',
  NODE,
  '--datastore',
  url,
  '--data-dir',
  join(dir, 'agent'),
  '--min-idle',
  '4',
  '--max-idle',
  '8',
  '--capacity',
  '64',
  '--cooldown',
  '1s',
  '--sticky-for',
  stickyFor,
  ...more,
];

test(
  'a StatefulSet pod recreated within --sticky-for gets its address back (also across a restart), a ReplicaSet pod does not; after the window, not',
  { timeout: 240_000 },
  async () => {
    requireShim();
    const { dir, url, socket, kubeconfig } = setup('agent-sticky');
    const fake = await startFakeKubeApiServer();
    let agent: RunningAgent | undefined;
    try {
      fake.writeKubeconfig(kubeconfig);
      const kube = ['--kubeconfig', kubeconfig, '--gc-interval', '1h'];
      agent = await startAgent(socket, warmArgs(url, dir.path, '10m', kube));
      await until(agent, 'warm pool preloaded', (s) => (s.warmPool?.pools.ipv4?.idle ?? 0) >= 4);
      fake.addPod('db', 'pg-0', { node: NODE, ownerKind: 'StatefulSet' });
      fake.addPod('web', 'web-5d9c-x1', { node: NODE, ownerKind: 'ReplicaSet' });
      // The agent's pod cache (list + watch) learns the pods' owners: the ADDs ask the API server nothing.
      await until(agent, 'pod cache holds both pods', (s) => (s.podCache?.pods ?? 0) >= 2);
      const a = await add(fake, socket, 'c1', 'db', 'pg-0');
      const w = await add(fake, socket, 'w1', 'web', 'web-5d9c-x1');
      assert.equal(fake.podRequests.get, 0, 'no pod GET: the owners came from the cache');
      assert.equal((await agent.status()).warmPool!.pods.cacheHits, 2, 'each pod resolved once, from the cache');
      // A repeated ADD is answered from the pod store, not the API server.
      assert.equal(await add(fake, socket, 'c1', 'db', 'pg-0'), a);
      assert.equal(fake.podRequests.get, 0);

      await del(socket, 'c1', 'db', 'pg-0');
      await del(socket, 'w1', 'web', 'web-5d9c-x1');
      let s = await agent.status();
      assert.equal(s.warmPool!.stickyReservations, 1, 'only the StatefulSet pod left a reservation');
      fake.deletePod('db', 'pg-0');
      fake.deletePod('web', 'web-5d9c-x1');
      fake.addPod('db', 'pg-0', { node: NODE, ownerKind: 'StatefulSet' });
      fake.addPod('web', 'web-5d9c-x2', { node: NODE, ownerKind: 'ReplicaSet' });
      // Past the cooldown, pods take idle addresses; the reserved one goes to none of them.
      await sleep(1500);
      const others: string[] = [];
      for (let i = 0; i < 10; i++) {
        fake.addPod('web', `filler-${i}`, { node: NODE, ownerKind: 'ReplicaSet' });
        others.push(await add(fake, socket, `f${i}`, 'web', `filler-${i}`));
      }
      others.push(await add(fake, socket, 'w2', 'web', 'web-5d9c-x2'));
      assert.ok(!others.includes(a), `the reserved ${a} went to no other pod: ${others.join(' ')}`);
      assert.ok(others.includes(w), `the ReplicaSet pod's ${w} went back to the idle queue: ${others.join(' ')}`);

      // The StatefulSet pod is back (new uid, new container id): same address.
      assert.equal(await add(fake, socket, 'c2', 'db', 'pg-0'), a, 'same address within the window');
      s = await agent.status();
      assert.equal(s.warmPool!.pods.stickyHits, 1);
      assert.equal(s.warmPool!.stickyReservations, 0);

      // DEL, restart the agent on the same data dir: the reservation survived it.
      await del(socket, 'c2', 'db', 'pg-0');
      await agent.stop();
      agent = await startAgent(socket, warmArgs(url, dir.path, '10m', kube));
      s = await until(agent, 'warm pool ready after the restart', (x) => x.warmPool?.ready === true);
      assert.equal(s.warmPool!.stickyReservations, 1, 'the reservation is rebuilt from the resource DB');
      const text = spawnSync(process.execPath, [PODIPAM_BIN, 'agent', 'status', '--socket', socket], { encoding: 'utf8', timeout: 20_000 });
      assert.equal(text.status, 0, text.stderr);
      assert.match(text.stdout, /sticky: 1 reservations \(for 600 s\)/);
      assert.match(text.stdout, /no pod GC run yet/);
      fake.deletePod('db', 'pg-0');
      fake.addPod('db', 'pg-0', { node: NODE, ownerKind: 'StatefulSet' });
      assert.equal(await add(fake, socket, 'c3', 'db', 'pg-0'), a, 'same address after the agent restarted');

      // A short window: after it, the pod gets another address.
      await del(socket, 'c3', 'db', 'pg-0');
      await agent.stop();
      agent = await startAgent(socket, warmArgs(url, dir.path, '2s', kube));
      await until(agent, 'warm pool ready', (x) => x.warmPool?.ready === true);
      assert.equal(await add(fake, socket, 'c4', 'db', 'pg-0'), a, 'the old reservation (10m) still holds');
      await del(socket, 'c4', 'db', 'pg-0');
      assert.equal((await agent.status()).warmPool!.stickyReservations, 1);
      await until(agent, 'the 2 s reservation expired', (x) => x.warmPool!.stickyReservations === 0);
      fake.deletePod('db', 'pg-0');
      fake.addPod('db', 'pg-0', { node: NODE, ownerKind: 'StatefulSet' });
      assert.notEqual(await add(fake, socket, 'c5', 'db', 'pg-0'), a, 'after the window: another address');
      s = await agent.status();
      assert.equal(s.warmPool!.pods.stickyHits, 1, 'no sticky hit after the window');
      const check = runCliSync(url, ['ipam', 'check', '--json']);
      assert.deepEqual(JSON.parse(check.stdout), { leaks: [], problems: [] });
    } finally {
      await agent?.kill();
      await fake.close();
      dir.remove();
    }
  },
);

test(
  'pod GC: a pod removed from the API server without a CNI DEL is released (a sticky one after its window); with the API server stopped nothing is released and ADDs still work',
  { timeout: 240_000 },
  async () => {
    requireShim();
    const { dir, url, socket, kubeconfig } = setup('agent-podgc');
    const fake = await startFakeKubeApiServer();
    let agent: RunningAgent | undefined;
    try {
      fake.writeKubeconfig(kubeconfig);
      const port = await freePort();
      const STICKY_MS = 3000;
      agent = await startAgent(
        socket,
        warmArgs(url, dir.path, `${STICKY_MS}ms`, ['--kubeconfig', kubeconfig, '--gc-interval', '300ms', '--metrics-listen', `127.0.0.1:${port}`]),
      );
      await until(agent, 'warm pool preloaded', (s) => (s.warmPool?.pools.ipv4?.idle ?? 0) >= 4);
      fake.addPod('db', 'pg-0', { node: NODE, ownerKind: 'StatefulSet' });
      fake.addPod('web', 'web-1', { node: NODE, ownerKind: 'ReplicaSet' });
      fake.addPod('web', 'elsewhere', { node: 'another-node' });
      await add(fake, socket, 'c1', 'db', 'pg-0');
      await add(fake, socket, 'w1', 'web', 'web-1');
      // GC runs that list both pods release nothing.
      const added = Date.now();
      const listed = await until(agent, 'a GC run after the ADDs', (s) => s.warmPool!.pods.lastGc?.ok === true && s.warmPool!.pods.lastGc.at > added);
      assert.equal(listed.warmPool!.pods.lastGc!.listed, 2, "only this node's pods are listed");
      assert.equal(listed.warmPool!.pods.gcReleases, 0);
      assert.equal(listed.warmPool!.pools.ipv4!.inUse, 2);

      // The ReplicaSet pod is force-deleted: no CNI DEL. Released at once.
      fake.deletePod('web', 'web-1');
      await until(agent, 'the non-sticky pod released', (s) => s.warmPool!.pods.gcReleases === 1 && s.warmPool!.pools.ipv4!.inUse === 1);
      // The StatefulSet pod too: not before its window.
      const t0 = Date.now();
      fake.deletePod('db', 'pg-0');
      const gone = await until(agent, 'the sticky pod released', (s) => s.warmPool!.pods.gcReleases === 2);
      const waited = Date.now() - t0;
      // (A list asked for just before the deletion may already miss the pod: a few ms of slack.)
      assert.ok(waited >= STICKY_MS - 250, `released ${waited} ms after the pod left the API server: not before its ${STICKY_MS} ms window`);
      assert.equal(gone.warmPool!.pools.ipv4!.inUse, 0);
      assert.equal(gone.warmPool!.stickyReservations, 0, 'released for good, not into a reservation');
      assert.match(agent.log(), /pod GC: released the attachments of pods gone from the API server/);
      const check = runCliSync(url, ['ipam', 'check', '--json']);
      assert.deepEqual(JSON.parse(check.stdout), { leaks: [], problems: [] });

      // Two pods again, then the API server goes away; they disappear from it meanwhile.
      fake.addPod('db', 'pg-1', { node: NODE, ownerKind: 'StatefulSet' });
      fake.addPod('web', 'web-2', { node: NODE, ownerKind: 'ReplicaSet' });
      await add(fake, socket, 'c2', 'db', 'pg-1');
      await add(fake, socket, 'w2', 'web', 'web-2');
      const added2 = Date.now();
      const before = await until(agent, 'a GC run listing the new pods', (s) => s.warmPool!.pods.lastGc?.listed === 2 && s.warmPool!.pods.lastGc.at > added2);
      fake.deletePod('db', 'pg-1');
      fake.deletePod('web', 'web-2');
      await fake.close();
      const failed = before.warmPool!.pods.gcListFailures;
      const down = await until(agent, 'GC runs with the API server down', (s) => s.warmPool!.pods.gcListFailures >= failed + 12);
      assert.equal(down.warmPool!.pods.gcReleases, 2, 'nothing released while the API server is unreachable');
      assert.equal(down.warmPool!.pools.ipv4!.inUse, 2);
      assert.equal(down.warmPool!.pods.lastGc?.ok, false);
      assert.match(agent.log(), /pod GC: cannot list this node's pods; nothing released/);
      // Lookups fail too: the ADD still works (not sticky), with a log line and a metric.
      const r = await runPlugin(SHIM_BIN, call(socket, 'ADD', 'c3', 'db', 'pg-2', 'uid-x'));
      assert.equal(r.code, 0, `ADD with the API server down: ${r.stdout} ${r.stderr}`);
      const s = await agent.status();
      assert.ok(s.warmPool!.pods.lookupsFailed >= 1, JSON.stringify(s.warmPool!.pods));
      assert.match(agent.log(), /pod lookup failed; not sticky/);
      await del(socket, 'c3', 'db', 'pg-2');
      assert.equal((await agent.status()).warmPool!.stickyReservations, 0, 'the pod whose lookup failed was not sticky');
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      assert.match(metrics, /^podipam_agent_gc_releases 2$/m);
      assert.match(metrics, /^podipam_agent_gc_list_failures [1-9][0-9]*$/m);
      assert.match(metrics, /^podipam_agent_pod_lookups_failed [1-9][0-9]*$/m);
      assert.match(metrics, /^podipam_agent_sticky_hits 0$/m);
      const text = spawnSync(process.execPath, [PODIPAM_BIN, 'agent', 'status', '--socket', socket], { encoding: 'utf8', timeout: 20_000 });
      assert.match(text.stdout, /last pod GC \S+: list failed, nothing released/);
    } finally {
      await agent?.kill();
      await fake.close().catch(() => undefined);
      dir.remove();
    }
  },
);

test('podipam agent --config FILE: its options apply, flags win over it, a bad key or value is refused naming it', { timeout: 120_000 }, async () => {
  const { dir, url, socket } = setup('agent-config');
  let agent: RunningAgent | undefined;
  try {
    const file = join(dir.path, 'agent.json');
    writeFileSync(
      file,
      JSON.stringify({
        node: NODE,
        datastore: url,
        dataDir: join(dir.path, 'agent'),
        minIdle: 2,
        maxIdle: 4,
        capacity: 32,
        cooldown: '2s',
        stickyFor: '1h',
        stickyNamespaces: ['db'],
      }),
    );
    agent = await startAgent(socket, ['--config', file, '--max-idle', '6']);
    const s = await until(agent, 'warm pool ready', (x) => x.warmPool?.ready === true);
    assert.equal(s.node, NODE);
    assert.deepEqual(
      [s.warmPool!.minIdle, s.warmPool!.maxIdle, s.warmPool!.capacity, s.warmPool!.cooldownMs, s.warmPool!.stickyForMs],
      [2, 6, 32, 2000, 3_600_000],
    );
    // stickyNamespaces from the file: a pod of namespace db is sticky without a kubeconfig.
    const r = await runPlugin(SHIM_BIN, call(socket, 'ADD', 'c1', 'db', 'anything', 'u1'));
    assert.equal(r.code, 0, r.stdout);
    await del(socket, 'c1', 'db', 'anything');
    assert.equal((await agent.status()).warmPool!.stickyReservations, 1);
    await agent.stop();
    agent = undefined;

    const run = (doc: unknown, args: string[] = []): { code: number | null; stderr: string } => {
      writeFileSync(file, typeof doc === 'string' ? doc : JSON.stringify(doc));
      const p = spawnSync(process.execPath, [PODIPAM_BIN, 'agent', '--socket', socket, '--metrics-listen', 'off', '--config', file, ...args], {
        encoding: 'utf8',
        timeout: 20_000,
      });
      return { code: p.status, stderr: p.stderr };
    };
    const base = { datastore: url, dataDir: join(dir.path, 'agent') };
    const garbage = join(dir.path, 'garbage.yaml');
    writeFileSync(garbage, 'clusters: [\n');
    const cases: [unknown, string[], RegExp][] = [
      [{ ...base, minIdel: 2 }, [], /key "minIdel" 2: unknown key/],
      [{ ...base, minIdle: 'two' }, [], /key "minIdle" "two": must be a non-negative integer/],
      [{ ...base, cooldown: 'soon', minIdle: 1 }, [], /invalid cooldown \(config file .*agent\.json\) "soon"/],
      [{ ...base, minIdle: 8, maxIdle: 4 }, [], /invalid minIdle \(config file .*\) 8: must not exceed maxIdle \(config file .*\) \(4\)/],
      [{ ...base, minIdle: 1, stickyNamePattern: '(' }, [], /invalid stickyNamePattern \(config file .*\) "\(":/],
      [{ ...base, minIdle: 1, stickyNamespaces: ['Bad_NS'] }, [], /invalid stickyNamespaces \(config file .*\) "Bad_NS"/],
      [{ ...base, minIdle: 1, kubeconfig: join(dir.path, 'missing') }, [], /invalid kubeconfig \(config file .*\) ".*missing": no such file/],
      [{ ...base, minIdle: 1, kubeconfig: garbage }, [], /kubeconfig .*garbage\.yaml: cannot load it/],
      [{ ...base, minIdle: 8, maxIdle: 8 }, ['--max-idle', '4'], /invalid minIdle \(config file .*\) 8: must not exceed --max-idle \(4\)/],
      ['{"minIdle": 1,}', [], /config file .*agent\.json: not JSON/],
    ];
    for (const [doc, args, want] of cases) {
      const p = run(doc, args);
      assert.notEqual(p.code, 0, `${JSON.stringify(doc)} was accepted`);
      assert.match(p.stderr, want, JSON.stringify(doc));
    }
  } finally {
    await agent?.kill();
    dir.remove();
  }
});
