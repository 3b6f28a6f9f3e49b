/**
 * Randomized test of every path that frees an address, on one SQLite datastore file, through
 * the built binaries: cluster-mode pods (bin/podipam, per-pod process) on three nodes, warm-pool
 * pods through the shim into `podipam agent` on a fourth node, and the operator's and the
 * server's release paths in between, on a seeded random schedule:
 *   ADD / DEL of cluster and warm pods, node records created and deleted (`podipam node
 *   add|delete`), cluster GC passes (serve's GC with no grace period), agent restarts with its
 *   resource DB intact, truncated or deleted (SIGTERM or SIGKILL), a second agent started on
 *   the same data directory (it must be refused), and CNI GC of a cluster node's network
 *   keeping exactly its live pods.
 * After every step the invariant: no address held by a live pod is held by another live pod,
 * missing from the datastore (its block must give it to that pod's handle, or to a warm handle
 * of the agent's node), or idle in the agent's resource DB; and `ipam check` reports no leak of
 * a live address. Pods of a node whose record was deleted are no longer live (the deletion is
 * the proof that they are gone); their addresses may be freed by GC. At the end every pod (live
 * or not) gets its DEL, and `podipam ipam check` is clean and no pod handle is left.
 *
 * RELEASE_SEED=<n> replays a schedule, RELEASE_STEPS=<n> changes its length (default 40),
 * RELEASE_WITHOUT=<step>,… leaves kinds of step out (to narrow a failure down); a failure prints
 * the seed and the steps so far.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync, truncateSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import { type RunningAgent, SHIM_BIN, requireShim, startAgent } from '../helpers/agent.js';
import { PODIPAM_BIN, clusterCall, runCliSync, runPlugin, type PluginCall } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';
import { mulberry32 } from '../../src/util/mulberry32.js';
import { openStore, type Store } from '../../src/store/index.js';
import { ClusterIpam } from '../../src/cluster/service/cluster-ipam.js';
import { ClusterGc } from '../../src/server/gc/cluster-gc.js';
import { silentLog } from '../../src/log/logger.js';
import { spawn } from 'node:child_process';

const require = createRequire(import.meta.url);
type Db = { prepare(sql: string): { all(): unknown[] }; close(): void };
const Sqlite = require('better-sqlite3') as new (path: string, o?: { readonly?: boolean; fileMustExist?: boolean }) => Db;

const CLUSTER_NODES = ['rn-a', 'rn-b', 'rn-c'] as const;
const WARM_NODE = 'rn-w';
const NETWORK = 'rnet';
const WARM_NETWORK_NAME = 'warm-net';

interface Pod {
  readonly id: string;
  readonly kind: 'cluster' | 'warm';
  readonly node: string;
  readonly addrs: readonly string[];
}

test('release paths, randomized: no live address is ever held twice, lost, or idle; ipam check agrees', { timeout: 600_000 }, async (t) => {
  requireShim();
  const seed = process.env.RELEASE_SEED === undefined ? (Date.now() ^ (Math.random() * 2 ** 31)) >>> 0 : Number(process.env.RELEASE_SEED);
  const steps = Number(process.env.RELEASE_STEPS ?? 40);
  t.diagnostic(`seed ${seed} (replay: RELEASE_SEED=${seed} node scripts/test.mjs release-paths-random)`);
  const rand = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const trace: string[] = [];

  const dir = makeTempDir('release-random');
  const url = `sqlite:${join(dir.path, 'ds.db')}`;
  const cacheDir = join(dir.path, 'hints');
  const dataDir = join(dir.path, 'agent');
  const socket = join(dir.path, 'run', 'agent.sock');
  const agentArgs = [
    '--node',
    WARM_NODE,
    '--datastore',
    url,
    '--data-dir',
    dataDir,
    '--min-idle',
    '2',
    '--max-idle',
    '4',
    '--capacity',
    '64',
    '--cooldown',
    '0s',
  ];
  let agent: RunningAgent | undefined;
  let store: Store | undefined;

  const live = new Map<string, Pod>();
  /** Pods whose node record was deleted: not live, still to get their DEL at the end. */
  const orphaned = new Map<string, Pod>();
  const registered = new Set<string>();
  let nextPod = 0;

  const warmCall = (command: string, id: string): PluginCall => ({
    command,
    containerId: id,
    ifname: 'eth0',
    config: { cniVersion: '1.0.0', name: WARM_NETWORK_NAME, ipam: { type: 'podipam', agent: socket } },
    env: { PODIPAM_PLUGIN: '' },
  });
  const addrsOf = (stdout: string): string[] => (JSON.parse(stdout) as { ips: { address: string }[] }).ips.map((x) => x.address.split('/')[0]!);
  const cli = (args: readonly string[]): string => {
    const r = runCliSync(url, args);
    assert.equal(r.code, 0, `podipam ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };

  const waitWarmReady = async (a: RunningAgent): Promise<void> => {
    for (let i = 0; ; i++) {
      const s = await a.status();
      if (s.warmPool?.ready) return;
      assert.ok(i < 400, `warm pool not ready: ${JSON.stringify(s.warmPool)}\n${a.log()}`);
      await sleep(25);
    }
  };

  /** The invariant; see the module comment. */
  const checkInvariant = async (): Promise<void> => {
    const owner = new Map<string, string>();
    for (const p of live.values()) {
      for (const a of p.addrs) {
        const other = owner.get(a);
        assert.equal(other, undefined, `${a} is held by two live pods: ${other} and ${p.id}`);
        owner.set(a, p.id);
      }
    }
    const ipam = new ClusterIpam(store!);
    const held = new Map<string, string>();
    let cursor: string | undefined;
    for (let page = 0; page < 1000; page++) {
      const r = await ipam.listAllocations({ limit: 500, ...(cursor ? { after: cursor } : {}) });
      for (const a of r.items) held.set(a.ip, a.handle);
      cursor = r.next;
      if (!cursor) break;
    }
    for (const p of live.values()) {
      for (const a of p.addrs) {
        const h = held.get(a);
        assert.ok(h !== undefined, `live pod ${p.id} on ${p.node} holds ${a}, which the datastore holds for nobody`);
        if (p.kind === 'cluster') assert.ok(h.includes(p.id), `live pod ${p.id} holds ${a}, the datastore gives it to handle "${h}"`);
        else assert.ok(h.startsWith(`podipam-warm:${WARM_NODE}:`), `live warm pod ${p.id} holds ${a}, the datastore gives it to handle "${h}"`);
      }
    }
    // The agent's resource DB: a live warm pod's address is named by a pod row, never idle.
    const dbPath = join(dataDir, 'resources.db');
    if (agent && existsSync(dbPath)) {
      const db = new Sqlite(dbPath, { readonly: true, fileMustExist: true });
      try {
        const podAddrs = new Set(
          (db.prepare('SELECT addrs FROM pods').all() as { addrs: string }[]).flatMap((r) => (JSON.parse(r.addrs) as string[]).map((x) => x.split('/')[0]!)),
        );
        const heldRows = (db.prepare('SELECT addr FROM held').all() as { addr: string }[]).map((r) => r.addr.split('/')[0]!);
        const idle = new Set(heldRows.filter((a) => !podAddrs.has(a)));
        for (const p of live.values()) {
          if (p.kind !== 'warm') continue;
          for (const a of p.addrs) assert.ok(!idle.has(a), `live warm pod ${p.id} holds ${a}, which the agent's resource DB lists as idle`);
        }
      } finally {
        db.close();
      }
    }
    const report = await ipam.check();
    for (const l of report.leaks) assert.ok(!owner.has(l.ip), `ipam check calls ${l.ip} of live pod ${owner.get(l.ip)} a leak`);
  };

  const stepsOf: Record<string, () => Promise<string | undefined>> = {
    async addCluster() {
      const node = pick(CLUSTER_NODES);
      const id = `rc${nextPod++}`;
      const r = await runPlugin(PODIPAM_BIN, clusterCall(NETWORK, url, cacheDir, 'ADD', id, node));
      assert.equal(r.code, 0, `cluster ADD ${id} on ${node}: ${r.stdout} ${r.stderr}`);
      live.set(id, { id, kind: 'cluster', node, addrs: addrsOf(r.stdout) });
      return `ADD ${id} on ${node} → ${live.get(id)!.addrs.join(',')}`;
    },
    async delCluster() {
      const pods = [...live.values()].filter((p) => p.kind === 'cluster');
      if (pods.length === 0) return undefined;
      const p = pick(pods);
      const r = await runPlugin(PODIPAM_BIN, clusterCall(NETWORK, url, cacheDir, 'DEL', p.id, p.node));
      assert.equal(r.code, 0, `cluster DEL ${p.id}: ${r.stdout} ${r.stderr}`);
      live.delete(p.id);
      return `DEL ${p.id} (${p.addrs.join(',')})`;
    },
    async addWarm() {
      if (!agent) return undefined;
      const id = `rw${nextPod++}`;
      const r = await runPlugin(SHIM_BIN, warmCall('ADD', id));
      assert.equal(r.code, 0, `warm ADD ${id}: ${r.stdout} ${r.stderr}\n${agent.log()}`);
      live.set(id, { id, kind: 'warm', node: WARM_NODE, addrs: addrsOf(r.stdout) });
      return `warm ADD ${id} → ${live.get(id)!.addrs.join(',')}`;
    },
    async delWarm() {
      const pods = [...live.values()].filter((p) => p.kind === 'warm');
      if (!agent || pods.length === 0) return undefined;
      const p = pick(pods);
      const r = await runPlugin(SHIM_BIN, warmCall('DEL', p.id));
      assert.equal(r.code, 0, `warm DEL ${p.id}: ${r.stdout} ${r.stderr}`);
      live.delete(p.id);
      return `warm DEL ${p.id} (${p.addrs.join(',')})`;
    },
    async nodeAdd() {
      const free = CLUSTER_NODES.filter((n) => !registered.has(n));
      if (free.length === 0) return undefined;
      const n = pick(free);
      cli(['node', 'add', n]);
      registered.add(n);
      return `node add ${n}`;
    },
    async nodeDelete() {
      if (registered.size === 0) return undefined;
      const n = pick([...registered]);
      cli(['node', 'delete', n]);
      registered.delete(n);
      // The node record existed and was deleted: proof that its pods are gone.
      for (const p of [...live.values()]) {
        if (p.node === n) {
          live.delete(p.id);
          orphaned.set(p.id, p);
        }
      }
      return `node delete ${n}`;
    },
    async clusterGc() {
      const gc = new ClusterGc({ ipam: new ClusterIpam(store!), graceMs: 0, log: silentLog });
      const r = await gc.runOnce();
      return `cluster GC: ${JSON.stringify(r)}`;
    },
    async cniGc() {
      // The runtime's GC of one cluster node's network: every attachment it still runs is listed.
      const node = pick(CLUSTER_NODES);
      const keep = [...live.values()].filter((p) => p.kind === 'cluster' && p.node === node).map((p) => ({ containerID: p.id, ifname: 'eth0' }));
      const call = clusterCall(NETWORK, url, cacheDir, 'GC', '', node);
      const conf = { ...(call.config as object), cniVersion: '1.1.0', 'cni.dev/valid-attachments': keep };
      const r = await runPlugin(PODIPAM_BIN, { ...call, containerId: undefined, ifname: undefined, config: conf });
      assert.equal(r.code, 0, `CNI GC on ${node}: ${r.stdout} ${r.stderr}`);
      return `CNI GC ${node} keeping ${keep.length}`;
    },
    async restartAgent() {
      const mode = pick(['intact', 'truncated', 'deleted'] as const);
      const how = pick(['SIGTERM', 'SIGKILL'] as const);
      if (agent) {
        if (how === 'SIGTERM') await agent.stop();
        else await agent.kill();
      }
      const db = join(dataDir, 'resources.db');
      if (mode === 'truncated' && existsSync(db)) {
        truncateSync(db, 0);
        for (const f of [`${db}-wal`, `${db}-shm`]) rmSync(f, { force: true });
      } else if (mode === 'deleted') {
        for (const f of [db, `${db}-wal`, `${db}-shm`]) rmSync(f, { force: true });
      }
      agent = await startAgent(socket, agentArgs);
      await waitWarmReady(agent);
      return `agent ${how}, resource DB ${mode}, restarted`;
    },
    async secondAgent() {
      if (!agent) return undefined;
      // Another agent on the same data directory (own socket): it must be refused.
      const child = spawn(
        process.execPath,
        [PODIPAM_BIN, 'agent', '--socket', join(dir.path, 'run', 'second.sock'), '--metrics-listen', 'off', '--no-masquerade', ...agentArgs],
        {
          env: { PATH: process.env.PATH },
          stdio: ['ignore', 'ignore', 'pipe'],
        },
      );
      let err = '';
      child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
      const exited = new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
      const code = await Promise.race([exited, sleep(20_000).then(() => 'running' as const)]);
      if (code === 'running') child.kill('SIGKILL');
      assert.notEqual(code, 'running', 'a second agent on the same data directory was not refused (still running after 20 s)');
      assert.notEqual(code, 0, `a second agent on the same data directory exited 0: ${err}`);
      assert.match(err, /resources\.db|data dir|lock/i, `the refusal names what is held: ${err}`);
      return 'second agent on the data dir refused';
    },
  };
  const without = new Set((process.env.RELEASE_WITHOUT ?? '').split(',').filter((x) => x !== ''));
  const weights = (
    [
      ['addCluster', 6],
      ['delCluster', 4],
      ['addWarm', 6],
      ['delWarm', 4],
      ['nodeAdd', 2],
      ['nodeDelete', 2],
      ['clusterGc', 3],
      ['cniGc', 2],
      ['restartAgent', 2],
      ['secondAgent', 1],
    ] as [string, number][]
  ).filter(([name]) => !without.has(name));
  const total = weights.reduce((s, [, w]) => s + w, 0);
  const choose = (): string => {
    let x = rand() * total;
    for (const [name, w] of weights) if ((x -= w) < 0) return name;
    return weights[0]![0];
  };

  try {
    cli(['pool', 'create', 'r4', '--cidr', '10.231.0.0/22', '--block-size', '28']);
    store = await openStore(url);
    // One node record up front, as a newcomer's `podipam node add` or `simulate` leaves one.
    cli(['node', 'add', 'rn-a']);
    registered.add('rn-a');
    agent = await startAgent(socket, agentArgs);
    await waitWarmReady(agent);
    for (let i = 0; i < steps; i++) {
      const name = choose();
      const did = await stepsOf[name]!();
      if (did === undefined) continue;
      trace.push(`${i}: ${did}`);
      await checkInvariant();
    }
    // The end: every pod gets its DEL (the orphans too: DEL is idempotent), then nothing is held.
    for (const p of [...live.values(), ...orphaned.values()]) {
      const r =
        p.kind === 'cluster'
          ? await runPlugin(PODIPAM_BIN, clusterCall(NETWORK, url, cacheDir, 'DEL', p.id, p.node))
          : await runPlugin(SHIM_BIN, warmCall('DEL', p.id));
      assert.equal(r.code, 0, `final DEL ${p.id}: ${r.stdout} ${r.stderr}`);
      live.delete(p.id);
    }
    trace.push('final DEL of every pod');
    // Blocks of nodes that never had a record are reported (and left alone); so are blocks of
    // nodes whose record was deleted since the last GC pass (GC's work, still to do). Nothing else.
    const checkNow = (): { leaks: unknown[]; problems: { kind: string; message: string }[] } => {
      const check = runCliSync(url, ['ipam', 'check', '--json']);
      assert.ok(check.code === 0 || check.code === 1, `ipam check after the final DELs: ${check.stdout} ${check.stderr}`);
      return JSON.parse(check.stdout) as { leaks: unknown[]; problems: { kind: string; message: string }[] };
    };
    const deletedNodeOf = (p: { kind: string; message: string }): string | undefined =>
      p.kind === 'block-node-deleted' ? /affine to node "([^"]+)"/.exec(p.message)?.[1] : undefined;
    const report = checkNow();
    assert.deepEqual(report.leaks, [], 'no leak after the final DELs');
    const unexpected = report.problems.filter((p) => {
      if (/unregistered|no record/.test(p.kind)) return false;
      const n = deletedNodeOf(p);
      return n === undefined || registered.has(n);
    });
    assert.deepEqual(unexpected, [], 'no problem but blocks of nodes without a record, or of nodes deleted since the last GC');
    // One GC pass does the work those findings announce: afterwards no block of a deleted node is left.
    trace.push(`final cluster GC: ${await stepsOf.clusterGc!()}`);
    const after = checkNow();
    assert.deepEqual(after.leaks, [], 'no leak after the final GC');
    assert.deepEqual(
      after.problems.filter((p) => !/unregistered|no record/.test(p.kind)),
      [],
      'after the final GC, no problem but blocks of nodes without a record',
    );
    const ipam = new ClusterIpam(store);
    const left = (await ipam.listAllocations({ limit: 5000 })).items.filter((a) => !a.handle.startsWith('podipam-warm:'));
    assert.deepEqual(
      left.map((a) => `${a.ip} ${a.handle}`),
      [],
      'no pod handle is left after every DEL',
    );
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    throw new Error(`${msg}\nseed ${seed} (RELEASE_SEED=${seed} node scripts/test.mjs release-paths-random); steps:\n  ${trace.join('\n  ')}`, { cause: e });
  } finally {
    await agent?.kill();
    await store?.close();
    dir.remove();
  }
});
