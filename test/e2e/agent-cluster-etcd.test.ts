/**
 * Cluster mode on a real etcd through the native shim and four node agents (one per "node"):
 * 256 dual-stack pods, 32 ADDs in flight, one agent SIGKILLed mid-burst and restarted while the
 * runtime (this test) retries every code 11, as kubelet does. Every pod ends with distinct
 * addresses; the killed node's calls provably met the outage (retries counted on that node);
 * group commit wrote fewer transactions than pods; DEL of everything leaves nothing allocated
 * and `ipam check` clean.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type RunningAgent, SHIM_BIN, requireShim, startAgent } from '../helpers/agent.js';
import { startEtcd } from '../helpers/etcd.js';
import { type PluginCall, type PluginRun, runCliSync, runPlugin } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';

const NODES = 4;
const PODS = 256;
const IN_FLIGHT = 32;
const VICTIM = 1;
const MAX_TRIES = 200;

test(
  '256 pods over 4 agents on etcd, 32 in flight, an agent SIGKILLed mid-burst and restarted: distinct addresses, group commit, clean after DEL',
  { timeout: 600_000 },
  async (t) => {
    requireShim();
    const etcd = await startEtcd({ members: 1 });
    const dir = makeTempDir('agent-cluster');
    const agents: RunningAgent[] = [];
    try {
      const url = etcd.url;
      for (const [name, cidr] of [
        ['ac-v4', '10.210.0.0/16'],
        ['ac-v6', 'fd00:210::/64'],
      ] as const) {
        const r = runCliSync(url, ['pool', 'create', name, '--cidr', cidr]);
        assert.equal(r.code, 0, r.stderr);
      }
      const sockets = Array.from({ length: NODES }, (_, i) => join(dir.path, `node${i}`, 'agent.sock'));
      for (let i = 0; i < NODES; i++) agents[i] = await startAgent(sockets[i]!, ['--node', `node-${i}`, '--datastore', url]);
      const call = (command: string, pod: number): PluginCall => ({
        command,
        containerId: `pod${pod}`,
        ifname: 'eth0',
        config: { cniVersion: '1.0.0', name: 'agent-etcd', ipam: { type: 'podipam', datastore: url, nodeName: `node-${pod % NODES}` } },
        env: { PODIPAM_AGENT_SOCKET: sockets[pod % NODES]!, PODIPAM_PLUGIN: '' },
      });
      // What the agents' start-up cost (pools, config, watches): the burst's round trips are counted from here.
      const startTrips = (await Promise.all(agents.map((a) => a.status()))).map((s) => s.datastore.roundTrips);
      const retries = new Array<number>(NODES).fill(0);
      const runtime = async (c: PluginCall, node: number): Promise<PluginRun> => {
        for (let attempt = 1; ; attempt++) {
          const r = await runPlugin(SHIM_BIN, c);
          if (r.code === 0) return r;
          const e = JSON.parse(r.stdout) as { code: number; msg: string };
          assert.equal(e.code, 11, `${c.command} ${c.containerId}: only code 11 may be retried: ${r.stdout}`);
          assert.ok(attempt < MAX_TRIES, `${c.command} ${c.containerId} still failing: ${e.msg}`);
          retries[node]!++;
          await sleep(25);
        }
      };
      let done = 0;
      let killedAt = -1;
      let restarted: Promise<void> | undefined;
      const results = new Array<string[]>(PODS);
      let next = 0;
      const lane = async (): Promise<void> => {
        for (let pod = next++; pod < PODS; pod = next++) {
          const r = await runtime(call('ADD', pod), pod % NODES);
          results[pod] = (JSON.parse(r.stdout) as { ips: { address: string }[] }).ips.map((x) => x.address);
          done++;
          if (done === 64 && killedAt < 0) {
            killedAt = done;
            await agents[VICTIM]!.kill();
            restarted = (async () => {
              await sleep(300);
              agents[VICTIM] = await startAgent(sockets[VICTIM]!, ['--node', `node-${VICTIM}`, '--datastore', url]);
            })();
          }
        }
      };
      await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
      await restarted;
      t.diagnostic(`agent ${VICTIM} killed after ${killedAt} pods; retries per node: ${retries.join(', ')}`);
      assert.ok(killedAt > 0 && killedAt < PODS - 64, 'the kill landed mid-burst');
      assert.ok(retries[VICTIM]! > 0, `the killed node's ADDs met the outage (retries ${retries.join(', ')})`);
      const all = results.flat();
      assert.equal(all.length, PODS * 2, 'every pod has an IPv4 and an IPv6 address');
      assert.equal(new Set(all.map((a) => a.split('/')[0])).size, all.length, 'no address handed out twice');
      // Group commit: fewer datastore round trips than pods on the nodes that never restarted
      // (their start-up's reads not counted: they do not grow with the pods).
      const st = await Promise.all(agents.map((a) => a.status()));
      const steady = st.filter((_, i) => i !== VICTIM);
      const trips = st.reduce((n, s, i) => (i === VICTIM ? n : n + s.datastore.roundTrips - startTrips[i]!), 0);
      const pods = steady.reduce((n, s) => n + (s.requests.ADD?.ok ?? 0), 0);
      t.diagnostic(
        `steady agents: ${pods} ADDs in ${trips} datastore round trips after their start-up (${startTrips.join(', ')} before); group commits ${steady.map((s) => `${s.datastore.groupCommits}/${s.datastore.groupedAdds}`).join(' ')}`,
      );
      assert.ok(trips < pods, `${trips} round trips for ${pods} pods`);
      assert.ok(
        steady.some((s) => s.datastore.groupCommits > 0),
        'some ADDs were group-committed',
      );

      const show = runCliSync(url, ['ipam', 'show', '--json']);
      assert.equal(show.code, 0, show.stderr);
      for (let pod = 0; pod < PODS; pod++) await runtime(call('DEL', pod), pod % NODES);
      const after = JSON.parse(runCliSync(url, ['ipam', 'show', '--json']).stdout) as { items: { allocated: number | string }[] };
      const pools = after.items;
      assert.ok(
        pools.every((p) => Number(p.allocated) === 0),
        `allocated after DEL: ${JSON.stringify(after)}`,
      );
      const check = runCliSync(url, ['ipam', 'check', '--json']);
      assert.equal(check.code, 0, check.stderr);
      assert.deepEqual(JSON.parse(check.stdout), { leaks: [], problems: [] });
    } finally {
      for (const a of agents) await a?.kill();
      await etcd.stop();
      dir.remove();
    }
  },
);
