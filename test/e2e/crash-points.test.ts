/**
 * Every crash point (src/util/crash-point.ts) on every back end it belongs to (etcd: see below): the process —
 * bin/podipam as the CNI plugin, the CLI, the controller, or the agent behind the native shim —
 * is SIGKILLed by the hook at that exact step (proven by its signal and the hook's own line),
 * then the interrupted operation is retried as a runtime would (the cluster and agent back ends:
 * the same call again; the local back end, whose repeated ADD is refused as host-local's is: DEL
 * then ADD), and the invariants are checked:
 *
 * - no address held twice (local: one file per address, one address per attachment and family;
 *   cluster: every block allocation unique across blocks, every pod's result distinct);
 * - every held address reachable from its handle (local: every address file names a live
 *   attachment; cluster: each block allocation's handle exists and lists it, and the datastore
 *   allocates exactly the live pods' addresses; agent: exactly what the agent's pools account for);
 * - DEL of everything → zero allocated (local: only `lock` and `last_reserved_ip.*` left) and
 *   `podipam ipam check` clean.
 *
 * Cases on SQLite and in temp dirs run concurrently; the etcd cases share one etcd member and
 * run one after another, the store wiped between them. SQLite runs every cluster and agent case;
 * etcd the one only it reaches and a seeded sample of the rest (PODIPAM_CRASH_ALL=1: every one). The last test proves every listed point
 * was reached.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type RunningAgent, SHIM_BIN, requireShim, startAgent } from '../helpers/agent.js';
import { crashEnv, expectCrash, reached, startArmedAgent, wipeStore } from '../helpers/crash-points.js';
import { type EtcdCluster, startEtcd } from '../helpers/etcd.js';
import { startSlowProxy } from '../helpers/slow-proxy.js';
import { PODIPAM_BIN, type PluginCall, type PluginRun, runPlugin } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';
import { CRASH_POINT_NAMES, type CrashPointName } from '../../src/util/crash-point.js';
import { openStore } from '../../src/store/index.js';
import { ClusterIpam } from '../../src/cluster/index.js';
import { cniHandleId } from '../../src/model/handle-id.js';
import { BLOCK_PREFIX, HANDLE_PREFIX } from '../../src/cluster/records/keys.js';
import { decodeBlock } from '../../src/cluster/records/block-record.js';
import { decodeHandle } from '../../src/cluster/records/handle-record.js';
import { addrOfOrdinal } from '../../src/alloc/block.js';
import { formatAddr, formatPrefix, parseAddr } from '../../src/ip/index.js';
import { spawn } from 'node:child_process';
import { mulberry32 } from '../../src/util/mulberry32.js';

/** Runs bin/podipam with arguments (CLI, controller), asynchronously. */
function podipam(args: readonly string[], env: Record<string, string> = {}): Promise<PluginRun> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, [PODIPAM_BIN, ...args], { env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ stdout, stderr, code, signal, ms: performance.now() - t0 });
    });
  });
}

/**
 * The test's own datastore client, which only observes and wipes: a request may wait 30 s (the
 * default 2 s is the plugin's answer-quickly bound, not the observer's; at load ~30 a lone etcd
 * member has taken longer than 2 s to answer the test's list).
 */
const OBSERVER = { timeoutMs: 30_000 };

const ips = (r: PluginRun): string[] => (JSON.parse(r.stdout) as { ips: { address: string }[] }).ips.map((i) => i.address.split('/')[0]!);

function ok(r: PluginRun, what: string): PluginRun {
  assert.equal(r.code, 0, `${what}: exit ${r.code} ${r.signal ?? ''}\n${r.stdout}\n${r.stderr}`);
  return r;
}

async function checkClean(url: string, what: string): Promise<void> {
  const r = ok(await podipam(['--datastore', url, 'ipam', 'check', '--json']), `${what}: ipam check`);
  const j = JSON.parse(r.stdout) as { leaks: unknown; problems: unknown };
  // Sticky holds (stickyHolds) are informational, not findings.
  assert.deepEqual({ leaks: j.leaks, problems: j.problems }, { leaks: [], problems: [] }, `${what}: ipam check`);
}

test('bin/podipam refuses to run with PODIPAM_CRASH_AT or PODIPAM_PLANT_BUG set but no PODIPAM_TEST_HOOKS=1, or naming no known point or bug: CNI code 4, CLI exit 4', async () => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ PODIPAM_CRASH_AT: 'local.lock.held' }, /PODIPAM_CRASH_AT/],
    [{ PODIPAM_CRASH_AT: 'local.lock.hold', PODIPAM_TEST_HOOKS: '1' }, /PODIPAM_CRASH_AT/],
    [{ PODIPAM_PLANT_BUG: 'assign-skips-block-cas' }, /PODIPAM_PLANT_BUG/],
    [{ PODIPAM_PLANT_BUG: 'assign-skips', PODIPAM_TEST_HOOKS: '1' }, /PODIPAM_PLANT_BUG/],
  ];
  for (const [env, named] of cases) {
    const r = await runPlugin(PODIPAM_BIN, { command: 'VERSION', env });
    assert.equal(r.code, 4, r.stdout + r.stderr);
    assert.equal((JSON.parse(r.stdout) as { code: number }).code, 4);
    assert.match(r.stdout, named);
    const c = await podipam(['version'], env);
    assert.equal(c.code, 4, c.stderr);
    assert.match(c.stderr, named);
  }
});

// ---- local --------------------------------------------------------------------------------------

const LOCAL_CASES: readonly [spec: string, op: 'ADD' | 'DEL' | 'GC'][] = [
  ['local.lock.held', 'ADD'],
  ['local.add.tmp-written', 'ADD'],
  ['local.add.reserved', 'ADD'],
  ['local.add.recorded', 'ADD'],
  ['local.add.reserved@2', 'ADD'],
  ['local.add.before-answer', 'ADD'],
  ['local.lock.held', 'DEL'],
  ['local.del.removed', 'DEL'],
  ['local.gc.removed', 'GC'],
];

function localCall(dataDir: string, command: string, id: string, extra: Record<string, unknown> = {}, env: Record<string, string> = {}): PluginCall {
  return {
    command,
    containerId: id,
    ifname: 'eth0',
    env,
    config: {
      cniVersion: '1.1.0',
      name: 'crash',
      ipam: { type: 'podipam', dataDir, ranges: [[{ subnet: '10.31.0.0/28' }], [{ subnet: 'fd31::/124' }]] },
      ...extra,
    },
  };
}

/** The address files of a local network directory: address → attachment ("id\r\neth0"). */
function localFiles(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const n of readdirSync(dir)) if (n !== 'lock' && !n.startsWith('last_reserved_ip.')) out.set(n, readFileSync(join(dir, n), 'utf8'));
  return out;
}

async function localCase(spec: string, op: 'ADD' | 'DEL' | 'GC'): Promise<void> {
  const tmp = makeTempDir('crash-local');
  try {
    const dataDir = tmp.path;
    const netDir = join(dataDir, 'crash');
    const got = new Map<string, string[]>();
    for (const id of ['pod-a', 'pod-b']) got.set(id, ips(ok(await runPlugin(PODIPAM_BIN, localCall(dataDir, 'ADD', id)), `ADD ${id}`)));
    const live = new Set(got.keys());
    const victim = op === 'ADD' ? 'victim' : 'pod-a';
    const gcValid = { 'cni.dev/valid-attachments': [{ containerID: 'pod-b', ifname: 'eth0' }] };
    const run = (env: Record<string, string>) =>
      runPlugin(PODIPAM_BIN, op === 'GC' ? { ...localCall(dataDir, 'GC', '', gcValid, env), containerId: undefined } : localCall(dataDir, op, victim, {}, env));
    expectCrash(await run(crashEnv(spec)), spec, `local ${op} ${victim}`);
    // Retried as a runtime does: a failed ADD is followed by DEL, then ADD again.
    if (op === 'ADD') {
      ok(await runPlugin(PODIPAM_BIN, localCall(dataDir, 'DEL', victim)), 'DEL after the crashed ADD');
      got.set(victim, ips(ok(await run({}), 'ADD retried')));
      live.add(victim);
    } else {
      ok(await run({}), `${op} retried`);
      live.delete('pod-a');
    }
    const files = localFiles(netDir);
    assert.ok(!files.has('.podipam-reserve.tmp'), 'the temporary file of the killed writer is gone');
    // Exactly the live attachments' addresses are held, each by its attachment.
    const want = new Map([...live].flatMap((id) => got.get(id)!.map((a) => [a, `${id}\r\neth0`] as const)));
    assert.deepEqual(new Map([...files].sort()), new Map([...want].sort()), `after ${spec} (${op}): files vs live attachments`);
    for (const id of live) {
      const prevResult = { cniVersion: '1.1.0', ips: got.get(id)!.map((a) => ({ address: `${a}/${a.includes(':') ? 124 : 28}` })) };
      ok(await runPlugin(PODIPAM_BIN, localCall(dataDir, 'CHECK', id, { prevResult })), `CHECK ${id}`);
    }
    for (const id of ['pod-a', 'pod-b', 'victim']) ok(await runPlugin(PODIPAM_BIN, localCall(dataDir, 'DEL', id)), `DEL ${id}`);
    assert.deepEqual(readdirSync(netDir).sort(), ['last_reserved_ip.0', 'last_reserved_ip.1', 'lock'], `after DEL of everything (${spec})`);
  } finally {
    tmp.remove();
  }
}

// ---- cluster (plugin processes on SQLite and etcd) ------------------------------------------------

type ClusterOp = 'ADD' | 'ADD-new-node' | 'DEL' | 'DEL-sticky' | 'DEL-empties-block' | 'GC' | 'GC-two' | 'release-ip';

const CLUSTER_CASES: readonly [spec: string, op: ClusterOp][] = [
  ['cluster.snapshot.loaded', 'ADD'],
  ['cluster.assign.blocks-loaded', 'ADD'],
  ['cluster.assign.planned', 'ADD'],
  ['cluster.assign.committed', 'ADD'],
  ['cluster.block.claimed', 'ADD-new-node'],
  ['cluster.plugin.before-save', 'ADD'],
  ['cluster.plugin.saved', 'ADD'],
  ['cluster.release.committed', 'DEL'],
  ['cluster.sticky.held', 'DEL-sticky'],
  ['cluster.block.released', 'DEL-empties-block'],
  ['cluster.release-addrs.committed', 'release-ip'],
  ['cluster.gc.listed', 'GC'],
  ['cluster.gc.released', 'GC-two'],
];

const NET = 'crash';
const PODS = ['pod-0', 'pod-1', 'pod-2', 'pod-3', 'pod-4', 'pod-5'];

function clusterCall(
  url: string,
  cacheDir: string,
  command: string,
  id: string,
  node: string,
  extra: Record<string, unknown> = {},
  env: Record<string, string> = {},
): PluginCall {
  return {
    command,
    containerId: id,
    ifname: 'eth0',
    env,
    config: { cniVersion: '1.1.0', name: NET, ipam: { type: 'podipam', datastore: url, nodeName: node, cacheDir }, ...extra },
  };
}

/**
 * Pools of /29 (v4: 5 usable) and /125 (v6: 6 usable) blocks; pod-0…pod-5 on node-1 (pod-5 in a
 * second v4 block), then pod-0 released: node-1's first v4 block has a free address, so the
 * release of pod-5 deletes its then empty block.
 */
async function clusterSetup(url: string): Promise<Map<string, string[]>> {
  const store = await openStore(url, OBSERVER);
  try {
    const ipam = new ClusterIpam(store);
    await ipam.createPool({ name: 'c4', cidr: '10.66.0.0/24', blockSize: 29 });
    await ipam.createPool({ name: 'c6', cidr: 'fd66::/116', blockSize: 125 });
    const got = new Map<string, string[]>();
    for (const id of PODS) {
      const a = await ipam.assign({
        node: 'node-1',
        handle: cniHandleId(NET, id, 'eth0'),
        attrs: { network: NET, containerId: id, ifname: 'eth0' },
        auto: 'each-family',
      });
      got.set(
        id,
        a.map((x) => formatAddr(x.addr)),
      );
    }
    await ipam.releaseHandle(cniHandleId(NET, 'pod-0', 'eth0'), 'node-1');
    got.delete('pod-0');
    return got;
  } finally {
    await store.close();
  }
}

/**
 * The datastore's allocations: address → handle, asserting none appears twice, every holder's
 * handle exists and each handle's record counts what the blocks give it — all read at one
 * revision (a restarted warm agent returns and refills meanwhile: blocks and handles listed one
 * after the other could show a handle returned in between as missing).
 */
async function clusterHoldings(url: string): Promise<Map<string, string>> {
  const store = await openStore(url, OBSERVER);
  try {
    const { entries } = await store.snapshot('');
    const held = new Map<string, string>();
    /** handle → block CIDR → addresses the blocks give it. */
    const given = new Map<string, Map<string, number>>();
    for (const e of entries.filter((x) => x.key.startsWith(BLOCK_PREFIX))) {
      const b = decodeBlock(e);
      const cidr = formatPrefix(b.cidr);
      for (const [o, h] of b.allocations) {
        const a = formatAddr(addrOfOrdinal(b.cidr, o));
        assert.ok(!held.has(a), `${a} is allocated in two blocks (to ${held.get(a)} and ${h})`);
        held.set(a, h);
        const per = given.get(h) ?? new Map<string, number>();
        per.set(cidr, (per.get(cidr) ?? 0) + 1);
        given.set(h, per);
      }
    }
    const handles = new Map(entries.filter((x) => x.key.startsWith(HANDLE_PREFIX)).map((e) => [e.key.slice(HANDLE_PREFIX.length), decodeHandle(e)]));
    for (const [a, h] of held) assert.ok(handles.has(h), `${a} is allocated to handle ${h}, which does not exist`);
    for (const [h, rec] of handles) {
      const counts = (m: ReadonlyMap<string, number> | undefined): [string, number][] => [...(m ?? [])].sort(([x], [y]) => (x < y ? -1 : 1));
      assert.deepEqual(counts(rec.blocks), counts(given.get(h)), `handle ${h} counts what the blocks give it`);
    }
    return held;
  } finally {
    await store.close();
  }
}

async function clusterCase(url: string, spec: string, op: ClusterOp): Promise<void> {
  const tmp = makeTempDir('crash-cluster');
  try {
    const cache = tmp.path;
    const got = await clusterSetup(url);
    const node = op === 'ADD-new-node' ? 'node-2' : 'node-1';
    const nodeOf = new Map([...got.keys()].map((id) => [id, 'node-1']));
    const valid = (ids: readonly string[]) => ({ 'cni.dev/valid-attachments': ids.map((containerID) => ({ containerID, ifname: 'eth0' })) });
    let run: (env: Record<string, string>) => Promise<PluginRun>;
    let after: (r: PluginRun) => void;
    /** Sticky holds the op leaves (hold handle → addresses). */
    const holds = new Map<string, string[]>();
    switch (op) {
      case 'ADD':
      case 'ADD-new-node':
        run = (env) => runPlugin(PODIPAM_BIN, clusterCall(url, cache, 'ADD', 'victim', node, {}, env));
        after = (r) => (got.set('victim', ips(r)), nodeOf.set('victim', node));
        break;
      case 'DEL':
        run = (env) => runPlugin(PODIPAM_BIN, clusterCall(url, cache, 'DEL', 'pod-1', node, {}, env));
        after = () => got.delete('pod-1');
        break;
      case 'DEL-sticky': {
        // A sticky pod's DEL moves its addresses to the pod's hold (src/cluster/txn/sticky-hold.ts).
        const sticky = { runtimeConfig: { 'io.kubernetes.cri.pod-annotations': { 'podipam.io/sticky': 'true' } } };
        run = (env) =>
          runPlugin(PODIPAM_BIN, {
            ...clusterCall(url, cache, 'DEL', 'pod-1', node, sticky, env),
            args: 'K8S_POD_NAMESPACE=ns;K8S_POD_NAME=pod-1;K8S_POD_UID=u1',
          });
        after = () => (holds.set(`sticky:${NET}:ns:pod-1:eth0`, got.get('pod-1')!), got.delete('pod-1'));
        break;
      }
      case 'DEL-empties-block':
        run = (env) => runPlugin(PODIPAM_BIN, clusterCall(url, cache, 'DEL', 'pod-5', node, {}, env));
        after = () => got.delete('pod-5');
        break;
      case 'GC':
        run = (env) =>
          runPlugin(PODIPAM_BIN, { ...clusterCall(url, cache, 'GC', '', node, valid(['pod-1', 'pod-2', 'pod-4', 'pod-5']), env), containerId: undefined });
        after = () => got.delete('pod-3');
        break;
      case 'GC-two':
        run = (env) => runPlugin(PODIPAM_BIN, { ...clusterCall(url, cache, 'GC', '', node, valid(['pod-1', 'pod-2', 'pod-5']), env), containerId: undefined });
        after = () => (got.delete('pod-3'), got.delete('pod-4'));
        break;
      case 'release-ip': {
        const v4 = got.get('pod-2')![0]!;
        run = (env) => podipam(['--datastore', url, 'ipam', 'release', '--ip', v4], env);
        after = () => got.set('pod-2', got.get('pod-2')!.slice(1));
        break;
      }
    }
    if (op === 'DEL-empties-block') {
      // The release policy needs the pools (the hint file's snapshot): one ADD and DEL save them.
      ok(await runPlugin(PODIPAM_BIN, clusterCall(url, cache, 'ADD', 'hint', node)), 'ADD hint');
      ok(await runPlugin(PODIPAM_BIN, clusterCall(url, cache, 'DEL', 'hint', node)), 'DEL hint');
    }
    expectCrash(await run(crashEnv(spec)), spec, `cluster ${op}`);
    const retried = ok(await run({}), `${op} retried after ${spec}`);
    after(retried);
    // The retried ADD answers what the datastore holds for it; nothing else moved.
    const holdings = await clusterHoldings(url);
    const want = new Map([
      ...[...got].flatMap(([id, as]) => as.map((a) => [a, cniHandleId(NET, id, 'eth0')] as const)),
      ...[...holds].flatMap(([h, as]) => as.map((a) => [a, h] as const)),
    ]);
    assert.deepEqual(
      new Map([...holdings].sort()),
      new Map([...want].sort()),
      `after ${spec} (${op}): the datastore allocates exactly the live pods' (and holds') addresses`,
    );
    await checkClean(url, `after ${spec}`);
    await Promise.all([...got.keys()].map(async (id) => ok(await runPlugin(PODIPAM_BIN, clusterCall(url, cache, 'DEL', id, nodeOf.get(id)!)), `DEL ${id}`)));
    for (const h of holds.keys()) ok(await podipam(['--datastore', url, 'ipam', 'release', '--handle', h]), `release hold ${h}`);
    assert.equal((await clusterHoldings(url)).size, 0, `after DEL of everything (${spec}): zero allocated`);
    await checkClean(url, `after DEL of everything (${spec})`);
  } finally {
    tmp.remove();
  }
}

// ---- controller ----------------------------------------------------------------------------

async function controllerCase(url: string, spec: string): Promise<void> {
  for (const n of ['cn-1', 'cn-2', 'cn-3']) ok(await podipam(['--datastore', url, 'node', 'add', n]), `node add ${n}`);
  const ctl = [
    '--datastore',
    url,
    'controller',
    '--once',
    '--cluster-cidr',
    '10.201.0.0/16,fd20:1::/48',
    '--node-mask-size',
    '24',
    '--node-mask-size-v6',
    '64',
  ];
  expectCrash(await podipam(ctl, crashEnv(spec)), spec, 'controller --once');
  ok(await podipam(ctl), 'controller --once retried');
  const nodes = JSON.parse(ok(await podipam(['--datastore', url, 'node', 'list', '--json']), 'node list').stdout).items as {
    name: string;
    podCIDRs: string[];
  }[];
  const cidrs = nodes.flatMap((n) => n.podCIDRs);
  assert.equal(nodes.length, 3);
  for (const n of nodes) assert.equal(n.podCIDRs.length, 2, `${n.name} has one CIDR per family: ${n.podCIDRs}`);
  assert.equal(new Set(cidrs).size, cidrs.length, `no CIDR given twice: ${cidrs}`);
  const store = await openStore(url, OBSERVER);
  try {
    const claims = (await store.list('nodecidrs/')).map((e) => [e.key.slice('nodecidrs/'.length), (JSON.parse(e.value) as { node: string }).node] as const);
    assert.deepEqual(
      new Map([...claims].sort()),
      new Map(nodes.flatMap((n) => n.podCIDRs.map((c) => [c, n.name] as const)).sort()),
      'every CIDR claimed by its node, no orphan claim',
    );
  } finally {
    await store.close();
  }
  for (const n of ['cn-1', 'cn-2', 'cn-3']) ok(await podipam(['--datastore', url, 'node', 'delete', n]), `node delete ${n}`);
  ok(await podipam(ctl), 'controller --once after the deletes');
  const left = await openStore(url, OBSERVER);
  try {
    assert.deepEqual(
      (await left.list('nodecidrs/')).map((e) => e.key),
      [],
      'deleting every node frees every claim',
    );
  } finally {
    await left.close();
  }
}

// ---- agent (the warm pool and cluster mode behind the native shim) -----------------------------

const AGENT_CASES: readonly string[] = [
  'agent.refill.committed',
  'agent.refill.recorded',
  'agent.add.recorded',
  'agent.del.recorded',
  'agent.writebehind.committed',
  'agent.return.committed',
  'cluster.group.committed',
  'cluster.release-group.committed',
];

/**
 * One agent armed with `spec`; the workload runs through the shim with a runtime's retries
 * (code 11 while the agent is down: it is restarted, unarmed, once the armed one died).
 */
async function agentCase(datastore: string, spec: string): Promise<void> {
  requireShim();
  // The group release needs DELs queued behind one in flight: the agent's etcd answers 20 ms late.
  const proxy = spec === 'cluster.release-group.committed' ? await startSlowProxy(datastore.replace(/^etcd:\/\//, ''), 20) : undefined;
  const url = proxy ? `etcd://${proxy.endpoint}` : datastore;
  const tmp = makeTempDir('crash-agent');
  const warm = spec.startsWith('agent.');
  const socket = join(tmp.path, 'run', 'agent.sock');
  const args = warm
    ? [
        '--node',
        'wnode',
        '--datastore',
        url,
        '--data-dir',
        join(tmp.path, 'agent'),
        '--min-idle',
        '2',
        '--max-idle',
        '2',
        '--capacity',
        '64',
        '--cooldown',
        '1s',
      ]
    : ['--node', 'wnode', '--datastore', url, '--data-dir', join(tmp.path, 'agent')];
  let agent: RunningAgent | undefined;
  let armedChild: import('node:child_process').ChildProcess | undefined;
  const store = await openStore(datastore, OBSERVER);
  try {
    const ipam = new ClusterIpam(store);
    await ipam.createPool({ name: 'a4', cidr: '10.67.0.0/24', blockSize: 28 });
    await ipam.createPool({ name: 'a6', cidr: 'fd67::/116', blockSize: 124 });
    const armed = startArmedAgent(socket, args, spec);
    armedChild = armed.child;
    let died: Awaited<typeof armed.exited> | undefined;
    void armed.exited.then((d) => (died = d));
    /** The armed agent's death (bounded), then an unarmed one on the same socket and data dir. */
    let restarting: Promise<void> | undefined;
    const restart = (): Promise<void> =>
      (restarting ??= (async () => {
        const d = await Promise.race([armed.exited, sleep(90_000, undefined, { ref: false }).then(() => undefined)]);
        assert.ok(d, `the agent armed with ${spec} did not die within 90 s:\n${died?.stderr ?? ''}`);
        expectCrash({ ...d, stdout: '' }, spec, 'agent');
        agent = await startAgent(socket, args);
      })());
    const config = warm
      ? { cniVersion: '1.1.0', name: 'crash-warm', ipam: { type: 'podipam', agent: socket } }
      : { cniVersion: '1.1.0', name: 'crash-agent', ipam: { type: 'podipam', datastore: url, nodeName: 'wnode' } };
    const call = (command: string, id: string): PluginCall => ({
      command,
      containerId: id,
      ifname: 'eth0',
      config,
      env: { PODIPAM_AGENT_SOCKET: socket, PODIPAM_PLUGIN: '' },
    });
    const runtime = async (command: string, id: string): Promise<PluginRun> => {
      for (let attempt = 1; ; attempt++) {
        const r = await runPlugin(SHIM_BIN, call(command, id));
        if (r.code === 0) return r;
        const e = JSON.parse(r.stdout) as { code: number; msg: string };
        assert.equal(e.code, 11, `${command} ${id}: only code 11 may be retried: ${r.stdout}`);
        assert.ok(attempt < 100, `${command} ${id} still failing: ${e.msg}`);
        if (died || armed.child.exitCode !== null || armed.child.signalCode !== null) await restart();
        else await sleep(50); // the armed agent is still starting
      }
    };
    const pods = Array.from({ length: 6 }, (_, i) => `apod-${i}`);
    const got = new Map<string, string[]>();
    if (spec === 'cluster.group.committed' || spec === 'cluster.release-group.committed') {
      // A burst: the ADDs queued behind the first are written as one group.
      await Promise.all(pods.concat(pods.map((p) => `${p}-b`)).map(async (id) => got.set(id, ips(await runtime('ADD', id)))));
    } else {
      for (const id of pods) got.set(id, ips(await runtime('ADD', id)));
    }
    if (spec === 'cluster.release-group.committed') {
      // A burst of DELs: the ones queued behind the first are released as one group, which dies
      // committed; the runtime's retries on the next agent find them released.
      const gone = [...got.keys()].slice(0, 8);
      await Promise.all(gone.map((id) => runtime('DEL', id)));
      for (const id of gone) got.delete(id);
    }
    if (spec === 'agent.del.recorded' || spec === 'agent.return.committed') {
      for (const id of pods.slice(0, 4)) {
        await runtime('DEL', id);
        got.delete(id);
      }
    }
    // Crashes off the call path (refill, return, write-behind) come by themselves.
    await restart();
    assert.ok(agent);
    // A repeated ADD answers the same addresses (the crash lost no pod, gave none a second one).
    for (const [id, as] of got) assert.deepEqual(ips(await runtime('ADD', id)), as, `repeated ADD of ${id}`);
    const every = [...got.values()].flat();
    assert.equal(new Set(every).size, every.length, `no address held twice: ${every}`);
    const held = await clusterHoldings(datastore);
    for (const a of every) assert.ok(held.has(a), `${a} of a pod is allocated in the datastore`);
    if (warm) {
      // What the datastore allocates to the node is exactly what the agent accounts for.
      let s = await agent.status();
      for (let i = 0; i < 400; i++) {
        const p = Object.values(s.warmPool!.pools);
        if (s.warmPool!.writeBehindDepth === 0 && p.every((x) => x.returning === 0 && x.pending === 0)) break;
        await sleep(50);
        s = await agent.status();
      }
      const accounted = Object.values(s.warmPool!.pools).reduce((n, x) => n + x.idle + x.inUse + x.returning, 0);
      assert.equal((await clusterHoldings(datastore)).size, accounted, `datastore vs agent: ${JSON.stringify(s.warmPool)}`);
      const records = (await store.list('agent-pods/wnode/')).map((e) => e.key.slice('agent-pods/wnode/'.length)).sort();
      assert.deepEqual(records, [...got.keys()].map((id) => cniHandleId('crash-warm', id, 'eth0')).sort(), 'one pod record per live pod');
    } else {
      assert.equal(held.size, every.length, 'the datastore allocates exactly the pods');
    }
    await checkClean(datastore, `agent after ${spec}`);
    for (const id of got.keys()) await runtime('DEL', id);
    if (warm) {
      for (let i = 0; i < 400 && (await agent.status()).warmPool!.writeBehindDepth > 0; i++) await sleep(50);
      assert.deepEqual(
        (await store.list('agent-pods/wnode/')).map((e) => e.key),
        [],
        'no pod record left',
      );
    }
    assert.equal(await agent.stop(), 0);
    agent = undefined;
    // The node leaves: its warm handles go too; then nothing is allocated.
    for (const e of await store.list(`${HANDLE_PREFIX}podipam-warm:`)) await ipam.releaseHandle(e.key.slice(HANDLE_PREFIX.length));
    assert.equal((await clusterHoldings(datastore)).size, 0, 'zero allocated after DEL of everything');
    await checkClean(datastore, `agent after DEL of everything (${spec})`);
  } finally {
    if (armedChild && armedChild.exitCode === null && armedChild.signalCode === null) armedChild.kill('SIGKILL');
    await agent?.kill();
    await store.close();
    tmp.remove();
    await proxy?.close();
  }
}

/**
 * `pool resize` (shrink) killed once the narrowed CIDR is written: the pool's old space still
 * counts as its own, so a pool created over it is refused by the write gate; running the same
 * resize again finishes it, and the space is then free.
 */
async function shrinkCase(url: string, spec: string): Promise<void> {
  const cli = (...args: string[]) => podipam(['--datastore', url, ...args]);
  ok(await cli('pool', 'create', 'p', '--cidr', '10.33.0.0/24', '--block-size', '26'), 'pool create');
  const store = await openStore(url, OBSERVER);
  try {
    const c = new ClusterIpam(store);
    await c.assign({ node: 'n1', handle: 'low', ips: [parseAddr('10.33.0.5')] });
    // An empty block in the upper half: claimed by a pod that left.
    await c.assign({ node: 'n2', handle: 'gone', ips: [parseAddr('10.33.0.200')] });
    await c.releaseHandle('gone');
  } finally {
    await store.close();
  }
  expectCrash(await podipam(['--datastore', url, 'pool', 'resize', 'p', '--cidr', '10.33.0.0/25'], crashEnv(spec)), spec, 'pool resize');
  const q = await cli('pool', 'create', 'q', '--cidr', '10.33.0.128/25', '--block-size', '27');
  assert.equal(q.code, 1, `pool create over an unfinished shrink: ${q.stdout}${q.stderr}`);
  assert.match(q.stderr, /overlaps pool "p" \(10\.33\.0\.0\/25, still holding 10\.33\.0\.0\/24 until its shrink finishes\)/);
  ok(await cli('pool', 'resize', 'p', '--cidr', '10.33.0.0/25'), 'the resize run again');
  ok(await cli('pool', 'create', 'q', '--cidr', '10.33.0.128/25', '--block-size', '27'), 'pool create once the shrink finished');
  await checkClean(url, `pool resize killed at ${spec}`);
}

// ---- the runs -------------------------------------------------------------------------------------

const sqliteUrl = (dir: string) => `sqlite:${join(dir, 'ds.db')}`;

async function onSqlite(fn: (url: string) => Promise<void>): Promise<void> {
  const tmp = makeTempDir('crash-sqlite');
  try {
    await fn(sqliteUrl(tmp.path));
  } finally {
    tmp.remove();
  }
}

const localCases = (t: import('node:test').TestContext) =>
  t.test('local back end: every step of ADD, DEL and GC, retried, no duplicate, nothing left after DEL', { concurrency: 3 }, async (t) => {
    await Promise.all(LOCAL_CASES.map(([spec, op]) => t.test(`local ${op} killed at ${spec}`, () => localCase(spec, op))));
  });

const sqliteCases = (t: import('node:test').TestContext) =>
  t.test('cluster back end, controller and agent on SQLite', { concurrency: 3 }, async (t) => {
    await Promise.all([
      ...CLUSTER_CASES.map(([spec, op]) => t.test(`sqlite: ${op} killed at ${spec}`, () => onSqlite((url) => clusterCase(url, spec, op)))),
      t.test('sqlite: controller killed at controller.cidr.committed', () => onSqlite((url) => controllerCase(url, 'controller.cidr.committed'))),
      t.test('sqlite: pool resize killed at cluster.pool.shrink-marked', () => onSqlite((url) => shrinkCase(url, 'cluster.pool.shrink-marked'))),
      // A SQLite release is synchronous (the agent's event loop is held for its whole txn), so
      // a burst of shim DELs seldom waits in the queue together: the group release is killed on etcd.
      ...AGENT_CASES.filter((spec) => spec !== 'cluster.release-group.committed').map((spec) =>
        t.test(`sqlite: agent killed at ${spec}`, () => onSqlite((url) => agentCase(url, spec))),
      ),
    ]);
  });

/**
 * The etcd group: SQLite above runs every case, so here the etcd store's own part is proven by
 * the case only etcd reaches (the group release) and a seeded sample of ETCD_SAMPLE others
 * (PODIPAM_CRASH_SEED, else a fresh seed, printed). PODIPAM_CRASH_ALL=1 runs every case on etcd
 * too (about two minutes more; docs/testing.md lists it with the other long runs).
 */
const ETCD_SAMPLE = 5;
const crashAll = process.env.PODIPAM_CRASH_ALL === '1';
const crashSeed = process.env.PODIPAM_CRASH_SEED ? Number(process.env.PODIPAM_CRASH_SEED) : Math.floor(Math.random() * 2 ** 31);

/** The etcd cases this run makes: every one, or the etcd-only ones and a seeded sample (in list order). */
function etcdSelection<T extends { readonly name: string; readonly etcdOnly?: boolean }>(cases: readonly T[], all: boolean, seed: number, sample: number): T[] {
  if (all) return [...cases];
  const random = mulberry32(seed);
  const others = cases.filter((c) => c.etcdOnly !== true);
  const keyed = others.map((c) => ({ c, k: random() }));
  const picked = new Set(
    keyed
      .sort((a, b) => a.k - b.k)
      .slice(0, sample)
      .map((x) => x.c),
  );
  return cases.filter((c) => c.etcdOnly === true || picked.has(c));
}

const etcdCases = (t: import('node:test').TestContext) =>
  t.test(
    `cluster back end, controller and agent on etcd (one member, cases in turn, the store wiped between; ${crashAll ? 'every case' : `seed ${crashSeed}: the etcd-only case and ${ETCD_SAMPLE} sampled, PODIPAM_CRASH_ALL=1 for all`})`,
    async (t) => {
      let etcd: EtcdCluster | undefined;
      try {
        etcd = await startEtcd({ members: 1 });
        const url = etcd.url;
        const fresh = async (fn: () => Promise<void>): Promise<void> => {
          const s = await openStore(url, OBSERVER);
          try {
            await wipeStore(s);
          } finally {
            await s.close();
          }
          await fn();
        };
        const cases: { name: string; etcdOnly?: boolean; run: () => Promise<void> }[] = [
          ...CLUSTER_CASES.map(([spec, op]) => ({ name: `etcd: ${op} killed at ${spec}`, run: () => clusterCase(url, spec, op) })),
          { name: 'etcd: controller killed at controller.cidr.committed', run: () => controllerCase(url, 'controller.cidr.committed') },
          { name: 'etcd: pool resize killed at cluster.pool.shrink-marked', run: () => shrinkCase(url, 'cluster.pool.shrink-marked') },
          ...AGENT_CASES.map((spec) => ({
            name: `etcd: agent killed at ${spec}`,
            etcdOnly: spec === 'cluster.release-group.committed',
            run: () => agentCase(url, spec),
          })),
        ];
        if (!crashAll)
          t.diagnostic(`seed ${crashSeed} (replay: PODIPAM_CRASH_SEED=${crashSeed} node scripts/test.mjs crash-points; every case: PODIPAM_CRASH_ALL=1)`);
        for (const c of etcdSelection(cases, crashAll, crashSeed, ETCD_SAMPLE)) await t.test(c.name, () => fresh(c.run));
      } finally {
        await etcd?.stop();
      }
    },
  );

// The three groups run at once (the etcd cases one after another among them).
test(
  'crash points: every step on the local back end and on SQLite, the etcd-only step and a seeded sample on etcd',
  { timeout: 900_000, concurrency: true },
  async (t) => {
    await Promise.all([localCases(t), sqliteCases(t), etcdCases(t)]);
  },
);

test('every listed crash point was reached by a case above', () => {
  const missing = CRASH_POINT_NAMES.filter((n: CrashPointName) => !reached.has(n));
  assert.deepEqual(missing, [], `crash points no case reached: ${missing.join(', ')}`);
});
