import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ClusterIpam } from '../../cluster/index.js';
import { loadNodeHeadroom } from '../../cluster/views/node-headroom-load.js';
import { addNode } from '../../controller/add-node.js';
import { openStore } from '../../store/index.js';
import { summarize } from './cluster-summary.js';

test("summary: each node's headroom per family, the same figures the agent's loader computes", async () => {
  const store = await openStore('memory:');
  const ipam = new ClusterIpam(store);
  await ipam.createPool({ name: 'v4', cidr: '10.0.0.0/24', blockSize: 28 });
  await ipam.createPool({ name: 'v6', cidr: 'fd00::/120', blockSize: 124 });
  await addNode(store, { name: 'node-a' });
  for (let i = 0; i < 20; i++) await ipam.assign({ node: 'node-a', handle: `net.a${i}.eth0`, auto: 'each-family' });
  for (let i = 0; i < 3; i++) await ipam.assign({ node: 'node-b', handle: `net.b${i}.eth0`, auto: { 4: 1 } });
  const s = await summarize(store);
  const rows = (name: string) => s.nodes.find((n) => n.name === name)!.headroom.map((h) => [h.family, h.free, h.claimable, h.headroom]);
  // v4 /28 = 13 usable, 16 blocks, 3 claimed; v6 /124 = 14 usable, 16 blocks, 2 claimed
  assert.deepEqual(rows('node-a'), [
    [4, 6, 13 * 13, 6 + 169],
    [6, 8, 14 * 14, 8 + 196],
  ]);
  assert.deepEqual(rows('node-b'), [
    [4, 10, 169, 179],
    [6, 0, 196, 196],
  ]);
  for (const name of ['node-a', 'node-b']) {
    assert.deepEqual(
      (await loadNodeHeadroom(store, name)).map((h) => [h.family, h.free, h.claimable, h.headroom]),
      rows(name),
    );
  }
  await store.close();
});
