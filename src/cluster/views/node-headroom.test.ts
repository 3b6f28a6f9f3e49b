import assert from 'node:assert/strict';
import { test } from 'node:test';
import { encodeNodeRecord, nodeKey } from '../../model/node-record.js';
import { MemoryStore } from '../../store/memory/memory-store.js';
import { ClusterIpam } from '../service/cluster-ipam.js';
import { PoolExhaustedError } from '../records/errors.js';
import { loadNodeHeadroom } from './node-headroom-load.js';
import type { FamilyHeadroom } from './node-headroom.js';

async function rig(settings: Parameters<ClusterIpam['updateSettings']>[0] = {}): Promise<{ store: MemoryStore; ipam: ClusterIpam }> {
  const store = new MemoryStore();
  const ipam = new ClusterIpam(store);
  await ipam.updateSettings({ strictAffinity: true, ...settings });
  return { store, ipam };
}

let seq = 0;
/** ADDs on `node` until the allocator answers exhausted: the addresses it really had. */
async function fill(ipam: ClusterIpam, node: string, family: 4 | 6 = 4): Promise<number> {
  for (let n = 0; ; n++) {
    try {
      await ipam.assign({ node, handle: `net.fill${seq++}.eth0`, auto: { [family]: 1 } });
    } catch (e) {
      assert.ok(e instanceof PoolExhaustedError, String(e));
      return n;
    }
    assert.ok(n < 10_000);
  }
}

const v4 = async (store: MemoryStore, node: string, o?: Parameters<typeof loadNodeHeadroom>[2]): Promise<FamilyHeadroom> => {
  const h = (await loadNodeHeadroom(store, node, o)).find((f) => f.family === 4);
  assert.ok(h, `no IPv4 headroom for ${node}`);
  return h;
};

test('own blocks and claimable blocks bounded by maxBlocksPerHost: headroom is what the allocator then hands out', async () => {
  const { store, ipam } = await rig({ maxBlocksPerHost: 1 });
  await ipam.createPool({ name: 'p', cidr: '10.0.0.0/24', blockSize: 28 });
  // a /28 hands out 13 addresses (network, gateway, broadcast excluded); none claimed yet
  let h = await v4(store, 'a');
  assert.deepEqual(
    [h.free, h.claimable, h.claimableBlocks, h.headroom, h.blocks, h.maxBlocks, h.claimLimit, h.mayBorrow],
    [0, 13, 1, 13, 0, 1, 'maxBlocksPerHost', false],
  );
  for (let i = 0; i < 5; i++) await ipam.assign({ node: 'a', handle: `net.a${i}.eth0`, auto: { 4: 1 } });
  h = await v4(store, 'a');
  assert.deepEqual([h.free, h.claimable, h.headroom, h.blocks], [8, 0, 8, 1]);
  assert.equal(await fill(ipam, 'a'), 8);
  h = await v4(store, 'a');
  assert.deepEqual([h.free, h.claimable, h.headroom], [0, 0, 0]);
  // another node still has its own block to claim
  assert.equal((await v4(store, 'b')).headroom, 13);
  // no IPv6 pool: no IPv6 row
  assert.deepEqual(
    (await loadNodeHeadroom(store, 'a')).map((f) => f.family),
    [4],
  );
});

test('claimable blocks bounded by the pool space: blocks other nodes claimed are not counted', async () => {
  const { store, ipam } = await rig();
  await ipam.createPool({ name: 'small', cidr: '10.1.0.0/26', blockSize: 28 }); // 4 blocks
  await ipam.assign({ node: 'x', handle: 'net.x.eth0', auto: { 4: 1 } });
  await ipam.assign({ node: 'y', handle: 'net.y.eth0', auto: { 4: 1 } });
  const h = await v4(store, 'a');
  assert.deepEqual([h.free, h.claimableBlocks, h.claimable, h.claimLimit, h.maxBlocks], [0, 2, 26, 'pool space', 20]);
  assert.equal(await fill(ipam, 'a'), 26);
  assert.equal((await v4(store, 'a')).headroom, 0);
  // x: 12 free in its block, no block left to claim
  const x = await v4(store, 'x');
  assert.deepEqual([x.free, x.claimable, x.headroom], [12, 0, 12]);
});

test('reserved addresses are not headroom: a wholly reserved block is not claimable, a partly reserved one counts what is left', async () => {
  const { store, ipam } = await rig();
  await ipam.createPool({ name: 'r', cidr: '10.2.0.0/26', blockSize: 28 }); // blocks .0, .16, .32, .48
  await ipam.putReservation('infra', ['10.2.0.0/28', '10.2.0.20/30', '10.2.0.52']);
  const h = await v4(store, 'a');
  // .0/28 wholly reserved; .16/28 loses 4 (9 left), .48/28 loses 1 (12 left), .32/28 whole (13)
  assert.deepEqual([h.claimableBlocks, h.claimable, h.headroom], [3, 9 + 12 + 13, 34]);
  await ipam.updateSettings({ maxBlocksPerHost: 2 });
  // the node might claim the two smallest: a lower bound
  assert.deepEqual([(await v4(store, 'a')).claimable], [9 + 12]);
  await ipam.updateSettings({ maxBlocksPerHost: 0 });
  assert.equal(await fill(ipam, 'a'), 34);
  const after = await v4(store, 'a');
  assert.deepEqual([after.free, after.blocks, after.headroom], [0, 3, 0]);
  // a reservation made after the claim counts in the node's own block too
  const { store: s2, ipam: i2 } = await rig({ maxBlocksPerHost: 1 });
  await i2.createPool({ name: 'p', cidr: '10.3.0.0/28', blockSize: 28 });
  await i2.assign({ node: 'a', handle: 'net.a.eth0', auto: { 4: 1 } });
  await i2.putReservation('late', ['10.3.0.10/31']);
  assert.deepEqual([(await v4(s2, 'a')).free], [10]);
  assert.equal(await fill(i2, 'a'), 10);
});

test('a pool whose nodeSelector does not select the node gives it no headroom; one that does counts; disabled pools and other pools (onlyPools) do not', async () => {
  const { store, ipam } = await rig({ maxBlocksPerHost: 1 });
  await ipam.createPool({ name: 'zone-a', cidr: '10.4.0.0/24', blockSize: 28, nodeSelector: 'zone=a' });
  assert.deepEqual(await loadNodeHeadroom(store, 'n1'), []);
  await store.txn(
    [],
    [{ type: 'put', key: nodeKey('n1'), value: encodeNodeRecord({ name: 'n1', labels: { zone: 'a' }, podCIDRs: [], createdAt: '2026-01-01T00:00:00.000Z' }) }],
  );
  const h = await v4(store, 'n1');
  assert.deepEqual([h.pools, h.headroom], [['zone-a'], 13]);
  await ipam.createPool({ name: 'all', cidr: '10.5.0.0/24', blockSize: 26 });
  await ipam.setPoolDisabled('zone-a', true);
  assert.deepEqual([(await v4(store, 'n1')).pools, (await v4(store, 'n1')).headroom], [['all'], 61]);
  await ipam.setPoolDisabled('zone-a', false);
  assert.deepEqual((await v4(store, 'n1', { onlyPools: ['zone-a'] })).pools, ['zone-a']);
  // the per-host limit counts the blocks of every candidate pool: one block in all
  assert.equal((await v4(store, 'n1')).claimableBlocks, 1);
});

test('idle addresses count; autoAllocateBlocks off claims nothing; an IPv6 /64 pool is bounded by the limit, in no time', async () => {
  const { store, ipam } = await rig({ autoAllocateBlocks: false });
  await ipam.createPool({ name: 'p', cidr: '10.6.0.0/24', blockSize: 28 });
  await ipam.createPool({ name: 'w', cidr: 'fd00:6::/64', blockSize: 122 });
  const h = await loadNodeHeadroom(store, 'a', { idle: { 4: 3 } });
  assert.deepEqual(
    h.map((f) => [f.family, f.free, f.idle, f.claimable, f.headroom, f.claimLimit]),
    [
      [4, 0, 3, 0, 3, 'autoAllocateBlocks off'],
      [6, 0, 0, 0, 0, 'autoAllocateBlocks off'],
    ],
  );
  await ipam.updateSettings({ autoAllocateBlocks: true, strictAffinity: false });
  const t0 = Date.now();
  const six = (await loadNodeHeadroom(store, 'a')).find((f) => f.family === 6)!;
  assert.ok(Date.now() - t0 < 500);
  assert.deepEqual([six.claimableBlocks, six.claimable, six.mayBorrow], [20, 20 * 62, true]);
});
