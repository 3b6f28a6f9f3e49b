import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MemoryStore } from '../../store/memory/memory-store.js';
import { WARM_NETWORK } from '../../model/reserved-network.js';
import { ClusterIpam } from '../service/cluster-ipam.js';

test("gcNode never releases the warm pool's handles, even when asked to GC their network", async () => {
  const ipam = new ClusterIpam(new MemoryStore());
  await ipam.createPool({ name: 'v4', cidr: '10.0.0.0/24', blockSize: 28 });
  const warm = `${WARM_NETWORK}:n1:r1`;
  await ipam.assign({ node: 'n1', handle: warm, attrs: { network: WARM_NETWORK, containerId: 'n1', ifname: 'warm' }, auto: { 4: 3 } });
  await ipam.assign({ node: 'n1', handle: 'net:c1:eth0', attrs: { network: 'net', containerId: 'c1', ifname: 'eth0' }, auto: { 4: 1 } });
  const r = await ipam.gcNode('n1', WARM_NETWORK, new Set());
  assert.deepEqual(r, { released: [], failed: [] });
  assert.equal((await ipam.addressesOf(warm))?.length, 3);
  // The same call for another network still releases what the runtime no longer lists.
  assert.equal((await ipam.gcNode('n1', 'net', new Set())).released.length, 1);
  assert.equal((await ipam.addressesOf('net:c1:eth0'))?.length ?? 0, 0);
});
