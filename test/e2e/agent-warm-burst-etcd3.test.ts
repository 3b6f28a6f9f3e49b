/**
 * The warm pool under a crash, on a real 3-member etcd: 256 dual-stack pods at 32 in flight
 * through the native shim into two agents (two nodes, warm pools on); agent A is SIGKILLed
 * once it has answered a quarter of its pods and restarted while the burst goes on, the
 * runtime side retrying each ADD that answered CNI code 11 (the agent was away, or died with
 * the call in flight). Proven mid-burst: A answered ADDs before the kill and after the restart.
 * Then: no address held twice (across both agents' answers, and in the datastore no address in
 * two handles); each agent's resource DB agrees with the datastore (its held addresses are
 * exactly those of its node's warm handles, its pods exactly its pod records); DEL of all →
 * `ipam check` clean and each pool's idle back within maxIdle.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type RunningAgent, SHIM_BIN, requireShim, startAgent } from '../helpers/agent.js';
import { type PluginCall, runCliSync, runPlugin } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';
import { startEtcd } from '../helpers/etcd.js';
import { openStore } from '../../src/store/index.js';
import { ClusterIpam } from '../../src/cluster/service/cluster-ipam.js';
import { formatAddr } from '../../src/ip/index.js';
import { ResourceDb } from '../../src/warm/resource-db.js';

const PODS = 256;
const IN_FLIGHT = 32;
const MAX_IDLE = 48;
const NODES = ['burst-a', 'burst-b'] as const;

test(
  '3-member etcd: 256-pod burst at 32 in flight into two agents, one SIGKILLed mid-burst and restarted → nothing held twice, resource DBs agree with the datastore, DEL all → check clean, idle within maxIdle',
  { timeout: 240_000 },
  async (t) => {
    requireShim();
    const dir = makeTempDir('agent-warm-burst3');
    const etcd = await startEtcd({ members: 3 });
    const agents: (RunningAgent | undefined)[] = [undefined, undefined];
    let crash: Promise<void> | undefined;
    try {
      const url = etcd.url;
      for (const [name, cidr] of [
        ['b4', '10.214.0.0/16'],
        ['b6', 'fd00:214::/64'],
      ] as const) {
        const r = runCliSync(url, ['pool', 'create', name, '--cidr', cidr]);
        assert.equal(r.code, 0, r.stderr);
      }
      const socketOf = (i: number): string => join(dir.path, `run${i}`, 'agent.sock');
      const dataDir = (i: number): string => join(dir.path, `agent${i}`);
      const argsOf = (i: number): string[] => [
        '--node',
        NODES[i]!,
        '--datastore',
        url,
        '--data-dir',
        dataDir(i),
        '--min-idle',
        '16',
        '--max-idle',
        String(MAX_IDLE),
        '--capacity',
        '256',
        '--cooldown',
        '1s',
      ];
      const start = async (i: number): Promise<RunningAgent> => {
        const a = await startAgent(socketOf(i), argsOf(i));
        for (let n = 0; ; n++) {
          const s = await a.status();
          if (s.warmPool?.ready && (s.warmPool.pools.ipv4?.idle ?? 0) >= 16) return a;
          assert.ok(n < 400, `warm pool of ${NODES[i]} not preloaded: ${JSON.stringify(s.warmPool)}\n${a.log()}`);
          await sleep(25);
        }
      };
      agents[0] = await start(0);
      agents[1] = await start(1);

      const call = (command: string, pod: number): PluginCall => ({
        command,
        containerId: `b3pod${pod}`,
        ifname: 'eth0',
        config: { cniVersion: '1.0.0', name: 'burst3-net', ipam: { type: 'podipam', agent: socketOf(pod % 2) } },
        env: { PODIPAM_PLUGIN: '' },
      });
      /** What a runtime does: code 11 (try again later) → retry, bounded. */
      let retries = 0;
      const withRetry = async (command: string, pod: number): Promise<string> => {
        for (let attempt = 0; ; attempt++) {
          const r = await runPlugin(SHIM_BIN, call(command, pod));
          if (r.code === 0) return r.stdout;
          const code = (JSON.parse(r.stdout || '{}') as { code?: number }).code;
          assert.equal(code, 11, `${command} ${pod}: only code 11 is retried: ${r.stdout} ${r.stderr}`);
          assert.ok(attempt < 400, `${command} ${pod}: still code 11 after ${attempt} attempts: ${r.stdout}`);
          retries++;
          await sleep(50);
        }
      };

      // The burst; the lane that sees A's 32nd answer kills A and restarts it (the others go on).
      const answers = new Array<string[]>(PODS);
      const answeredBy = [0, 0];
      let phase: 'before' | 'restarting' | 'after' = 'before';
      const byPhase = { before: 0, restarting: 0, after: 0 };
      let next = 0;
      const lane = async (): Promise<void> => {
        for (let pod = next++; pod < PODS; pod = next++) {
          const out = await withRetry('ADD', pod);
          answers[pod] = (JSON.parse(out) as { ips: { address: string }[] }).ips.map((x) => x.address.split('/')[0]!);
          answeredBy[pod % 2]!++;
          if (pod % 2 === 0) byPhase[phase]++;
          if (pod % 2 === 0 && answeredBy[0] === 32 && crash === undefined) {
            crash = (async () => {
              phase = 'restarting';
              await agents[0]!.kill();
              agents[0] = await startAgent(socketOf(0), argsOf(0));
              phase = 'after';
            })();
          }
        }
      };
      const t0 = performance.now();
      await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
      await crash;
      const wall = performance.now() - t0;
      t.diagnostic(
        `burst: ${wall.toFixed(0)} ms, ${retries} retries on code 11, agent A answered ${JSON.stringify(byPhase)} (before the kill / once the new agent listened, before its start returned / after)`,
      );
      assert.ok(crash !== undefined, 'agent A was killed');
      assert.ok(byPhase.before >= 32 && byPhase.after >= 1, `the kill hit mid-burst: A answered ${JSON.stringify(byPhase)}`);
      assert.ok(byPhase.before + byPhase.restarting < PODS / 2, 'A had pods left to answer when it was killed');

      const all = answers.flat();
      assert.equal(all.length, PODS * 2, 'every pod has an IPv4 and an IPv6 address');
      assert.equal(new Set(all).size, all.length, 'no address handed out twice across both agents');

      // Write-behind drained on both agents, then the datastore and each resource DB agree.
      for (const [i, a] of agents.entries()) {
        let s = await a!.status();
        for (let n = 0; n < 300 && s.warmPool!.writeBehindDepth > 0; n++) {
          await sleep(50);
          s = await a!.status();
        }
        assert.equal(s.warmPool!.writeBehindDepth, 0, `${NODES[i]}: write-behind drained`);
        assert.equal(s.warmPool!.pools.ipv4!.inUse, PODS / 2, `${NODES[i]}: ${PODS / 2} pods in use`);
        t.diagnostic(`${NODES[i]}: ${JSON.stringify(s.warmPool)}`);
      }
      /**
       * The datastore is written before the resource DB (a refill's assign, then its rows; a
       * return's release, then the rows dropped), so they are compared while both agents are
       * quiet: no refill or return in flight, the same transaction counts before and after the
       * read. A read that overlapped one is repeated (bounded).
       */
      const quiet = async (): Promise<string | undefined> => {
        const st = await Promise.all(agents.map((a) => a!.status()));
        if (st.some((s) => Object.values(s.warmPool!.pools).some((p) => p.pending > 0 || p.returning > 0) || s.warmPool!.writeBehindDepth > 0))
          return undefined;
        return JSON.stringify(st.map((s) => [s.warmPool!.refillTxns, s.warmPool!.returnTxns, s.warmPool!.writeTxns]));
      };
      const agree = async (label: string): Promise<void> => {
        for (let n = 0; ; n++) {
          const q0 = await quiet();
          if (q0 !== undefined) {
            try {
              await compare(label);
              if ((await quiet()) === q0) return;
            } catch (e) {
              if ((await quiet()) === q0) throw e;
            }
          }
          assert.ok(
            n < 200,
            `${label}: the agents never went quiet: ${JSON.stringify(await Promise.all(agents.map(async (a) => (await a!.status()).warmPool)))}`,
          );
          await sleep(50);
        }
      };
      const compare = async (label: string): Promise<void> => {
        const store = await openStore(url);
        try {
          const ipam = new ClusterIpam(store);
          const owner = new Map<string, string>();
          for (const e of await store.list('handles/')) {
            const h = e.key.slice('handles/'.length);
            for (const a of (await ipam.addressesOf(h)) ?? []) {
              const addr = formatAddr(a.addr);
              assert.equal(owner.get(addr), undefined, `${label}: ${addr} is held by ${owner.get(addr)} and ${h}`);
              owner.set(addr, h);
            }
          }
          for (const [i, node] of NODES.entries()) {
            const db = new ResourceDb(dataDir(i));
            try {
              const dbHeld = db
                .held()
                .map((r) => `${r.addr} ${r.handle}`)
                .sort();
              const dsHeld = [...owner]
                .filter(([, h]) => h.startsWith(`podipam-warm:${node}:`))
                .map(([a, h]) => `${a} ${h}`)
                .sort();
              const onlyDb = dbHeld.filter((x) => !dsHeld.includes(x));
              const onlyDs = dsHeld.filter((x) => !dbHeld.includes(x));
              assert.deepEqual(
                { onlyDb, onlyDs },
                { onlyDb: [], onlyDs: [] },
                `${label}: ${node}'s resource DB holds exactly its warm handles' addresses (${dbHeld.length} in the DB, ${dsHeld.length} in the datastore)`,
              );
              const records = await store.list(`agent-pods/${node}/`);
              const dbPods = db
                .pods()
                .map((p) => `${p.key} ${[...p.addrs].sort().join(',')}`)
                .sort();
              const dsPods = records
                .map((e) => `${e.key.slice(`agent-pods/${node}/`.length)} ${[...(JSON.parse(e.value) as { addrs: string[] }).addrs].sort().join(',')}`)
                .sort();
              assert.deepEqual(dbPods, dsPods, `${label}: ${node}'s pods are exactly its pod records in the datastore`);
            } finally {
              db.close();
            }
          }
        } finally {
          await store.close();
        }
      };
      await agree('after the burst');
      {
        // Every pod's record names exactly the addresses its ADD answered.
        const s = await openStore(url);
        try {
          const recs = new Map((await s.list('agent-pods/')).map((e) => [e.key, [...(JSON.parse(e.value) as { addrs: string[] }).addrs].sort()]));
          assert.equal(recs.size, PODS, 'one record per pod');
          for (let pod = 0; pod < PODS; pod++) {
            assert.deepEqual(
              recs.get(`agent-pods/${NODES[pod % 2]}/burst3-net:b3pod${pod}:eth0`),
              [...answers[pod]!].sort(),
              `pod ${pod}: its record names the answered addresses`,
            );
          }
        } finally {
          await s.close();
        }
      }

      // DEL of all, the same way.
      next = 0;
      await Promise.all(
        Array.from({ length: IN_FLIGHT }, async () => {
          for (let pod = next++; pod < PODS; pod = next++) await withRetry('DEL', pod);
        }),
      );
      for (const [i, a] of agents.entries()) {
        let s = await a!.status();
        for (
          let n = 0;
          n < 600 && (s.warmPool!.writeBehindDepth > 0 || s.warmPool!.pools.ipv4!.idle > MAX_IDLE || s.warmPool!.pools.ipv6!.idle > MAX_IDLE);
          n++
        ) {
          await sleep(50);
          s = await a!.status();
        }
        t.diagnostic(`${NODES[i]} after DEL and cooldown: ${JSON.stringify(s.warmPool)}`);
        assert.equal(s.warmPool!.writeBehindDepth, 0, `${NODES[i]}: write-behind drained`);
        assert.equal(s.warmPool!.pools.ipv4!.inUse, 0);
        assert.ok(s.warmPool!.pools.ipv4!.idle <= MAX_IDLE && s.warmPool!.pools.ipv6!.idle <= MAX_IDLE, `${NODES[i]}: idle back within maxIdle`);
      }
      await agree('after DEL');
      const store = await openStore(url);
      try {
        assert.deepEqual(await store.list('agent-pods/'), [], 'pod records deleted behind');
      } finally {
        await store.close();
      }
      const check = runCliSync(url, ['ipam', 'check', '--json']);
      assert.equal(check.code, 0, check.stderr);
      assert.deepEqual(JSON.parse(check.stdout), { leaks: [], problems: [] });
    } finally {
      await crash?.catch(() => undefined); // a restart in progress is killed too
      for (const a of agents) await a?.kill();
      await etcd.stop();
      dir.remove();
    }
  },
);
