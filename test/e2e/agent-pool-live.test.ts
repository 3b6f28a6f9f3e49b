/**
 * Pools changed while pods come and go, on a real SQLite file and on a real etcd: ADDs run
 * concurrently through the native shim into a node agent with a warm pool (node A, pool w), a
 * plain cluster-mode agent (node B) and per-pod `bin/podipam` plugin processes (node C), while
 * the CLI changes block sizes (27 → 26 → 28 on p, 27 → 26 on w) and grows both pools. Every ADD
 * must succeed on its first try (a config-generation bump is absorbed by a re-plan, never a
 * failed ADD). Then p is drained: later ADDs come from w only; `pool drain p --wait` follows
 * the DELs to empty. At the end: no address twice, no two blocks overlap, blocks of several
 * sizes exist, `ipam check` clean.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { type RunningAgent, SHIM_BIN, requireShim, startAgent } from '../helpers/agent.js';
import { startEtcd, type EtcdCluster } from '../helpers/etcd.js';
import { PODIPAM_BIN, type PluginCall, type PluginRun, clusterCall, runPlugin } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';
import { runCli } from './serve-harness.js';
import { openStore } from '../../src/store/index.js';
import { BLOCK_PREFIX } from '../../src/cluster/records/keys.js';
import { decodeBlock } from '../../src/cluster/records/block-record.js';
import { formatPrefix, parseAddr, parsePrefix, prefixContains, prefixOverlaps } from '../../src/ip/index.js';

const IN_FLIGHT = 12;

for (const kind of ['sqlite', 'etcd'] as const) {
  test(
    `pools changed live on ${kind}: grow and block-size changes under concurrent ADDs (warm agent, agent, per-pod plugin), then a drain followed to empty`,
    { timeout: 300_000 },
    async (t) => {
      requireShim();
      const dir = makeTempDir(`agent-pool-live-${kind}`);
      let etcd: EtcdCluster | undefined;
      const agents: RunningAgent[] = [];
      try {
        if (kind === 'etcd') etcd = await startEtcd({ members: 1 });
        const url = etcd ? etcd.url : `sqlite:${join(dir.path, 'c.db')}`;
        const cli = async (...args: string[]): Promise<string> => {
          const r = await runCli(['--datastore', url, ...args]);
          assert.equal(r.code, 0, `podipam ${args.join(' ')}: ${r.stderr}${r.stdout}`);
          return r.stdout;
        };
        await cli('pool', 'create', 'p', '--cidr', '10.230.0.0/24', '--block-size', '27');
        await cli('pool', 'create', 'w', '--cidr', '10.231.0.0/24', '--block-size', '27');
        const sockA = join(dir.path, 'a', 'agent.sock');
        const sockB = join(dir.path, 'b', 'agent.sock');
        agents.push(
          await startAgent(sockA, [
            '--node',
            'node-a',
            '--datastore',
            url,
            '--data-dir',
            join(dir.path, 'a-data'),
            '--pools',
            'w',
            '--min-idle',
            '8',
            '--max-idle',
            '16',
            '--capacity',
            '256',
            '--cooldown',
            '1s',
          ]),
        );
        agents.push(await startAgent(sockB, ['--node', 'node-b', '--datastore', url]));

        const callOf = (command: string, pod: string): { bin: string; c: PluginCall } => {
          const args = `IgnoreUnknown=1;K8S_POD_NAMESPACE=live;K8S_POD_NAME=${pod}`;
          if (pod.startsWith('a'))
            return {
              bin: SHIM_BIN,
              c: {
                command,
                containerId: pod,
                ifname: 'eth0',
                args,
                config: { cniVersion: '1.0.0', name: 'live-net', ipam: { type: 'podipam', agent: sockA } },
              },
            };
          if (pod.startsWith('b')) {
            return {
              bin: SHIM_BIN,
              c: {
                command,
                containerId: pod,
                ifname: 'eth0',
                args,
                config: { cniVersion: '1.0.0', name: 'live-net', ipam: { type: 'podipam', datastore: url, nodeName: 'node-b' } },
                env: { PODIPAM_AGENT_SOCKET: sockB, PODIPAM_PLUGIN: '' },
              },
            };
          }
          return { bin: PODIPAM_BIN, c: { ...clusterCall('live-net', url, join(dir.path, 'cache-c'), command, pod, 'node-c'), args } };
        };
        const addrs = new Map<string, string[]>();
        const once = async (command: string, pod: string): Promise<PluginRun> => {
          const { bin, c } = callOf(command, pod);
          const r = await runPlugin(bin, c);
          assert.equal(r.code, 0, `${command} ${pod} failed (no retry allowed): ${r.stdout}${r.stderr}`);
          return r;
        };
        const add = async (pod: string): Promise<void> => {
          const r = await once('ADD', pod);
          addrs.set(
            pod,
            (JSON.parse(r.stdout) as { ips: { address: string }[] }).ips.map((i) => i.address.split('/')[0]!),
          );
        };
        const lanes = async (pods: readonly string[], fn: (pod: string) => Promise<unknown>): Promise<void> => {
          let next = 0;
          await Promise.all(
            Array.from({ length: IN_FLIGHT }, async () => {
              while (next < pods.length) await fn(pods[next++]!);
            }),
          );
        };
        const pods = (n: number, from: number): string[] => Array.from({ length: n }, (_, i) => `${'abc'[(from + i) % 3]}${from + i}`);

        // Phase 1: ADDs while the pools change.
        const first = pods(72, 0);
        const changes = (async () => {
          for (const args of [
            ['pool', 'set', 'p', '--block-size', '26'],
            ['pool', 'resize', 'p', '--cidr', '10.230.0.0/23'],
            ['pool', 'resize', 'w', '--cidr', '10.231.0.0/23'],
            ['pool', 'set', 'w', '--block-size', '26'],
            ['pool', 'set', 'p', '--block-size', '28'],
          ]) {
            await cli(...args);
          }
        })();
        await Promise.all([lanes(first, add), changes]);

        // Phase 2: p drained; new pods get addresses of w only.
        const drained = JSON.parse(await cli('pool', 'drain', 'p', '-o', 'json')) as {
          draining: boolean;
          allocated: number;
          nodes: { node: string; pods: { pod?: string }[] }[];
        };
        assert.equal(drained.draining, true);
        const inP = (a: string): boolean => prefixContains(parsePrefix('10.230.0.0/23'), parseAddr(a));
        const heldInP = [...addrs.values()].flat().filter(inP).length;
        assert.equal(drained.allocated, heldInP, 'drain reports what the pods hold in p');
        assert.ok(
          drained.nodes.every((n) => n.pods.every((p) => p.pod?.startsWith('live/'))),
          JSON.stringify(drained.nodes),
        );
        const second = pods(24, 72).filter((p) => !p.startsWith('a'));
        await lanes(second, add);
        assert.deepEqual(second.flatMap((p) => addrs.get(p)!).filter(inP), [], 'nothing new from the drained pool');

        // DEL everything while `pool drain --wait` follows p to empty.
        const wait = runCli(['--datastore', url, 'pool', 'drain', 'p', '--wait', '--timeout', '120s'], {}, 150_000);
        await lanes([...addrs.keys()], (pod) => once('DEL', pod));
        const w = await wait;
        assert.equal(w.code, 0, w.stderr + w.stdout);
        assert.match(w.stdout, /0 addresses still held/);
        t.diagnostic(
          `drain --wait printed:\n${w.stdout
            .split('\n')
            .filter((l) => l.startsWith('pool'))
            .join('\n')}`,
        );

        const all = [...addrs.values()].flat();
        assert.equal(new Set(all).size, all.length, 'no address given to two pods');
        const store = await openStore(url);
        try {
          const blocks = (await store.list(BLOCK_PREFIX)).map(decodeBlock);
          const over: string[] = [];
          for (let i = 0; i < blocks.length; i++)
            for (let j = i + 1; j < blocks.length; j++)
              if (prefixOverlaps(blocks[i]!.cidr, blocks[j]!.cidr)) over.push(`${formatPrefix(blocks[i]!.cidr)} ~ ${formatPrefix(blocks[j]!.cidr)}`);
          assert.deepEqual(over, [], 'no two blocks overlap');
          const sizes = new Set(blocks.map((b) => b.cidr.len));
          t.diagnostic(`${blocks.length} blocks, sizes /${[...sizes].sort().join(', /')}`);
          assert.ok(sizes.size >= 2, 'blocks of several sizes exist');
        } finally {
          await store.close();
        }
        const check = await runCli(['--datastore', url, 'ipam', 'check', '--json']);
        assert.equal(check.code, 0, check.stdout + check.stderr);
        assert.deepEqual((JSON.parse(check.stdout) as { problems: unknown[] }).problems, []);
        await cli('pool', 'delete', 'p');
      } finally {
        for (const a of agents) await a.stop();
        await etcd?.stop();
        dir.remove();
      }
    },
  );
}
