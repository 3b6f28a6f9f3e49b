import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MemoryStore } from '../../store/memory/memory-store.js';
import { WARM_NETWORK } from '../../model/reserved-network.js';
import { ClusterIpam } from '../service/cluster-ipam.js';
import { STAMP_PREFIX, decodeStamp } from '../records/history-stamp.js';

test("nodeAttachments: the node's attachments with their creation time, not warm handles nor other nodes'; releaseAttachmentAsSeen frees one only at the revision listed, stamped with the reason", async () => {
  const store = new MemoryStore();
  const t0 = Date.parse('2026-12-04T08:00:00Z');
  const ipam = new ClusterIpam(store, { now: () => new Date(t0), writer: 'n1' });
  await ipam.createPool({ name: 'v4', cidr: '10.0.0.0/24', blockSize: 28 });
  await ipam.assign({ node: 'n1', handle: `${WARM_NETWORK}:n1:r1`, attrs: { network: WARM_NETWORK, containerId: 'n1', ifname: 'warm' }, auto: { 4: 2 } });
  await ipam.assign({ node: 'n1', handle: 'net:c1:eth0', attrs: { network: 'net', containerId: 'c1', ifname: 'eth0' }, auto: { 4: 1 } });
  await ipam.assign({ node: 'n1', handle: 'net:c2:eth0', attrs: { network: 'net', containerId: 'c2', ifname: 'eth0' }, auto: { 4: 1 } });
  await ipam.assign({ node: 'n2', handle: 'net:c9:eth0', attrs: { network: 'net', containerId: 'c9', ifname: 'eth0' }, auto: { 4: 1 } });
  const listed = await ipam.nodeAttachments('n1');
  assert.deepEqual(
    listed.map((a) => [a.handle, a.containerId, a.ifname, a.network, a.since]),
    [
      ['net:c1:eth0', 'c1', 'eth0', 'net', t0],
      ['net:c2:eth0', 'c2', 'eth0', 'net', t0],
    ],
  );
  const [c1, c2] = listed;
  // c2's record changes after it was listed (another address added): not released.
  await ipam.assign({ node: 'n1', handle: 'net:c2:eth0', attrs: { network: 'net', containerId: 'c2', ifname: 'eth0' }, auto: { 4: 2 } });
  assert.equal(await ipam.withReason('runtime-absent').releaseAttachmentAsSeen(c2!.handle, c2!.rev), undefined);
  assert.equal((await ipam.addressesOf('net:c2:eth0'))?.length, 2);
  const freed = await ipam.withReason('runtime-absent').releaseAttachmentAsSeen(c1!.handle, c1!.rev);
  assert.equal(freed?.length, 1);
  assert.equal((await ipam.addressesOf('net:c1:eth0'))?.length ?? 0, 0);
  const stamp = (await store.list(STAMP_PREFIX)).find((e) => e.key === `${STAMP_PREFIX}n1`)!;
  assert.equal(decodeStamp(stamp.key, stamp.value).why, 'runtime-absent');
  assert.equal((await ipam.addressesOf(`${WARM_NETWORK}:n1:r1`))?.length, 2);
});
