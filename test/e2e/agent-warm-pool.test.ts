/**
 * The agent's warm pool end to end, on a real SQLite datastore file and on a real etcd, through
 * the native shim:
 * 64 dual-stack pods with 16 in flight into an agent started with a warm pool; distinct
 * addresses; fewer than 0.5 datastore round trips per pod; the agent SIGKILLed and restarted
 * on the same data dir → the pool is rebuilt from the resource DB (in-use pods keep their
 * addresses, nothing held twice); DEL of all → the pod records are gone from the datastore,
 * `ipam check` clean (the idle addresses are held by the node's warm handles, not leaks).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type RunningAgent, SHIM_BIN, requireShim, startAgent } from '../helpers/agent.js';
import { PODIPAM_BIN, type PluginCall, runCliSync, runPlugin } from '../helpers/plugin.js';
import { spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { makeTempDir } from '../helpers/tmp.js';
import { startEtcd } from '../helpers/etcd.js';
import { openStore } from '../../src/store/index.js';
import { ClusterIpam } from '../../src/cluster/service/cluster-ipam.js';
import { formatAddr } from '../../src/ip/index.js';

const PODS = 64;
const IN_FLIGHT = 16;

for (const kind of ['sqlite', 'etcd'] as const) {
  test(
    `warm pool through the shim on ${kind}: 64 pods at 16 in flight, < 0.5 datastore round trips per pod, SIGKILL and restart rebuilds the pool, DEL all → check clean`,
    { timeout: 300_000 },
    async (t) => {
      requireShim();
      const dir = makeTempDir('agent-warm');
      let agent: RunningAgent | undefined;
      const etcd = kind === 'etcd' ? await startEtcd({ members: 1 }) : undefined;
      try {
        const url = etcd ? etcd.url : `sqlite:${join(dir.path, 'ds.db')}`;
        for (const [name, cidr] of [
          ['w4', '10.211.0.0/16'],
          ['w6', 'fd00:211::/64'],
        ] as const) {
          const r = runCliSync(url, ['pool', 'create', name, '--cidr', cidr]);
          assert.equal(r.code, 0, r.stderr);
        }
        const socket = join(dir.path, 'run', 'agent.sock');
        const args = [
          '--node',
          'wnode',
          '--datastore',
          url,
          '--data-dir',
          join(dir.path, 'agent'),
          '--min-idle',
          '16',
          '--max-idle',
          '32',
          '--capacity',
          '128',
          '--cooldown',
          '1s',
        ];
        agent = await startAgent(socket, args);
        const warmReady = async (a: RunningAgent): Promise<Awaited<ReturnType<RunningAgent['status']>>> => {
          for (let i = 0; ; i++) {
            const s = await a.status();
            if (s.warmPool?.ready && (s.warmPool.pools.ipv4?.idle ?? 0) >= 16) return s;
            assert.ok(i < 200, `warm pool not preloaded: ${JSON.stringify(s.warmPool)}\n${a.log()}`);
            await sleep(25);
          }
        };
        const s0 = await warmReady(agent);
        assert.ok(s0.warmPool, `status has the warm pool: ${JSON.stringify(s0)}`);
        assert.equal(s0.warmPool.pools.ipv4?.idle, 16, 'preloaded to minIdle');
        assert.equal(s0.warmPool.pools.ipv6?.idle, 16, 'preloaded to minIdle');
        const call = (command: string, pod: number): PluginCall => ({
          command,
          containerId: `wpod${pod}`,
          ifname: 'eth0',
          config: { cniVersion: '1.0.0', name: 'warm-net', ipam: { type: 'podipam', agent: socket } },
          env: { PODIPAM_PLUGIN: '' },
        });
        const trips0 = s0.datastore.roundTrips;
        const results = new Array<string[]>(PODS);
        let next = 0;
        const lane = async (): Promise<void> => {
          for (let pod = next++; pod < PODS; pod = next++) {
            const r = await runPlugin(SHIM_BIN, call('ADD', pod));
            assert.equal(r.code, 0, `ADD ${pod}: ${r.stdout} ${r.stderr}`);
            results[pod] = (JSON.parse(r.stdout) as { ips: { address: string; gateway: string }[] }).ips.map((x) => x.address);
          }
        };
        await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
        const s1 = await agent.status();
        const all = results.flat();
        assert.equal(all.length, PODS * 2, 'every pod has an IPv4 and an IPv6 address');
        assert.ok(
          all.every((a) => /^(10\.211\.[0-9.]+\/26|fd00:211::[0-9a-f:]+\/122)$/.test(a)),
          all.slice(0, 4).join(' '),
        );
        assert.equal(new Set(all.map((a) => a.split('/')[0])).size, all.length, 'no address handed out twice');
        const trips = s1.datastore.roundTrips - trips0;
        t.diagnostic(
          `${PODS} pods: ${trips} datastore round trips (${(trips / PODS).toFixed(3)} per pod); ADD in the agent ${JSON.stringify(s1.latencyMs.ADD)} ms; warm ${JSON.stringify(s1.warmPool)}`,
        );
        assert.ok(trips / PODS < 0.5, `${trips} datastore round trips for ${PODS} pods`);
        assert.equal(s1.warmPool!.pools.ipv4!.inUse, PODS);

        // Crash: SIGKILL, restart on the same data dir.
        await agent.kill();
        agent = await startAgent(socket, args);
        const s2 = await warmReady(agent);
        t.diagnostic(`after restart: ${JSON.stringify(s2.warmPool)}`);
        assert.equal(s2.warmPool!.pools.ipv4!.inUse, PODS, 'the pods are still in use after the restart');
        assert.equal(s2.warmPool!.pools.ipv6!.inUse, PODS);
        assert.equal(s2.warmPool!.droppedOnReconcile, 0);
        // The pod records queued before the crash survived it (resource DB) and are written now.
        t.diagnostic(`write-behind queued at the kill: ${s1.warmPool!.writeBehindDepth}`);
        let sw = s2;
        for (let i = 0; i < 100 && sw.warmPool!.writeBehindDepth > 0; i++) {
          await sleep(50);
          sw = await agent.status();
        }
        assert.equal(sw.warmPool!.writeBehindDepth, 0);
        {
          const st = await openStore(url);
          try {
            assert.equal((await st.list('agent-pods/wnode/')).length, PODS, 'every pod record is in the datastore');
          } finally {
            await st.close();
          }
        }
        // A repeated ADD answers the same addresses; new pods get others.
        const again = await runPlugin(SHIM_BIN, call('ADD', 0));
        assert.deepEqual(
          (JSON.parse(again.stdout) as { ips: { address: string }[] }).ips.map((x) => x.address),
          results[0],
        );
        const extra: string[] = [];
        for (let pod = PODS; pod < PODS + 8; pod++) {
          const r = await runPlugin(SHIM_BIN, call('ADD', pod));
          assert.equal(r.code, 0, r.stdout);
          extra.push(...(JSON.parse(r.stdout) as { ips: { address: string }[] }).ips.map((x) => x.address));
        }
        const every = [...all, ...extra].map((a) => a.split('/')[0]);
        assert.equal(new Set(every).size, every.length, 'no address held twice across the restart');
        // The datastore agrees: every address handed out is held by one of the node's warm handles.
        const store = await openStore(url);
        try {
          const ipam = new ClusterIpam(store);
          const held = new Set<string>();
          for (const e of await store.list('handles/podipam-warm:wnode:')) {
            for (const a of (await ipam.addressesOf(e.key.slice('handles/'.length))) ?? []) held.add(formatAddr(a.addr));
          }
          for (const a of every) assert.ok(held.has(a!), `${a} is held by a warm handle of the node in the datastore`);
        } finally {
          await store.close();
        }

        for (let pod = 0; pod < PODS + 8; pod++) {
          const r = await runPlugin(SHIM_BIN, call('DEL', pod));
          assert.equal(r.code, 0, `DEL ${pod}: ${r.stdout}`);
        }
        // Write-behind drains within its bounded delay.
        let s3 = await agent.status();
        for (let i = 0; i < 100 && s3.warmPool!.writeBehindDepth > 0; i++) {
          await sleep(50);
          s3 = await agent.status();
        }
        assert.equal(s3.warmPool!.writeBehindDepth, 0, 'write-behind queue drained');
        assert.equal(s3.warmPool!.pools.ipv4!.inUse, 0);
        const store2 = await openStore(url);
        try {
          assert.deepEqual(await store2.list('agent-pods/'), [], 'pod records deleted behind');
        } finally {
          await store2.close();
        }
        const check = runCliSync(url, ['ipam', 'check', '--json']);
        assert.equal(check.code, 0, check.stderr);
        assert.deepEqual(JSON.parse(check.stdout), { leaks: [], problems: [] });
        // After the cooldown, the surplus above maxIdle goes back in batched transactions.
        let s4 = s3;
        for (let i = 0; i < 100 && s4.warmPool!.pools.ipv4!.idle > 32; i++) {
          await sleep(100);
          s4 = await agent.status();
        }
        t.diagnostic(`after DEL and cooldown: ${JSON.stringify(s4.warmPool)}`);
        assert.ok(s4.warmPool!.pools.ipv4!.idle <= 32, 'idle back within maxIdle');
        // Batched: a txn returns every address past its cooldown at that tick, both families
        // together (how many ticks that takes depends on the machine's speed, not asserted).
        assert.ok(
          s4.warmPool!.returnTxns >= 1 && s4.warmPool!.returned >= 2 * s4.warmPool!.returnTxns,
          `${s4.warmPool!.returnTxns} return transactions for ${s4.warmPool!.returned} addresses`,
        );
        const check2 = runCliSync(url, ['ipam', 'check', '--json']);
        assert.deepEqual(JSON.parse(check2.stdout), { leaks: [], problems: [] });
      } finally {
        await agent?.kill();
        await etcd?.stop();
        dir.remove();
      }
    },
  );
}

test('podipam agent refuses bad warm-pool flags with the flag and the value', () => {
  const dir = makeTempDir('agent-warm-flags');
  try {
    const socket = join(dir.path, 'run', 'agent.sock');
    const run = (args: string[]): { code: number | null; stderr: string } => {
      const r = spawnSync(process.execPath, [PODIPAM_BIN, 'agent', '--socket', socket, '--metrics-listen', 'off', '--data-dir', join(dir.path, 'a'), ...args], {
        encoding: 'utf8',
        timeout: 20_000,
      });
      return { code: r.status, stderr: r.stderr };
    };
    const url = `sqlite:${join(dir.path, 'ds.db')}`;
    const cases: [string[], RegExp][] = [
      [['--datastore', url, '--min-idle', '8', '--max-idle', '4'], /--min-idle 8: must not exceed --max-idle \(4\)/],
      [['--datastore', url, '--max-idle', '40', '--capacity', '32'], /--max-idle 40: must not exceed --capacity \(32\)/],
      [['--datastore', url, '--min-idle', 'many'], /--min-idle "many"/],
      [['--datastore', url, '--min-idle', '1', '--cooldown', 'soon'], /--cooldown "soon"/],
    ];
    for (const [args, want] of cases) {
      const r = run(args);
      assert.notEqual(r.code, 0, `${args.join(' ')} was accepted`);
      assert.match(r.stderr, want, args.join(' '));
    }
  } finally {
    dir.remove();
  }
});

/**
 * How long etcd stays down while pods churn (PODIPAM_TEST_OUTAGE_MS for a longer run): 10 s spans
 * the refiller's failed attempts with backoffs of 0.5, 1, 2 and 4 s and ~55 ADDs at load ~27;
 * the churn also runs until OUTAGE_MIN_DELS DELs were answered, however slow the machine.
 */
const OUTAGE_MS = Number(process.env.PODIPAM_TEST_OUTAGE_MS ?? 10_000);
const OUTAGE_MIN_DELS = 10;

test(
  `3-member etcd down (all members) for ${OUTAGE_MS / 1000} s: pods keep starting and stopping from the warm pool; after etcd restarts on its data the write-behind queue drains (status and metric back to 0), the pool refills, check clean`,
  { timeout: 300_000 },
  async (t) => {
    requireShim();
    const dir = makeTempDir('agent-warm-outage');
    const etcd = await startEtcd({ members: 3 });
    let agent: RunningAgent | undefined;
    try {
      const url = etcd.url;
      for (const [name, cidr] of [
        ['o4', '10.213.0.0/16'],
        ['o6', 'fd00:213::/64'],
      ] as const) {
        const r = runCliSync(url, ['pool', 'create', name, '--cidr', cidr]);
        assert.equal(r.code, 0, r.stderr);
      }
      const socket = join(dir.path, 'run', 'agent.sock');
      const port = await freePort();
      agent = await startAgent(socket, [
        '--node',
        'onode',
        '--datastore',
        url,
        '--data-dir',
        join(dir.path, 'agent'),
        '--min-idle',
        '16',
        '--max-idle',
        '32',
        '--capacity',
        '64',
        '--cooldown',
        '1s',
        '--metrics-listen',
        `127.0.0.1:${port}`,
      ]);
      const depthMetric = async (): Promise<number> => {
        const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        const m = /^podipam_agent_warm_write_behind_depth (\d+)/m.exec(text);
        assert.ok(m, `no write-behind depth metric in:\n${text.slice(0, 2000)}`);
        return Number(m[1]);
      };
      for (let i = 0; ; i++) {
        const s = await agent.status();
        if ((s.warmPool?.pools.ipv4?.idle ?? 0) >= 16 && (s.warmPool?.pools.ipv6?.idle ?? 0) >= 16) break;
        assert.ok(i < 400, `not preloaded: ${JSON.stringify(s.warmPool)}`);
        await sleep(25);
      }
      const call = (command: string, pod: number): PluginCall => ({
        command,
        containerId: `opod${pod}`,
        ifname: 'eth0',
        config: { cniVersion: '1.0.0', name: 'outage-net', ipam: { type: 'podipam', agent: socket } },
        env: { PODIPAM_PLUGIN: '' },
      });
      await Promise.all(etcd.members.map((m) => m.kill()));
      const before = (await agent.status()).warmPool!;
      // Churn for the whole outage: ADD a pod, DEL the one started 4 pods ago; every call answers.
      const held = new Map<number, string[]>();
      let adds = 0;
      let dels = 0;
      const t0 = performance.now();
      for (let pod = 0; performance.now() - t0 < OUTAGE_MS || dels < OUTAGE_MIN_DELS; pod++) {
        const r = await runPlugin(SHIM_BIN, call('ADD', pod));
        assert.equal(r.code, 0, `ADD ${pod} with etcd down: ${r.stdout}`);
        const ips = (JSON.parse(r.stdout) as { ips: { address: string }[] }).ips.map((x) => x.address.split('/')[0]!);
        assert.equal(ips.length, 2, 'both families');
        for (const [p, other] of held) assert.ok(!other.some((a) => ips.includes(a)), `pod ${pod} got ${ips} while pod ${p} holds ${other}`);
        held.set(pod, ips);
        adds++;
        if (held.size > 4) {
          const old = Math.min(...held.keys());
          assert.equal((await runPlugin(SHIM_BIN, call('DEL', old))).code, 0, `DEL ${old} with etcd down`);
          held.delete(old);
          dels++;
        }
        await sleep(100);
      }
      // End the outage with 12 pods running, so the pool is below minIdle when etcd returns
      // (after a cooldown's wait: every idle address is free again, none is a miss).
      await sleep(1100);
      for (let pod = 100_000; held.size < 12; pod++) {
        const r = await runPlugin(SHIM_BIN, call('ADD', pod));
        assert.equal(r.code, 0, `ADD ${pod} with etcd down: ${r.stdout}`);
        held.set(
          pod,
          (JSON.parse(r.stdout) as { ips: { address: string }[] }).ips.map((x) => x.address.split('/')[0]!),
        );
        adds++;
      }
      const down = (await agent.status()).warmPool!;
      t.diagnostic(
        `etcd down ${((performance.now() - t0) / 1000).toFixed(1)} s: ${adds} ADDs and ${dels} DELs answered from the pool; ${JSON.stringify(down)}`,
      );
      assert.ok(adds >= 20 && dels >= OUTAGE_MIN_DELS, `pods kept starting and stopping: ${adds} ADDs, ${dels} DELs`);
      assert.equal(down.writeTxns, before.writeTxns, 'nothing reached the datastore while it was down');
      assert.ok(down.writeBehindDepth >= adds, `pod records queued: ${down.writeBehindDepth} for ${adds} ADDs and ${dels} DELs`);
      assert.ok((await depthMetric()) >= adds, 'the depth metric shows the queue');
      assert.ok(down.pools.ipv4!.idle < 16, `below minIdle when etcd returns: ${down.pools.ipv4!.idle}`);
      await Promise.all(etcd.members.map((m) => m.restart()));
      let up = await agent.status();
      for (let i = 0; i < 600 && (up.warmPool!.writeBehindDepth > 0 || up.warmPool!.pools.ipv4!.idle < 16 || up.warmPool!.pools.ipv6!.idle < 16); i++) {
        await sleep(100);
        up = await agent.status();
      }
      t.diagnostic(`etcd back: ${JSON.stringify(up.warmPool)}`);
      assert.equal(up.warmPool!.writeBehindDepth, 0, 'the write-behind queue drained');
      assert.equal(await depthMetric(), 0, 'the depth metric is back to 0');
      assert.ok(up.warmPool!.writeTxns > down.writeTxns, 'the queue drained in transactions');
      assert.ok(
        up.warmPool!.writeTxns - down.writeTxns <= Math.ceil(down.writeBehindDepth / 64) + 2,
        `the queue drained in batches: ${up.warmPool!.writeTxns - down.writeTxns} transactions for ${down.writeBehindDepth} records`,
      );
      assert.ok(up.warmPool!.pools.ipv4!.idle >= 16 && up.warmPool!.pools.ipv6!.idle >= 16, 'the pool refilled to minIdle');
      assert.ok(up.warmPool!.refillTxns > down.refillTxns, 'by a refill transaction');
      const store = await openStore(url);
      try {
        const recs = (await store.list('agent-pods/onode/')).map((e) => e.key.slice('agent-pods/onode/'.length)).sort();
        assert.deepEqual(recs, [...held.keys()].map((p) => `outage-net:opod${p}:eth0`).sort(), 'exactly the pods still running are recorded');
      } finally {
        await store.close();
      }
      for (const pod of held.keys()) assert.equal((await runPlugin(SHIM_BIN, call('DEL', pod))).code, 0);
      let end = await agent.status();
      for (let i = 0; i < 200 && end.warmPool!.writeBehindDepth > 0; i++) {
        await sleep(50);
        end = await agent.status();
      }
      assert.equal(end.warmPool!.writeBehindDepth, 0);
      const check = runCliSync(url, ['ipam', 'check', '--json']);
      assert.equal(check.code, 0, check.stderr);
      assert.deepEqual(JSON.parse(check.stdout), { leaks: [], problems: [] });
    } finally {
      await agent?.kill();
      await etcd.stop();
      dir.remove();
    }
  },
);

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}
