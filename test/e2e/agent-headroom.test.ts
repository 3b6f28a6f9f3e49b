/**
 * A node that says it is full: an agent in cluster mode (through the shim, SQLite) on a node
 * allowed one /28 block fills it with ADDs → its headroom reaches 0 and, given the API server
 * (the fake one), its Node is tainted podipam.io/ip-exhausted=ipv4:NoSchedule within one
 * resync; pods deleted → the taint is removed once headroom is back at --headroom-clear,
 * never flapping in between; other taints are kept. The metric, `agent status` (JSON and text)
 * and the free count agree. Without an API server: metric and status only.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AgentStatus } from '../../src/agent/agent-stats.js';
import { type RunningAgent, SHIM_BIN, requireShim, startAgent } from '../helpers/agent.js';
import { startFakeKubeApiServer } from '../helpers/fake-kube-apiserver.js';
import { freePort } from '../helpers/free-port.js';
import { PODIPAM_BIN, clusterCall, runCliSync, runPlugin } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';

const INTERVAL_MS = 1000;
/** A /28 hands out 13 addresses (network, gateway and broadcast excluded). */
const BLOCK = 13;

function setUp(url: string): void {
  for (const args of [
    ['pool', 'create', 'p', '--cidr', '10.91.0.0/24', '--block-size', '28'],
    ['ipam', 'config', '--max-blocks-per-host', '1', '--strict-affinity', 'true'],
  ]) {
    const r = runCliSync(url, args);
    assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
  }
}

async function call(agent: RunningAgent, url: string, command: string, id: string): Promise<{ code: number | null; stdout: string }> {
  return runPlugin(SHIM_BIN, { ...clusterCall('hnet', url, '', command, id, 'n1'), env: { PODIPAM_AGENT_SOCKET: agent.socket, PODIPAM_PLUGIN: '' } });
}

async function metric(port: number): Promise<number | undefined> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const m = /^podipam_node_headroom_addresses\{family="ipv4"\} (\d+)$/m.exec(text);
  return m ? Number(m[1]) : undefined;
}

/** The status once a resync ended after this call (its `at` moved on). */
async function nextResync(agent: RunningAgent, what: string): Promise<AgentStatus> {
  const before = (await agent.status()).headroom?.at;
  for (let i = 0; ; i++) {
    const s = await agent.status();
    if (s.headroom?.at !== undefined && s.headroom.at !== before) return s;
    assert.ok(i < 100, `${what}: no resync in 10 s: ${JSON.stringify(s.headroom)}\n${agent.log()}`);
    await sleep(100);
  }
}

const v4 = (s: AgentStatus) => s.headroom?.families.ipv4;

/** Status, metric and the text of `agent status` agree on the headroom. */
async function agree(agent: RunningAgent, port: number, headroom: number, exhausted: boolean): Promise<void> {
  const s = await agent.status();
  assert.equal(v4(s)?.headroom, headroom, JSON.stringify(s.headroom));
  assert.equal(v4(s)?.exhausted, exhausted);
  assert.equal(await metric(port), headroom);
  const text = spawnSync(PODIPAM_BIN, ['agent', 'status', '--socket', agent.socket], { encoding: 'utf8' }).stdout;
  assert.match(
    text,
    new RegExp(
      `^headroom: ipv4 ${headroom}${exhausted ? ' EXHAUSTED' : ''} \\(${headroom} free in 1/1 blocks|^headroom: ipv4 ${headroom} \\(0 free in 0/1 blocks`,
      'm',
    ),
    text,
  );
}

test('cluster mode with an API server: full node tainted within one resync, untainted at the threshold, other taints kept, no flapping', async () => {
  requireShim();
  const dir = makeTempDir('podipam-headroom-');
  const fake = await startFakeKubeApiServer();
  const url = `sqlite:${join(dir.path, 'c.db')}`;
  setUp(url);
  const node = fake.addNode('n1');
  node.spec.taints = [{ key: 'dedicated', value: 'infra', effect: 'NoExecute' }];
  const kubeconfig = join(dir.path, 'kubeconfig');
  fake.writeKubeconfig(kubeconfig);
  const port = await freePort();
  const agent = await startAgent(join(dir.path, 'agent.sock'), [
    '--node',
    'n1',
    '--datastore',
    url,
    '--kubeconfig',
    kubeconfig,
    '--headroom-interval',
    `${INTERVAL_MS}ms`,
    '--headroom-clear',
    '4',
    '--metrics-listen',
    `127.0.0.1:${port}`,
  ]);
  const ours = () => (fake.getNode('n1')?.spec.taints ?? []).filter((t) => t.key === 'podipam.io/ip-exhausted');
  const taintPatches = () => fake.patches.filter((p) => JSON.stringify(p.body).includes('"taints"')).length;
  try {
    let s = await nextResync(agent, 'first resync');
    assert.deepEqual([v4(s)?.free, v4(s)?.claimable, v4(s)?.headroom, s.headroom?.taint], [0, BLOCK, BLOCK, 'kube']);
    await agree(agent, port, BLOCK, false);
    for (let i = 0; i < BLOCK; i++) assert.equal((await call(agent, url, 'ADD', `c${i}`)).code, 0);
    // The allocator agrees: the next ADD is exhausted (code 100), which resyncs at once.
    const full = await call(agent, url, 'ADD', 'over');
    assert.equal(JSON.parse(full.stdout).code, 100, full.stdout);
    const t0 = Date.now();
    while (ours().length === 0) {
      assert.ok(Date.now() - t0 < INTERVAL_MS + 2000, `no taint within one resync: ${JSON.stringify(fake.getNode('n1')?.spec)}\n${agent.log()}`);
      await sleep(50);
    }
    assert.deepEqual(
      fake.getNode('n1')?.spec.taints?.map((t) => [t.key, t.value, t.effect]),
      [
        ['dedicated', 'infra', 'NoExecute'],
        ['podipam.io/ip-exhausted', 'ipv4', 'NoSchedule'],
      ],
    );
    s = await nextResync(agent, 'after the taint');
    assert.equal(s.headroom?.taintValue, 'ipv4');
    await agree(agent, port, 0, true);
    // 2 pods go: headroom 2 < 4 — the taint stays over several resyncs
    for (const id of ['c0', 'c1']) assert.equal((await call(agent, url, 'DEL', id)).code, 0);
    await nextResync(agent, 'after 2 DELs');
    await nextResync(agent, 'again');
    await agree(agent, port, 2, true);
    assert.equal(ours().length, 1);
    assert.equal(taintPatches(), 1, 'one write: the taint set');
    // all go: headroom 13 ≥ 4 — removed, the other taint kept
    for (let i = 2; i < BLOCK; i++) assert.equal((await call(agent, url, 'DEL', `c${i}`)).code, 0);
    await nextResync(agent, 'after every DEL');
    await nextResync(agent, 'again');
    assert.deepEqual(fake.getNode('n1')?.spec.taints, [{ key: 'dedicated', value: 'infra', effect: 'NoExecute' }]);
    assert.equal(taintPatches(), 2, 'two writes in all: set, cleared');
    await agree(agent, port, BLOCK, false);
  } finally {
    await agent.stop();
    await fake.close();
    dir.remove();
  }
});

test('without an API server: the headroom is a metric and in agent status only', async () => {
  requireShim();
  const dir = makeTempDir('podipam-headroom-');
  const url = `sqlite:${join(dir.path, 'c.db')}`;
  setUp(url);
  const port = await freePort();
  const agent = await startAgent(join(dir.path, 'agent.sock'), [
    '--node',
    'n1',
    '--datastore',
    url,
    '--headroom-interval',
    `${INTERVAL_MS}ms`,
    '--metrics-listen',
    `127.0.0.1:${port}`,
  ]);
  try {
    await nextResync(agent, 'first resync');
    await agree(agent, port, BLOCK, false);
    for (let i = 0; i < 5; i++) assert.equal((await call(agent, url, 'ADD', `c${i}`)).code, 0);
    await nextResync(agent, 'after 5 ADDs');
    await agree(agent, port, BLOCK - 5, false);
    for (let i = 5; i < BLOCK; i++) assert.equal((await call(agent, url, 'ADD', `c${i}`)).code, 0);
    const s = await nextResync(agent, 'full');
    assert.equal(s.headroom?.taint, 'off');
    await agree(agent, port, 0, true);
    const text = spawnSync(PODIPAM_BIN, ['agent', 'status', '--socket', agent.socket], { encoding: 'utf8' }).stdout;
    assert.match(text, /no taint \(no kubeconfig\)/);
  } finally {
    await agent.stop();
    dir.remove();
  }
});
