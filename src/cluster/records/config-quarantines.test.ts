/**
 * The pools' quarantines in `config` (config-quarantines.ts): every pool write leaves the list of
 * the pools as they are; a cold release reads it with the handle (no list of the pools) and
 * stamps what it frees as before; a record without the list (an older writer) makes the release
 * list the pools, still stamping.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatPrefix } from '../../ip/index.js';
import { openStore } from '../../store/index.js';
import { decodeBlock } from './block-record.js';
import { ClusterIpam } from '../service/cluster-ipam.js';
import { quarantinesOfConfig } from './config-quarantines.js';
import { BLOCK_PREFIX, CONFIG_KEY } from './keys.js';

const T0 = Date.parse('2026-12-04T12:00:00Z');
const listed = async (ipam: ClusterIpam) =>
  (quarantinesOfConfig(await ipam.store.get(CONFIG_KEY)) ?? []).map((q) => `${formatPrefix(q.space)} ${q.reuseAfterMs}`);

test('every pool write leaves config listing the quarantining pools as they are', async () => {
  const ipam = new ClusterIpam(await openStore('memory:'));
  await ipam.createPool({ name: 'a', cidr: '10.1.0.0/24' });
  assert.deepEqual(await listed(ipam), []);
  await ipam.createPool({ name: 'b', cidr: '10.2.0.0/24', reuseAfter: '5m' });
  assert.deepEqual(await listed(ipam), ['10.2.0.0/24 300000']);
  await ipam.setPoolSettings('a', { reuseAfter: '30s' });
  assert.deepEqual((await listed(ipam)).sort(), ['10.1.0.0/24 30000', '10.2.0.0/24 300000']);
  await ipam.setPoolSettings('b', { reuseAfter: '0' });
  assert.deepEqual(await listed(ipam), ['10.1.0.0/24 30000']);
  await ipam.deletePool('a');
  assert.deepEqual(await listed(ipam), []);
  const settings = await ipam.getSettings();
  assert.ok(!('quarantines' in settings), 'the list is not a setting');
});

for (const old of [false, true]) {
  test(`a cold release on a pool with reuseAfter stamps what it frees, ${old ? 'listing the pools (config from an older writer)' : 'in the round trips it took before reuseAfter (handle and config in one read)'}`, async () => {
    const store = await openStore('memory:');
    const now = (): Date => new Date(T0);
    const ipam = new ClusterIpam(store, { now, writer: 'n1' });
    await ipam.createPool({ name: 'q', cidr: '10.3.0.0/24', blockSize: 28, reuseAfter: '5m' });
    const [a] = await ipam.assign({ node: 'n1', handle: 'net:c1:eth0', auto: { 4: 1 } });
    await ipam.assign({ node: 'n1', handle: 'net:c2:eth0', auto: { 4: 1 } }); // keeps the block
    if (old) {
      const c = (await store.get(CONFIG_KEY))!;
      const o = JSON.parse(c.value) as Record<string, unknown>;
      delete o.quarantines;
      await store.txn([{ key: CONFIG_KEY, rev: c.rev }], [{ type: 'put', key: CONFIG_KEY, value: JSON.stringify(o) }]);
    }
    const before = store.roundTrips;
    const freed = await new ClusterIpam(store, { now, writer: 'n1' }).releaseHandle('net:c1:eth0', 'n1');
    assert.equal(freed.length, 1);
    // handle + config, the block, the txn; an older config adds the list of the pools.
    assert.equal(store.roundTrips - before, old ? 4 : 3);
    const [b] = (await store.list(BLOCK_PREFIX)).map(decodeBlock);
    const ordinal = Number(a!.addr.value - b!.cidr.base);
    assert.equal(b!.released?.get(ordinal), T0, 'the freed address is stamped as released now');
  });
}
