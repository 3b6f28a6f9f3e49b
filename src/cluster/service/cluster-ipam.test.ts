import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { ClusterIpam } from './cluster-ipam.js';
import { BLOCK_PREFIX } from '../records/keys.js';
import { formatPrefix } from '../../ip/index.js';
import { openStore } from '../../store/index.js';
import { clusterAdminSuite } from '../../../test/suites/cluster-admin-suite.js';
import { clusterServiceSuite } from '../../../test/suites/cluster-ipam-suite.js';
import { clusterIpSetSuite } from '../../../test/suites/cluster-ip-set-suite.js';

clusterServiceSuite('memory:', () => openStore('memory:'));
clusterAdminSuite('memory:', () => openStore('memory:'));
clusterIpSetSuite('memory:', () => openStore('memory:'));

const dir = mkdtempSync(join(tmpdir(), 'podipam-cluster-sqlite-'));
let n = 0;
clusterServiceSuite('sqlite:', () => openStore(`sqlite:${join(dir, `t${++n}.db`)}`));
clusterAdminSuite('sqlite:', () => openStore(`sqlite:${join(dir, `t${++n}.db`)}`));
clusterIpSetSuite('sqlite:', () => openStore(`sqlite:${join(dir, `t${++n}.db`)}`));
after(() => rmSync(dir, { recursive: true, force: true }));

test('addresses released by address are seen by the node view of the same instance: the node reuses its block instead of claiming a new one', async () => {
  const store = await openStore('memory:');
  try {
    const ipam = new ClusterIpam(store);
    await ipam.createPool({ name: 'p', cidr: '10.5.0.0/24', blockSize: 29 });
    const first = await ipam.assign({ node: 'n', handle: 'warm-1', auto: { 4: 5 } }); // the block's 5 usable addresses
    assert.equal((await store.list(BLOCK_PREFIX)).length, 1);
    await ipam.releaseAddresses(first.map((a) => a.addr));
    const again = await ipam.assign({ node: 'n', handle: 'warm-2', auto: { 4: 3 } });
    assert.equal((await store.list(BLOCK_PREFIX)).length, 1, 'no second block claimed while the first is empty');
    assert.ok(again.every((a) => formatPrefix(a.block) === formatPrefix(first[0]!.block)));
  } finally {
    await store.close();
  }
});
