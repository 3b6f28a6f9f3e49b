/**
 * `podipam import host-local` on a data directory written by the reference host-local
 * (Debian containernetworking-plugins): every reservation appears under its container's
 * handle; cluster-mode ADDs that fill the block never return one of them; a cluster-mode DEL
 * of a migrated container frees its adopted addresses.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ClusterIpam } from '../../src/cluster/index.js';
import { formatAddr, parseAddr, parsePrefix, prefixContains } from '../../src/ip/index.js';
import { openStore } from '../../src/store/index.js';
import { HOST_LOCAL_BIN, PODIPAM_BIN, runPlugin, stdoutJson } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';
import { runCli } from './serve-harness.js';

const NET = 'hl-net';

test('import host-local: reservations move under their handles and are never handed out again', { timeout: 90_000 }, async () => {
  const tmp = makeTempDir('import');
  const hlData = join(tmp.path, 'networks');
  const datastore = `sqlite:${join(tmp.path, 'podipam.db')}`;
  try {
    // 1. The reference host-local writes a dual-stack data directory.
    const hlConf = {
      cniVersion: '1.0.0',
      name: NET,
      type: 'bridge',
      ipam: { type: 'host-local', dataDir: hlData, ranges: [[{ subnet: '10.250.0.0/24' }], [{ subnet: 'fd00:250::/120' }]] },
    };
    const attachments = [...['c1', 'c2', 'c3', 'c4', 'c5'].map((id) => [id, 'eth0']), ['c1', 'net1']] as const;
    const held = new Map<string, string[]>(); // handle → addresses host-local gave
    for (const [id, ifname] of attachments) {
      const r = await runPlugin(HOST_LOCAL_BIN, { command: 'ADD', containerId: id, ifname, config: hlConf });
      assert.equal(r.code, 0, r.stdout + r.stderr);
      held.set(
        `${NET}:${id}:${ifname}`,
        stdoutJson(r).ips.map((x: { address: string }) => formatAddr(parseAddr(x.address.split('/')[0] as string))),
      );
    }
    // A pre-2018 file that holds only the container id.
    writeFileSync(join(hlData, NET, '10.250.0.100'), 'legacy1');
    held.set(`${NET}:legacy1:eth0`, ['10.250.0.100']);
    const imported = [...held.values()].flat();
    assert.equal(imported.length, 13);

    // 2. Pools covering the host-local ranges, with small blocks so a few ADDs fill one.
    const store = await openStore(datastore);
    try {
      const ipam = new ClusterIpam(store);
      await ipam.createPool({ name: 'hl-v4', cidr: '10.250.0.0/24', blockSize: 28 });
      await ipam.createPool({ name: 'hl-v6', cidr: 'fd00:250::/120', blockSize: 124 });
    } finally {
      await store.close();
    }

    // 3. Import, with a progress bar forced onto the pipe.
    const imp = await runCli(['--datastore', datastore, 'import', 'host-local', join(hlData, NET), '--node', 'node-a', '--json', '--progress']);
    assert.equal(imp.code, 0, imp.stderr);
    const report = JSON.parse(imp.stdout);
    assert.equal(report.adopted, 13);
    assert.equal(report.failed, 0);
    assert.deepEqual(report.skipped, []);
    assert.match(imp.stderr, /import \[#{28}\] 100% 13\/13/);

    // 4. Every reservation is held by its container's handle.
    const store2 = await openStore(datastore);
    try {
      const ipam = new ClusterIpam(store2);
      for (const [handle, ips] of held) {
        const got = (await ipam.addressesOf(handle))?.map((a) => formatAddr(a.addr)).sort();
        assert.deepEqual(got, [...ips].sort(), handle);
      }
    } finally {
      await store2.close();
    }

    // 5. Importing again changes nothing; an address held by another handle is refused.
    const again = await runCli(['--datastore', datastore, 'import', 'host-local', hlData, '--network', NET, '--node', 'node-a']);
    assert.equal(again.code, 0, again.stderr);
    assert.match(
      again.stdout,
      /13 reservation\(s\) on node node-a: 0 adopted, 13 already held, 0 failed, 0 file\(s\) skipped; 1 legacy file\(s\) without an ifname taken as eth0/,
    );
    const otherDir = join(tmp.path, 'other-net');
    const { mkdirSync } = await import('node:fs');
    mkdirSync(otherDir);
    writeFileSync(join(otherDir, held.get(`${NET}:c2:eth0`)![0]!), 'zzz\r\neth0');
    writeFileSync(join(otherDir, 'not-an-ip'), 'x');
    const clash = await runCli(['--datastore', datastore, 'import', 'host-local', otherDir, '--node', 'node-a']);
    assert.equal(clash.code, 1, clash.stdout + clash.stderr);
    assert.match(clash.stdout, /other-net:zzz:eth0 {2}failed: address 10\.250\.0\.\d+ is not available/);
    assert.match(clash.stderr, /skipping .*not-an-ip: not named after an IP address/);

    // 6. Cluster-mode ADDs on node-a through the real plugin: they fill the imported
    //    addresses' block and never return an imported address.
    const clusterConf = {
      cniVersion: '1.0.0',
      name: 'cluster-net',
      type: 'bridge',
      ipam: { type: 'podipam', datastore, nodeName: 'node-a', pools: ['hl-v4', 'hl-v6'] },
    };
    const given: string[] = [];
    for (let i = 0; i < 16; i++) {
      const r = await runPlugin(PODIPAM_BIN, { command: 'ADD', containerId: `new${i}`, ifname: 'eth0', config: clusterConf });
      assert.equal(r.code, 0, r.stdout + r.stderr);
      given.push(...stdoutJson(r).ips.map((x: { address: string }) => formatAddr(parseAddr(x.address.split('/')[0] as string))));
    }
    assert.equal(given.length, 32);
    assert.equal(new Set(given).size, 32, 'all distinct');
    for (const ip of given) assert.ok(!imported.includes(ip), `ADD returned imported address ${ip}`);
    const firstBlock = parsePrefix('10.250.0.0/28');
    // Ordinals 2…14: the block's network (.0), gateway (.1) and broadcast (.15) are never handed out.
    const freeInFirst = Array.from({ length: 13 }, (_, o) => `10.250.0.${o + 2}`).filter((ip) => !imported.includes(ip));
    const givenInFirst = given.filter((ip) => prefixContains(firstBlock, parseAddr(ip)));
    assert.deepEqual(givenInFirst.sort(), [...freeInFirst].sort(), 'the ADDs used every free address of the imported block');

    // 7. The migrated pod's DEL in cluster mode (same network name) frees what import adopted.
    const hlAsCluster = { ...clusterConf, name: NET };
    const del = await runPlugin(PODIPAM_BIN, { command: 'DEL', containerId: 'c1', ifname: 'eth0', config: hlAsCluster });
    assert.equal(del.code, 0, del.stdout + del.stderr);
    const store3 = await openStore(datastore);
    try {
      assert.equal(await new ClusterIpam(store3).addressesOf(`${NET}:c1:eth0`), undefined);
      assert.equal((await new ClusterIpam(store3).addressesOf(`${NET}:c1:net1`))?.length, 2, 'the other interface keeps its addresses');
    } finally {
      await store3.close();
    }
  } finally {
    tmp.remove();
  }
});
