/**
 * Cluster-mode handles through the real binary on a SQLite file: network `net.a` + container
 * `c1` and network `net` + container `a.c1`, which a plain dotted handle would confuse, get
 * handles, addresses and DELs of their own; records written under the dotted ids of older
 * versions are still found by DEL, CHECK and GC — for their own attachment only.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { PODIPAM_BIN, type PluginCall, type PluginRun, clusterCall, runCliSync, runPluginSync } from '../helpers/plugin.js';
import { withTempDir } from '../helpers/tmp.js';
import { openStore } from '../../src/store/index.js';
import { ClusterIpam } from '../../src/cluster/index.js';
import { handleKey } from '../../src/cluster/records/keys.js';
import { formatAddr } from '../../src/ip/index.js';

const NODE = 'node-h';

const run = (c: PluginCall): PluginRun => runPluginSync(PODIPAM_BIN, c);
const ok = (r: PluginRun, what: string) => assert.equal(r.code, 0, `${what}: ${r.stdout}${r.stderr}`);
const addressOf = (r: PluginRun): string => (JSON.parse(r.stdout) as { ips: { address: string }[] }).ips[0]!.address.split('/')[0]!;
const codeOf = (r: PluginRun): number => (JSON.parse(r.stdout) as { code: number }).code;
const gcCall = (network: string, db: string, cacheDir: string, valid: readonly string[]): PluginCall => ({
  command: 'GC',
  config: {
    cniVersion: '1.1.0',
    name: network,
    ipam: { type: 'podipam', datastore: db, nodeName: NODE, cacheDir },
    'cni.dev/valid-attachments': valid.map((containerID) => ({ containerID, ifname: 'eth0' })),
  },
});

test('cluster mode: net.a + c1 and net + a.c1 get different addresses; DEL of one keeps the other', () =>
  withTempDir('cluster-handles', (dir) => {
    const db = `sqlite:${join(dir, 'ipam.db')}`;
    const cache = join(dir, 'cache');
    const created = runCliSync(db, ['pool', 'create', 'h-v4', '--cidr', '10.71.0.0/24', '--block-size', '28']);
    assert.equal(created.code, 0, created.stderr);
    const addA = run(clusterCall('net.a', db, cache, 'ADD', 'c1', NODE));
    const addB = run(clusterCall('net', db, cache, 'ADD', 'a.c1', NODE));
    ok(addA, 'ADD net.a/c1');
    ok(addB, 'ADD net/a.c1');
    assert.notEqual(addressOf(addA), addressOf(addB), 'two attachments, two addresses');

    ok(run(clusterCall('net', db, cache, 'DEL', 'a.c1', NODE)), 'DEL net/a.c1');
    ok(run(clusterCall('net.a', db, cache, 'CHECK', 'c1', NODE)), 'net.a/c1 still holds its address after the other DEL');
    assert.equal(codeOf(run(clusterCall('net', db, cache, 'CHECK', 'a.c1', NODE))), 102);
    const shown = JSON.parse(runCliSync(db, ['ipam', 'show', '--json']).stdout) as { items: { allocated: number }[] };
    assert.equal(shown.items[0]!.allocated, 1);
  }));

test('cluster mode: records under old dotted handles are found by DEL, CHECK and GC of their own attachment only', () =>
  withTempDir('cluster-legacy', async (dir) => {
    const db = `sqlite:${join(dir, 'ipam.db')}`;
    const cache = join(dir, 'cache');
    // What the plugin wrote before the change: handle "<network>.<containerId>.<ifname>" with the attachment's attributes.
    const store = await openStore(db);
    const legacy: Record<string, string> = {};
    try {
      const ipam = new ClusterIpam(store);
      await ipam.createPool({ name: 'l-v4', cidr: '10.72.0.0/24', blockSize: 28 });
      for (const [network, containerId] of [
        ['leg.a', 'c1'],
        ['leg3', 'c5'],
      ] as const) {
        const [a] = await ipam.assign({
          node: NODE,
          handle: `${network}.${containerId}.eth0`,
          auto: { 4: 1 },
          attrs: { network, containerId, ifname: 'eth0' },
        });
        legacy[`${network}.${containerId}.eth0`] = formatAddr(a!.addr);
      }
    } finally {
      await store.close();
    }
    const exists = async (handle: string) => {
      const s = await openStore(db);
      try {
        return (await s.get(handleKey(handle))) !== undefined;
      } finally {
        await s.close();
      }
    };

    // CHECK finds the old record; prevResult's address must be the one it holds.
    const check = clusterCall('leg.a', db, cache, 'CHECK', 'c1', NODE);
    ok(
      run({ ...check, config: { ...(check.config as object), prevResult: { cniVersion: '1.0.0', ips: [{ address: `${legacy['leg.a.c1.eth0']}/24` }] } } }),
      'CHECK leg.a/c1',
    );

    // The colliding attachment (network "leg", container "a.c1") must not touch it.
    ok(run(clusterCall('leg', db, cache, 'DEL', 'a.c1', NODE)), 'DEL leg/a.c1');
    assert.ok(await exists('leg.a.c1.eth0'), 'DEL of leg/a.c1 released the record of leg.a/c1');
    assert.equal(codeOf(run(clusterCall('leg', db, cache, 'CHECK', 'a.c1', NODE))), 102);

    // GC keeps it while its attachment is listed, releases it when not.
    ok(run(gcCall('leg.a', db, cache, ['c1'])), 'GC leg.a keeping c1');
    assert.ok(await exists('leg.a.c1.eth0'), 'GC released a listed attachment');
    ok(run(gcCall('leg.a', db, cache, [])), 'GC leg.a');
    assert.equal(await exists('leg.a.c1.eth0'), false, 'GC kept an attachment nobody lists');

    // DEL of its own attachment releases an old record.
    ok(run(clusterCall('leg3', db, cache, 'DEL', 'c5', NODE)), 'DEL leg3/c5');
    assert.equal(await exists('leg3.c5.eth0'), false, 'DEL did not release the old record of its attachment');
    const shown = JSON.parse(runCliSync(db, ['ipam', 'show', '--json']).stdout) as { items: { allocated: number }[] };
    assert.equal(shown.items[0]!.allocated, 0);
  }));
