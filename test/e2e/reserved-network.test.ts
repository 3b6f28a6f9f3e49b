/**
 * The warm pool's network name (`podipam-warm`) is reserved at every entry that creates handles:
 * the cluster-mode plugin (`bin/podipam`, ADD and GC), the API of `podipam serve`, and
 * `podipam import host-local`. A cluster-mode GC of that network must not release the agent's
 * warm handles, and no caller can write a handle the agent would adopt as its own.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ClusterIpam } from '../../src/cluster/index.js';
import { HANDLE_PREFIX } from '../../src/cluster/records/keys.js';
import { openStore } from '../../src/store/index.js';
import { PODIPAM_BIN, runPlugin } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';
import { api, runCli, startServe } from './serve-harness.js';

const WARM = 'podipam-warm';

test(
  'cluster-mode plugin: ADD, DEL, CHECK and GC of network "podipam-warm" are code 7 naming the field; the warm handles keep every address',
  { timeout: 60_000 },
  async () => {
    const tmp = makeTempDir('reserved-plugin');
    const datastore = `sqlite:${join(tmp.path, 'podipam.db')}`;
    try {
      const store = await openStore(datastore);
      const warmHandle = `${WARM}:node-a:r1`;
      try {
        const ipam = new ClusterIpam(store);
        await ipam.createPool({ name: 'p4', cidr: '10.231.0.0/24', blockSize: 28 });
        // What the agent's warm pool writes for node-a (warm-service.ts): one refill, three addresses.
        await ipam.assign({ node: 'node-a', handle: warmHandle, attrs: { network: WARM, containerId: 'node-a', ifname: 'warm' }, auto: { 4: 3, 6: 0 } });
      } finally {
        await store.close();
      }
      const conf = { cniVersion: '1.1.0', name: WARM, ipam: { type: 'podipam', datastore, nodeName: 'node-a', cacheDir: join(tmp.path, 'cache') } };
      const gc = await runPlugin(PODIPAM_BIN, { command: 'GC', config: { ...conf, 'cni.dev/valid-attachments': [] } });
      assert.equal(gc.code, 1, gc.stdout + gc.stderr);
      const gcErr = JSON.parse(gc.stdout) as { code: number; msg: string };
      assert.equal(gcErr.code, 7, gc.stdout);
      assert.match(gcErr.msg, /name "podipam-warm"/);
      // The forged handle the agent would adopt: network podipam-warm, container id = the node.
      for (const command of ['ADD', 'DEL', 'CHECK']) {
        const r = await runPlugin(PODIPAM_BIN, { command, containerId: 'node-a', ifname: 'eth0', config: conf });
        assert.equal(r.code, 1, `${command}: ${r.stdout} ${r.stderr}`);
        assert.equal((JSON.parse(r.stdout) as { code: number }).code, 7, `${command}: ${r.stdout}`);
        assert.match(r.stdout, /name \\"podipam-warm\\": reserved/, command);
      }
      const after = await openStore(datastore);
      try {
        const ipam = new ClusterIpam(after);
        assert.equal((await ipam.addressesOf(warmHandle))?.length, 3, 'the warm handle still holds its three addresses');
        assert.deepEqual(
          (await after.list(HANDLE_PREFIX)).map((e) => e.key),
          [`${HANDLE_PREFIX}${warmHandle}`],
          'no handle was written',
        );
      } finally {
        await after.close();
      }
    } finally {
      tmp.remove();
    }
  },
);

test('serve API: POST /api/v1/allocations refuses the reserved network and warm handle ids with 400 naming the field', { timeout: 60_000 }, async () => {
  const s = await startServe();
  try {
    const byNetwork = await api(s.url, 'POST', '/api/v1/allocations', { node: 'node-a', containerId: 'node-a', network: WARM });
    assert.equal(byNetwork.status, 400, JSON.stringify(byNetwork.body));
    assert.equal(byNetwork.body.error.field, 'network');
    assert.match(byNetwork.body.error.message, /"podipam-warm".*reserved/);
    const byHandle = await api(s.url, 'POST', '/api/v1/allocations', { node: 'node-a', handle: `${WARM}:node-a:eth0` });
    assert.equal(byHandle.status, 400, JSON.stringify(byHandle.body));
    assert.equal(byHandle.body.error.field, 'handle');
    assert.match(byHandle.body.error.message, /"podipam-warm:node-a:eth0".*reserved/);
    // The same name elsewhere in a handle is anyone's.
    const other = await api(s.url, 'POST', '/api/v1/allocations', { node: 'node-a', handle: `net1:${WARM}:eth0` });
    assert.equal(other.status, 201, JSON.stringify(other.body));
    const list = await api(s.url, 'GET', '/api/v1/allocations');
    assert.deepEqual([...new Set(list.body.items.map((x: { handle: string }) => x.handle))], [`net1:${WARM}:eth0`]);
  } finally {
    await s.stop();
  }
});

test('import host-local: a network named "podipam-warm" is refused naming it, and nothing is imported', { timeout: 60_000 }, async () => {
  const tmp = makeTempDir('reserved-import');
  const datastore = `sqlite:${join(tmp.path, 'podipam.db')}`;
  try {
    const pool = await runCli(['--datastore', datastore, 'pool', 'create', 'p4', '--cidr', '10.232.0.0/24']);
    assert.equal(pool.code, 0, pool.stderr);
    const data = join(tmp.path, 'networks');
    for (const net of ['ok-net', WARM]) {
      mkdirSync(join(data, net), { recursive: true });
      writeFileSync(join(data, net, '10.232.0.7'), net === WARM ? 'node-a\r\neth0' : 'c1\r\neth0');
    }
    for (const args of [[join(data, WARM)], [data], [data, '--network', WARM]]) {
      const r = await runCli(['--datastore', datastore, 'import', 'host-local', ...args, '--node', 'node-a']);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stdout} ${r.stderr}`);
      assert.match(r.stderr, /network "podipam-warm".*reserved/, args.join(' '));
    }
    const shown = await runCli(['--datastore', datastore, 'ipam', 'show', '--json']);
    assert.equal(shown.code, 0, shown.stderr);
    assert.doesNotMatch(shown.stdout, /10\.232\.0\.7|podipam-warm/, 'nothing was imported');
  } finally {
    tmp.remove();
  }
});
