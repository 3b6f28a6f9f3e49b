/**
 * Release paths where the evidence is missing or ambiguous (SECURITY.md, "Release paths: the
 * evidence each requires"), through the real `podipam agent` (warm pool, SQLite datastore, the
 * native shim as the CNI client, the Kubernetes API test double):
 * - the pod GC: a pod missing from this node's pod list is not proof it is gone — a list that
 *   misses it (the agent's node name is not the Kubernetes node's, a stale or partial answer)
 *   frees nothing; the pod's own get answering 404, or another uid under its name, does.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { type RunningAgent, requireShim, startAgent } from '../helpers/agent.js';
import { addPod, untilStatus } from '../helpers/agent-pods.js';
import { type FakeKubeApiServer, startFakeKubeApiServer } from '../helpers/fake-kube-apiserver.js';
import { PODIPAM_BIN, clusterCall, runCliSync, runPluginSync } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';
import { api, runCli, startServe } from './serve-harness.js';

/** The agent's node name … */
const NODE = 'evnode';
/** … and the one Kubernetes has for that host (an FQDN: the agent was started without --node matching it). */
const KUBE_NODE = 'evnode.cluster.example';

const add = (fake: FakeKubeApiServer, socket: string, containerId: string, namespace: string, name: string) =>
  addPod(fake, socket, 'ev-net', containerId, namespace, name);
const until = untilStatus;

test(
  "pod GC: a pod missing from the node's pod list (node name not the Kubernetes one) is not released while the API server still has it; its 404 or a new uid under its name releases it",
  { timeout: 240_000 },
  async () => {
    requireShim();
    const dir = makeTempDir('release-evidence-podgc');
    const url = `sqlite:${join(dir.path, 'ds.db')}`;
    assert.equal(runCliSync(url, ['pool', 'create', 'e4', '--cidr', '10.214.0.0/16']).code, 0);
    const socket = join(dir.path, 'run', 'agent.sock');
    const kubeconfig = join(dir.path, 'kubeconfig');
    const fake = await startFakeKubeApiServer();
    let agent: RunningAgent | undefined;
    try {
      fake.writeKubeconfig(kubeconfig);
      agent = await startAgent(socket, [
        '--node',
        NODE,
        '--datastore',
        url,
        '--data-dir',
        join(dir.path, 'agent'),
        '--min-idle',
        '4',
        '--max-idle',
        '8',
        '--capacity',
        '64',
        '--cooldown',
        '1s',
        '--sticky-for',
        '0',
        '--kubeconfig',
        kubeconfig,
        '--gc-interval',
        '300ms',
      ]);
      await until(agent, 'warm pool preloaded', (s) => (s.warmPool?.pools.ipv4?.idle ?? 0) >= 4);
      fake.addPod('web', 'a', { node: KUBE_NODE, ownerKind: 'ReplicaSet' });
      fake.addPod('web', 'b', { node: KUBE_NODE, ownerKind: 'ReplicaSet' });
      await add(fake, socket, 'ca', 'web', 'a');
      await add(fake, socket, 'cb', 'web', 'b');
      // Several GC runs whose list (spec.nodeName=evnode) is empty: both pods look gone.
      const added = Date.now();
      const first = await until(agent, 'a GC run after the ADDs', (s) => s.warmPool!.pods.lastGc?.ok === true && s.warmPool!.pods.lastGc.at > added);
      const runs = first.warmPool!.pods.gcRuns;
      const later = await until(agent, 'three more GC runs', (s) => s.warmPool!.pods.gcRuns >= runs + 3 && s.warmPool!.pods.lastGc?.ok === true);
      assert.equal(later.warmPool!.pods.lastGc!.listed, 0, 'the list misses both pods');
      assert.equal(later.warmPool!.pods.gcReleases, 0, `live pods released on their absence from a list:\n${agent.log()}`);
      assert.equal(later.warmPool!.pools.ipv4!.inUse, 2);
      assert.match(agent.log(), /pod GC: .*kept/);

      // Pod a is deleted from the API server (no CNI DEL): its get answers 404, which is proof.
      fake.deletePod('web', 'a');
      await until(agent, 'pod a released', (s) => s.warmPool!.pods.gcReleases === 1 && s.warmPool!.pools.ipv4!.inUse === 1);
      // Pod b is replaced by a pod of its name with another uid (elsewhere): b's pod is gone.
      fake.deletePod('web', 'b');
      fake.addPod('web', 'b', { node: 'other-node', ownerKind: 'ReplicaSet' });
      const done = await until(agent, 'pod b released', (s) => s.warmPool!.pods.gcReleases === 2 && s.warmPool!.pools.ipv4!.inUse === 0);
      assert.equal(done.warmPool!.pods.gcReleases, 2);
      const check = runCliSync(url, ['ipam', 'check', '--json']);
      assert.deepEqual(JSON.parse(check.stdout), { leaks: [], problems: [] });
    } finally {
      await agent?.kill();
      await fake.close();
      dir.remove();
    }
  },
);

test('simulate --cleanup deletes only the nodes it created: a node record that existed before (its pods running) stays', { timeout: 120_000 }, async () => {
  const s = await startServe();
  try {
    assert.equal((await api(s.url, 'POST', '/api/v1/pools', { name: 'p4', cidr: '10.215.0.0/16' })).status, 201);
    // A real node whose name the simulation's node names happen to include, with a running pod.
    assert.equal((await api(s.url, 'POST', '/api/v1/nodes', { name: 'sim-1' })).status, 201);
    const pod = await api(s.url, 'POST', '/api/v1/allocations', { node: 'sim-1', containerId: 'realpod', network: 'prod' });
    assert.equal(pod.status, 201, JSON.stringify(pod.body));
    const sim = await runCli(['simulate', '--server', s.dashboardUrl, '--nodes', '2', '--pods', '4', '--cleanup', '--json']);
    assert.equal(sim.code, 0, sim.stdout + sim.stderr);
    // The node list shows nodes with blocks too; `registered` says whether the record exists.
    const nodes = (await api(s.url, 'GET', '/api/v1/nodes')).body as { items: { name: string; registered: boolean }[] };
    const registered = (n: string): boolean | undefined => nodes.items.find((x) => x.name === n)?.registered;
    assert.equal(registered('sim-1'), true, `cleanup deleted the node record it did not create: ${JSON.stringify(nodes)}`);
    assert.notEqual(registered('sim-2'), true, `the node record it created is deleted: ${JSON.stringify(nodes)}`);
    const held = await api(s.url, 'GET', '/api/v1/allocations?handle=prod:realpod:eth0');
    assert.ok(JSON.stringify(held.body).includes(pod.body.ips[0]), JSON.stringify(held.body));
  } finally {
    await s.stop();
  }
});

test("CNI GC without the runtime's valid-attachments list (or with a malformed one) is refused, code 7, and frees nothing; a cluster GC spares other nodes and networks", () => {
  const dir = makeTempDir('release-evidence-gc');
  try {
    const db = `sqlite:${join(dir.path, 'ds.db')}`;
    const cache = join(dir.path, 'cache');
    assert.equal(runCliSync(db, ['pool', 'create', 'g4', '--cidr', '10.216.0.0/24', '--block-size', '28']).code, 0);
    const local = { cniVersion: '1.1.0', name: 'gcnet', ipam: { type: 'podipam', ranges: [[{ subnet: '10.217.0.0/24' }]], dataDir: join(dir.path, 'local') } };
    const ok = (r: { code: number | null; stdout: string; stderr: string }, what: string): void => assert.equal(r.code, 0, `${what}: ${r.stdout}${r.stderr}`);
    ok(runPluginSync(PODIPAM_BIN, { command: 'ADD', containerId: 'l1', ifname: 'eth0', config: local }), 'local ADD');
    ok(runPluginSync(PODIPAM_BIN, clusterCall('gcnet', db, cache, 'ADD', 'c1', 'gc-a')), 'cluster ADD on gc-a');
    ok(runPluginSync(PODIPAM_BIN, clusterCall('gcnet', db, cache, 'ADD', 'c2', 'gc-b')), 'cluster ADD on gc-b');
    ok(runPluginSync(PODIPAM_BIN, clusterCall('other', db, cache, 'ADD', 'c3', 'gc-a')), 'cluster ADD of another network on gc-a');
    const cluster = (extra: Record<string, unknown>) => ({
      command: 'GC',
      config: { cniVersion: '1.1.0', name: 'gcnet', ipam: { type: 'podipam', datastore: db, nodeName: 'gc-a', cacheDir: cache }, ...extra },
    });
    for (const [what, extra] of [
      ['no list', {}],
      ['a list that is not an array', { 'cni.dev/valid-attachments': {} }],
      ['an entry without ifname', { 'cni.dev/valid-attachments': [{ containerID: 'x' }] }],
    ] as const) {
      for (const [backend, call] of [
        ['local', { command: 'GC', config: { ...local, ...extra } }],
        ['cluster', cluster(extra)],
      ] as const) {
        const r = runPluginSync(PODIPAM_BIN, call);
        assert.equal(r.code, 1, `${backend} GC with ${what}: ${r.stdout}${r.stderr}`);
        assert.equal((JSON.parse(r.stdout) as { code: number }).code, 7, `${backend} GC with ${what}: ${r.stdout}`);
      }
    }
    ok(runPluginSync(PODIPAM_BIN, { command: 'CHECK', containerId: 'l1', ifname: 'eth0', config: local }), 'the local pod still holds its address');
    for (const [id, node, net] of [
      ['c1', 'gc-a', 'gcnet'],
      ['c2', 'gc-b', 'gcnet'],
      ['c3', 'gc-a', 'other'],
    ] as const) {
      ok(runPluginSync(PODIPAM_BIN, clusterCall(net, db, cache, 'CHECK', id, node)), `${net}/${id} on ${node} still holds its address`);
    }
    // A valid GC of gc-a's gcnet with nothing valid frees c1 only.
    ok(runPluginSync(PODIPAM_BIN, cluster({ 'cni.dev/valid-attachments': [] })), 'cluster GC, nothing valid');
    assert.equal((JSON.parse(runPluginSync(PODIPAM_BIN, clusterCall('gcnet', db, cache, 'CHECK', 'c1', 'gc-a')).stdout) as { code: number }).code, 102);
    ok(runPluginSync(PODIPAM_BIN, clusterCall('gcnet', db, cache, 'CHECK', 'c2', 'gc-b')), "another node's pod of that network is spared");
    ok(runPluginSync(PODIPAM_BIN, clusterCall('other', db, cache, 'CHECK', 'c3', 'gc-a')), "this node's pod of another network is spared");
  } finally {
    dir.remove();
  }
});

test('uninstall-cni frees no address: a pod added through the installed config keeps its reservation', () => {
  const root = makeTempDir('release-evidence-uninstall');
  try {
    const binDir = join(root.path, 'bin');
    const confDir = join(root.path, 'net.d');
    const networks = join(root.path, 'networks');
    const inst = spawnSync(
      PODIPAM_BIN,
      [
        'install-cni',
        '--bin-dir',
        binDir,
        '--conf-dir',
        confDir,
        '--backend',
        'local',
        '--subnet',
        '10.218.0.0/24',
        '--host-local-dir',
        networks,
        '--name',
        'keepnet',
        '--no-ip-masq',
      ],
      { encoding: 'utf8', timeout: 30_000 },
    );
    assert.equal(inst.status, 0, inst.stdout + inst.stderr);
    const file = readdirSync(confDir).find((f) => f.endsWith('.conflist'))!;
    const list = JSON.parse(readFileSync(join(confDir, file), 'utf8')) as { cniVersion: string; name: string; plugins: { ipam: unknown }[] };
    const conf = { cniVersion: list.cniVersion, name: list.name, ipam: list.plugins[0]!.ipam };
    const add = runPluginSync(PODIPAM_BIN, { command: 'ADD', containerId: 'live1', ifname: 'eth0', config: conf });
    assert.equal(add.code, 0, add.stdout + add.stderr);
    const ip = (JSON.parse(add.stdout) as { ips: { address: string }[] }).ips[0]!.address.split('/')[0]!;
    const un = spawnSync(PODIPAM_BIN, ['uninstall-cni', '--bin-dir', binDir, '--conf-dir', confDir], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(un.status, 0, un.stdout + un.stderr);
    assert.ok(readdirSync(join(networks, 'keepnet')).includes(ip), `the reservation of ${ip} is gone`);
    const check = runPluginSync(PODIPAM_BIN, { command: 'CHECK', containerId: 'live1', ifname: 'eth0', config: conf });
    assert.equal(check.code, 0, check.stdout + check.stderr);
  } finally {
    root.remove();
  }
});
