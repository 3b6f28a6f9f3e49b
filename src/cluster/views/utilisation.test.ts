import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseAddr } from '../../ip/index.js';
import { MemoryStore } from '../../store/memory/memory-store.js';
import { ClusterIpam } from '../service/cluster-ipam.js';

test('utilisation is exact in bigint on a /64 pool, and ipam show reports the same figures', async () => {
  const store = new MemoryStore();
  const ipam = new ClusterIpam(store);
  await ipam.createPool({ name: 'wide', cidr: 'fd00:1::/64', blockSize: 122 });
  await ipam.createPool({ name: 'v4', cidr: '10.1.0.0/24', blockSize: 26 });
  for (let i = 0; i < 3; i++) await ipam.assign({ node: 'a', handle: `net.a${i}.eth0`, auto: 'each-family' });
  await ipam.assign({ node: 'b', handle: 'net.b0.eth0', ips: [parseAddr('fd00:1::ffff:ff05')] });
  const u = await ipam.utilisation();
  const wide = u.pools.find((p) => p.pool.name === 'wide');
  assert.ok(wide);
  // 2^(122-64) blocks of 64 addresses, each without its network and gateway address: 62 usable
  const slots = 2n ** 58n;
  assert.equal(wide.blockSlots, slots);
  assert.equal(wide.blockCapacity, 62n);
  assert.equal(wide.capacity, slots * 62n);
  assert.equal(wide.capacity, 17_870_283_321_406_128_128n);
  assert.equal(wide.allocated, 4n);
  assert.equal(wide.blocks, 2);
  const v4 = u.pools.find((p) => p.pool.name === 'v4');
  assert.deepEqual([v4?.capacity, v4?.allocated, v4?.blocks], [4n * 61n, 3n, 1]);
  assert.equal(u.totals.capacity, slots * 62n + 4n * 61n);
  assert.notEqual(BigInt(Number(wide.capacity) + Number(v4?.capacity)), u.totals.capacity, 'adding up in floats would lose the v4 pool');
  assert.equal(u.totals.allocated, 7n);
  assert.deepEqual(
    u.nodes.map((n) => [n.node, n.blocks, n.allocated]),
    [
      ['a', 2, 6n],
      ['b', 1, 1n],
    ],
  );
  // the CLI's rows are a projection of the same computation
  const shown = await ipam.usage();
  assert.deepEqual(
    shown.pools.map((p) => [p.name, p.capacity, p.allocated]),
    u.pools.map((p) => [p.pool.name, p.capacity, Number(p.allocated)]),
  );
});
