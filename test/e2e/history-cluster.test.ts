/**
 * Allocation history end to end, cluster mode through the built per-pod plugin, on a SQLite
 * datastore file and on a real etcd: `podipam serve` follows the datastore (history on) while
 * pods come and go on one node — an address freed by DEL is given to another pod (forced: the
 * block has five addresses), a pod is recreated under a new container id, a CNI GC releases an
 * attachment its valid list leaves out, serve's GC releases the pod of a deleted node. The test
 * logs every call (start, end, pod, container id, addresses answered); `podipam ipam history
 * ADDRESS -o json` must then show exactly those holders, in order, each from within its ADD's
 * [start, end] and until within its release's [start, end] (ms, the writers' clock), with the
 * release's reason; `--at` inside a hold, between two holds and outside them; `--pod NS/NAME`
 * lists every address the pod had; the API answers the same.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startEtcd } from '../helpers/etcd.js';
import { CallLog, untilHistoryLive, verifyHistory } from '../helpers/history-log.js';
import { type Runner, WEB, forPod, loggedAdd, reuseScenario } from '../helpers/history-scenario.js';
import { PODIPAM_BIN, clusterCall, runCliSync, runPlugin } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';
import { openStore } from '../../src/store/index.js';
import { runCli, startServe, type ServeProcess, waitFor } from './serve-harness.js';

const NODE = 'hist-n1';

/** The datastore's handle keys naming `containerId`. */
async function handlesOf(url: string, containerId: string): Promise<string[]> {
  const store = await openStore(url);
  try {
    return (await store.list('handles/')).map((e) => e.key).filter((k) => k.includes(containerId));
  } finally {
    await store.close();
  }
}
const NETWORK = 'hist';

for (const kind of ['sqlite', 'etcd'] as const) {
  test(
    `history on ${kind}, per-pod plugin: holders and intervals exactly as called (DEL, reuse, recreation, CNI GC, serve GC); --at inside, between, outside; --pod`,
    { timeout: 180_000 },
    async (t) => {
      const etcd = kind === 'etcd' ? await startEtcd({ members: 1 }) : undefined;
      const dir = makeTempDir('history-cluster');
      let serve: ServeProcess | undefined;
      try {
        const url = etcd ? etcd.url : `sqlite:${join(dir.path, 'ds.db')}`;
        // Two /29 blocks of 5 usable addresses each: one for the node, one for the doomed node.
        const created = runCliSync(url, ['pool', 'create', 'hist-v4', '--cidr', '10.231.0.0/28', '--block-size', '29']);
        assert.equal(created.code, 0, created.stderr);
        const db = join(dir.path, 'history.db');
        serve = await startServe({
          env: { PODIPAM_DATASTORE: url },
          args: ['--no-default-pools', '--no-controller', '--gc-interval', '100ms', '--gc-grace', '300ms', '--history-db', db],
        });
        const cache = join(dir.path, 'cache');
        const run: Runner = (command, containerId, pod) => runPlugin(PODIPAM_BIN, forPod(clusterCall(NETWORK, url, cache, command, containerId, NODE), pod));
        const log = new CallLog();
        const before = await untilHistoryLive(db);
        await sleep(30);

        const { held, reused } = await reuseScenario(run, log, 'pp');

        // CNI GC: the runtime's valid list leaves out e.
        const victim = held.find((id) => id.endsWith('-e')) as string;
        const gcStart = Date.now();
        const gc = await runPlugin(PODIPAM_BIN, {
          command: 'GC',
          config: {
            cniVersion: '1.1.0',
            name: NETWORK,
            ipam: { type: 'podipam', datastore: url, nodeName: NODE, cacheDir: cache },
            'cni.dev/valid-attachments': held.filter((id) => id !== victim).map((containerID) => ({ containerID, ifname: 'eth0' })),
          },
        });
        assert.equal(gc.code, 0, `GC: ${gc.stdout}${gc.stderr}`);
        log.released(victim, 'cni-gc', gcStart, Date.now());

        // serve's GC: a pod of a node that is then deleted.
        const ds = ['--datastore', url];
        assert.equal((await runCli([...ds, 'node', 'add', 'hist-gone'])).code, 0);
        const gonePod = { namespace: 'shop', name: 'z' };
        const goneRun: Runner = (command, containerId, pod) =>
          runPlugin(PODIPAM_BIN, forPod(clusterCall(NETWORK, url, cache, command, containerId, 'hist-gone'), pod));
        const [z] = await loggedAdd(goneRun, log, gonePod, 'pp-z');
        assert.equal((await handlesOf(url, 'pp-z')).length, 1, 'z holds its address');
        const deleteStart = Date.now();
        const deleted = await runCli([...ds, 'node', 'delete', 'hist-gone']);
        assert.equal(deleted.code, 0, deleted.stderr);
        // The release happened before the history (or the datastore) shows it.
        await waitFor(`serve's GC to release ${z}`, 30_000, async () => ((await handlesOf(url, 'pp-z')).length === 0 ? true : undefined));
        log.released('pp-z', 'cluster-gc', deleteStart, Date.now());

        const { shown, api: n, cli } = await verifyHistory(db, serve.url, log, before, [WEB]);
        for (const address of reused) {
          const holds = shown.get(address)!;
          assert.ok(holds.length >= 2, `${address} was reused: ${JSON.stringify(holds.map((h) => h.raw))}`);
          assert.ok(holds[0]!.until!.at <= holds[1]!.from.at, `${address}: the first holder's release comes before the second's assignment`);
        }
        t.diagnostic(
          `${log.attachments.length} holds of ${log.addresses().length} addresses as logged; --at: ${n.inside} inside, ${n.between} between, ${n.outside} outside (API), ${cli.inside + cli.between + cli.outside} through the CLI`,
        );
        assert.ok(n.between >= 2 && cli.between >= 1, 'the reused addresses were asked about between their holders');
        assert.equal(log.ofPod(WEB).length, 2, 'web-0 had two incarnations');
        const why = new Set([...shown.values()].flat().map((h) => h.until?.why));
        for (const w of ['del', 'cni-gc', 'cluster-gc']) assert.ok(why.has(w), `a release for ${w} is shown`);
      } finally {
        await serve?.stop();
        await etcd?.stop();
        dir.remove();
      }
    },
  );
}
