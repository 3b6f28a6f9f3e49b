/**
 * Allocation history end to end through the native shim and a node agent (cluster mode, no warm
 * pool), on a SQLite datastore file and on a real etcd: `podipam serve` follows the datastore
 * while pods come and go (an address freed by DEL given to another pod — forced, the node's block
 * has five addresses —, a pod recreated under a new container id). The test logs every call;
 * `podipam ipam history ADDRESS -o json` shows exactly those holders and intervals (each from
 * within its ADD's [start, end], until within its DEL's), `--at` inside, between and outside
 * holds, `--pod` every address of the pod.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type RunningAgent, SHIM_BIN, requireShim, startAgent } from '../helpers/agent.js';
import { startEtcd } from '../helpers/etcd.js';
import { CallLog, untilHistoryLive, verifyHistory } from '../helpers/history-log.js';
import { type Runner, WEB, forPod, reuseScenario } from '../helpers/history-scenario.js';
import { runCliSync, runPlugin } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';
import { type ServeProcess, startServe } from './serve-harness.js';

const NODE = 'hist-a1';

for (const kind of ['sqlite', 'etcd'] as const) {
  test(
    `history on ${kind}, shim + agent: holders and intervals exactly as called (DEL, reuse, recreation); --at inside, between, outside; --pod`,
    { timeout: 180_000 },
    async (t) => {
      requireShim();
      const etcd = kind === 'etcd' ? await startEtcd({ members: 1 }) : undefined;
      const dir = makeTempDir('history-agent');
      let serve: ServeProcess | undefined;
      let agent: RunningAgent | undefined;
      try {
        const url = etcd ? etcd.url : `sqlite:${join(dir.path, 'ds.db')}`;
        const created = runCliSync(url, ['pool', 'create', 'hist-a4', '--cidr', '10.233.0.0/29', '--block-size', '29']);
        assert.equal(created.code, 0, created.stderr);
        const db = join(dir.path, 'history.db');
        serve = await startServe({ env: { PODIPAM_DATASTORE: url }, args: ['--no-default-pools', '--no-controller', '--history-db', db] });
        const socket = join(dir.path, 'run', 'agent.sock');
        agent = await startAgent(socket, ['--node', NODE, '--datastore', url, '--data-dir', join(dir.path, 'agent')]);
        const run: Runner = (command, containerId, pod) =>
          runPlugin(
            SHIM_BIN,
            forPod(
              {
                command,
                containerId,
                ifname: 'eth0',
                config: { cniVersion: '1.0.0', name: 'hist-agent', ipam: { type: 'podipam', datastore: url, nodeName: NODE } },
                env: { PODIPAM_AGENT_SOCKET: socket, PODIPAM_PLUGIN: '' },
              },
              pod,
            ),
          );
        const log = new CallLog();
        const before = await untilHistoryLive(db);
        await sleep(30);
        await reuseScenario(run, log, 'sa');
        const s = await agent.status();
        assert.ok((s.backends.cluster ?? 0) > 0, `the agent served the calls in cluster mode: ${JSON.stringify(s.backends)}`);

        const { api: n, cli } = await verifyHistory(db, serve.url, log, before, [WEB]);
        t.diagnostic(
          `${log.attachments.length} holds of ${log.addresses().length} addresses as logged; --at: ${n.inside} inside, ${n.between} between, ${n.outside} outside (API), ${cli.inside + cli.between + cli.outside} through the CLI`,
        );
        assert.ok(n.between >= 2 && cli.between >= 1, 'the reused addresses were asked about between their holders');
      } finally {
        await agent?.stop();
        await serve?.stop();
        await etcd?.stop();
        dir.remove();
      }
    },
  );
}
