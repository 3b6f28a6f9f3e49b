/**
 * Allocation history end to end through the agent's warm pool and the native shim, on a SQLite
 * datastore file and on a real etcd: the pool hands out addresses it already holds and writes the
 * pod records behind (up to a second later), so the history must date each pod's hold from when
 * the agent answered its ADD — the test proves most records were not yet written when the ADD
 * answered — and until its DEL, also for a pod deleted before its record was ever written (its
 * put folded away by the write-behind). The warm pool's idle addresses are held by nobody: an
 * address the pool holds but never gave a pod has no holder, and a pod's address back in the
 * pool has none after the pod's DEL.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type RunningAgent, SHIM_BIN, requireShim, startAgent } from '../helpers/agent.js';
import { startEtcd } from '../helpers/etcd.js';
import { CallLog, assertHolderAt, cliReader, untilHistoryLive, verifyHistory } from '../helpers/history-log.js';
import { type Runner, forPod, loggedAdd, loggedDel, pause } from '../helpers/history-scenario.js';
import { untilStatus } from '../helpers/agent-pods.js';
import { runCliSync, runPlugin } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';
import { openStore } from '../../src/store/index.js';
import { ClusterIpam } from '../../src/cluster/service/cluster-ipam.js';
import { formatAddr } from '../../src/ip/index.js';
import { type ServeProcess, startServe } from './serve-harness.js';

const NODE = 'hist-w1';

/** The datastore's pod-record keys of the node. */
async function podRecords(url: string): Promise<string[]> {
  const store = await openStore(url);
  try {
    return (await store.list(`agent-pods/${NODE}/`)).map((e) => e.key);
  } finally {
    await store.close();
  }
}

/** Every address the node's warm handles hold in the datastore. */
async function warmHeld(url: string): Promise<Set<string>> {
  const store = await openStore(url);
  try {
    const ipam = new ClusterIpam(store);
    const held = new Set<string>();
    for (const e of await store.list(`handles/podipam-warm:${NODE}:`)) {
      for (const a of (await ipam.addressesOf(e.key.slice('handles/'.length))) ?? []) held.add(formatAddr(a.addr));
    }
    return held;
  } finally {
    await store.close();
  }
}

for (const kind of ['sqlite', 'etcd'] as const) {
  test(
    `history on ${kind}, warm pool: a pod's hold starts when the agent answered (records written behind), ends at its DEL (also when folded before the write); idle addresses held by nobody`,
    { timeout: 180_000 },
    async (t) => {
      requireShim();
      const etcd = kind === 'etcd' ? await startEtcd({ members: 1 }) : undefined;
      const t0 = Date.now();
      const phases: string[] = [];
      const phase = (name: string): void => void phases.push(`${name} ${Date.now() - t0}`);
      const dir = makeTempDir('history-warm');
      let serve: ServeProcess | undefined;
      let agent: RunningAgent | undefined;
      try {
        const url = etcd ? etcd.url : `sqlite:${join(dir.path, 'ds.db')}`;
        const created = runCliSync(url, ['pool', 'create', 'hist-w4', '--cidr', '10.234.0.0/24']);
        assert.equal(created.code, 0, created.stderr);
        const db = join(dir.path, 'history.db');
        serve = await startServe({ env: { PODIPAM_DATASTORE: url }, args: ['--no-default-pools', '--no-controller', '--history-db', db] });
        phase('serve');
        const socket = join(dir.path, 'run', 'agent.sock');
        agent = await startAgent(socket, [
          '--node',
          NODE,
          '--datastore',
          url,
          '--data-dir',
          join(dir.path, 'agent'),
          '--min-idle',
          '6',
          '--max-idle',
          '12',
          '--capacity',
          '32',
          '--cooldown',
          '1s',
        ]);
        await untilStatus(agent, 'warm pool preloaded', (s) => s.warmPool?.ready === true && (s.warmPool.pools.ipv4?.idle ?? 0) >= 6);
        const run: Runner = (command, containerId, pod) =>
          runPlugin(
            SHIM_BIN,
            forPod(
              {
                command,
                containerId,
                ifname: 'eth0',
                config: { cniVersion: '1.0.0', name: 'hist-warm', ipam: { type: 'podipam', agent: socket } },
                env: { PODIPAM_PLUGIN: '' },
              },
              pod,
            ),
          );
        phase('agent');
        const log = new CallLog();
        const before = await untilHistoryLive(db);
        await sleep(30);
        phase('live');

        // Pods whose records the write-behind writes up to a second after the ADD answered.
        let behind = 0;
        const pods = ['w0', 'w1', 'w2', 'w3'];
        for (const name of pods) {
          await loggedAdd(run, log, { namespace: 'warm', name }, `wp-${name}`);
          if (!(await podRecords(url)).some((k) => k.includes(`wp-${name}`))) behind++;
        }
        t.diagnostic(`${behind} of ${pods.length} pod records were not yet in the datastore when their ADD answered`);
        assert.ok(behind >= 1, 'no pod record was written behind: the test would not tell the ADD time from the write time');
        await untilStatus(agent, 'write-behind drained', (s) => s.warmPool!.writeBehindDepth === 0);
        const written = await podRecords(url);
        for (const name of pods)
          assert.ok(
            written.some((k) => k.includes(`wp-${name}`)),
            `the record of wp-${name} was written behind: ${written.join(' ')}`,
          );
        // A pod deleted before its record was written: the write-behind folds its put away.
        await loggedAdd(run, log, { namespace: 'warm', name: 'blink' }, 'wp-blink');
        await pause();
        await loggedDel(run, log, { namespace: 'warm', name: 'blink' }, 'wp-blink');
        await pause();
        await loggedDel(run, log, { namespace: 'warm', name: 'w1' }, 'wp-w1');
        await pause();
        await loggedAdd(run, log, { namespace: 'warm', name: 'w1' }, 'wp-w1-b');
        await loggedDel(run, log, { namespace: 'warm', name: 'w2' }, 'wp-w2');
        await untilStatus(agent, 'write-behind drained', (s) => s.warmPool!.writeBehindDepth === 0);

        phase('calls');
        const { api: n, cli } = await verifyHistory(db, serve.url, log, before, [{ namespace: 'warm', name: 'w1' }]);
        t.diagnostic(
          `${log.attachments.length} holds of ${log.addresses().length} addresses as logged; --at: ${n.inside} inside, ${n.between} between, ${n.outside} outside (API), ${cli.inside + cli.between + cli.outside} through the CLI`,
        );

        // Idle addresses: held by the node's warm handles, by no pod.
        const viaCli = cliReader(db);
        const held = await warmHeld(url);
        const idle = [...held].filter((a) => !log.addresses().includes(a));
        assert.ok(idle.length >= 2, `the warm pool holds idle addresses: ${[...held].join(' ')}`);
        await Promise.all(
          idle.slice(0, 2).map(async (address) => {
            assert.deepEqual(
              (await viaCli.holds(address)).map((h) => h.raw),
              [],
              `idle warm address ${address} was held by nobody`,
            );
            await assertHolderAt(viaCli, address, Date.now(), undefined, 'an idle warm address now');
          }),
        );
        // A pod's address back in the pool: held by nobody after the DEL.
        const freed = log.attachments.find((a) => a.containerId === 'wp-w2')!.addresses[0]!;
        assert.ok(held.has(freed), `${freed} went back to the warm pool`);
        await assertHolderAt(viaCli, freed, Date.now(), undefined, 'a released address back in the warm pool');
        phase('idle');
        t.diagnostic(`ms since the start: ${phases.join(', ')}`);
      } finally {
        await agent?.stop();
        await serve?.stop();
        await etcd?.stop();
        dir.remove();
      }
    },
  );
}
