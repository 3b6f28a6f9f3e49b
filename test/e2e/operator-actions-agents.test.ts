/**
 * The operator schedule (test/suites/operator-schedule.ts) with pods started and stopped by the
 * built binaries beside the allocator's API: cluster-mode pods through `bin/podipam` (one process
 * per call) on three nodes, and warm-pool pods through the native shim into a `podipam agent`
 * that is restarted now and then (its resource DB kept), all on one SQLite file, while operator
 * actions run in process with their answers lost after commit. After every step no address has
 * two holders, every pod keeps its addresses (a cluster pod under its own handle, an agent's pod
 * under the node's warm handle), and `ipam check` — which compares the agent's own records too —
 * reports exactly the planted leaks. On SQLite and on a 3-member etcd. A datastore restore puts
 * the datastore behind the pods started since its backup: as the README tells an operator, the
 * agent is stopped for the restore and started again, those pods are then recreated (deleted
 * here), and once the agent's view is newer than their DELs the check must be clean again.
 *
 * OPERATOR_SEED=<n> replays it, OPERATOR_AGENT_STEPS=<n> (default 50) lengthens it.
 */
import { type TestContext, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { type RunningAgent, SHIM_BIN, requireShim, startAgent } from '../helpers/agent.js';
import { podCall } from '../helpers/agent-pods.js';
import { PODIPAM_BIN, clusterCall, runPlugin } from '../helpers/plugin.js';
import { type TempDir, makeTempDir } from '../helpers/tmp.js';
import { startEtcd } from '../helpers/etcd.js';
import { openStore } from '../../src/store/index.js';
import { agentViewKey, decodeAgentView } from '../../src/cluster/records/agent-view-record.js';
import { agentBeatKey, decodeAgentBeat } from '../../src/cluster/records/agent-beat-record.js';
import { vouchedView } from '../../src/cluster/reports/vouched-view.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { cniHandleId } from '../../src/model/handle-id.js';
import { warmHandlePrefix } from '../../src/warm/warm-handle.js';
import { type PodDriver, type PodKind, runOperatorSchedule } from '../suites/operator-schedule.js';

const seed = process.env.OPERATOR_SEED === undefined ? (Date.now() ^ (Math.random() * 2 ** 31)) >>> 0 : Number(process.env.OPERATOR_SEED);
const steps = Number(process.env.OPERATOR_AGENT_STEPS ?? 50);
const NET = 'op-net';
const WARM_NODE = 'on-w';

async function scheduleWithPods(t: TestContext, url: string, dir: TempDir, seed: number, steps: number): Promise<void> {
  t.diagnostic(`seed ${seed} (replay: OPERATOR_SEED=${seed} node scripts/test.mjs operator-actions-agents)`);
  const socket = join(dir.path, 'agent.sock');
  const agentArgs = [
    '--node',
    WARM_NODE,
    '--datastore',
    url,
    '--data-dir',
    join(dir.path, 'agent'),
    '--min-idle',
    '2',
    '--max-idle',
    '6',
    '--capacity',
    '64',
    '--cooldown',
    '1s',
    '--view-interval',
    '200ms',
  ];
  let agent: RunningAgent | undefined;
  const nodeOf = new Map<string, string>();
  let i = 0;
  const ips = (stdout: string): string[] => (JSON.parse(stdout) as { ips: { address: string }[] }).ips.map((x) => x.address.split('/')[0]!);
  const pods: PodDriver = {
    kinds: ['plugin', 'agent'],
    async add(kind: PodKind, id: string) {
      if (kind === 'plugin') {
        const node = ['on-a', 'on-b', 'on-c'][i++ % 3]!;
        nodeOf.set(id, node);
        const r = await runPlugin(PODIPAM_BIN, clusterCall(NET, url, join(dir.path, `cache-${node}`), 'ADD', id, node));
        return r.code === 0 ? { addrs: ips(r.stdout) } : { refused: `code ${r.code}: ${r.stdout.slice(0, 200)}` };
      }
      const r = await runPlugin(SHIM_BIN, podCall(socket, 'warm-net', 'ADD', id, 'ns', id, `uid-${id}`));
      return r.code === 0 ? { addrs: ips(r.stdout) } : { refused: `code ${r.code}: ${r.stdout.slice(0, 200)}` };
    },
    async del(kind: PodKind, id: string) {
      const r =
        kind === 'plugin'
          ? await runPlugin(PODIPAM_BIN, clusterCall(NET, url, join(dir.path, `cache-${nodeOf.get(id)}`), 'DEL', id, nodeOf.get(id)!))
          : await runPlugin(SHIM_BIN, podCall(socket, 'warm-net', 'DEL', id, 'ns', id, `uid-${id}`));
      assert.equal(r.code, 0, `DEL ${kind} ${id}: ${r.stdout}${r.stderr}`);
    },
    holds: (kind: PodKind, id: string, handle: string) =>
      kind === 'plugin' ? handle === cniHandleId(NET, id, 'eth0') : handle.startsWith(warmHandlePrefix(WARM_NODE)),
    async restartAgent() {
      const was = agent!;
      assert.equal(await was.stop(), 0, `the agent stops cleanly:\n${was.log().slice(-4000)}`);
      agent = await startAgent(socket, agentArgs);
    },
    async stopped(f) {
      const was = agent!;
      assert.equal(await was.stop(), 0, `the agent stops cleanly:\n${was.log().slice(-4000)}`);
      await f();
      agent = await startAgent(socket, agentArgs);
    },
    async settle() {
      const since = Date.now();
      for (let k = 0; ; k++) {
        // A warm pool not ready (no pool it may use) publishes no view: the check calls its old one stale, never a finding.
        if ((await agent!.status()).warmPool?.ready === false) return;
        // The view, or its heartbeat when the view is unchanged (the rule ipam check applies, vouched-view.ts).
        const [e, b] = await Promise.all([store.get(agentViewKey(WARM_NODE)), store.get(agentBeatKey(WARM_NODE))]);
        const beat = b && { rev: b.rev, ...decodeAgentBeat(b) };
        if (e && Date.parse(vouchedView({ rev: e.rev, at: decodeAgentView(e).at }, beat).at) > since) return;
        assert.ok(k < 100, `the agent published no holder view (nor heartbeat) within 10 s:\n${agent!.log().slice(-4000)}`);
        await sleep(100);
      }
    },
  };
  const store = await openStore(url);
  try {
    agent = await startAgent(socket, agentArgs);
    const r = await runOperatorSchedule(store, { seed, steps, lose: 0.1, pods });
    t.diagnostic(`${r.steps.length} steps, ${r.lost} answers lost; ${JSON.stringify(r.counts)}`);
    const served = (kind: string) => r.steps.filter((l) => new RegExp(`add ${kind} pod \\S+: \\d`).test(l)).length;
    t.diagnostic(`pods given addresses through bin/podipam: ${served('plugin')}, through the shim and agent: ${served('agent')}`);
    assert.ok(served('plugin') + served('agent') > 0, `no pod got an address through the binaries:\n${r.steps.join('\n')}`);
  } finally {
    await agent?.kill();
    await store.close();
  }
}

test('operator actions with pods through the plugin and a warm agent, on SQLite: one address, one holder after every step', { timeout: 600_000 }, async (t) => {
  requireShim();
  const dir = makeTempDir('operator-agents');
  try {
    await scheduleWithPods(t, `sqlite:${join(dir.path, 'ds.db')}`, dir, seed, steps);
  } finally {
    dir.remove();
  }
});

test('the same on a 3-member etcd', { timeout: 600_000 }, async (t) => {
  requireShim();
  const dir = makeTempDir('operator-agents-etcd');
  const etcd = await startEtcd({ members: 3 });
  try {
    await scheduleWithPods(t, etcd.url, dir, seed + 1, Math.ceil(steps / 2));
  } finally {
    await etcd.stop();
    dir.remove();
  }
});
