import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ClusterIpam } from '../service/cluster-ipam.js';
import { handleKey } from '../records/keys.js';
import { parseAddr } from '../../ip/index.js';
import { openStore } from '../../store/index.js';

test('handlesOfPod, holderOfAddress, podsOfHandles: pods as the handle records name them', async () => {
  const store = await openStore('memory:');
  try {
    const ipam = new ClusterIpam(store);
    await ipam.createPool({ name: 'p', cidr: '10.7.0.0/24', blockSize: 28 });
    const pod = (ns: string, name: string) => ({ network: 'net', ifname: 'eth0', namespace: ns, pod: name, podUid: `${ns}-${name}` });
    await ipam.assign({ node: 'n1', handle: 'net:a:eth0', ips: [parseAddr('10.7.0.5')], attrs: pod('shop', 'web') });
    await ipam.assign({ node: 'n1', handle: 'net:a:net1', ips: [parseAddr('10.7.0.6')], attrs: { ...pod('shop', 'web'), ifname: 'net1' } });
    await ipam.assign({ node: 'n2', handle: 'net:b:eth0', auto: { 4: 1 }, attrs: pod('other', 'web') });
    await ipam.assign({ node: 'n1', handle: 'anon', ips: [parseAddr('10.7.0.9')] });

    const mine = await ipam.handlesOfPod('shop', 'web');
    assert.deepEqual(
      mine.map((h) => [h.handle, h.pod, h.podUid, h.ifname, h.node, h.addresses.map((a) => `${a.ip} ${a.block} ${a.pool}`)]),
      [
        ['net:a:eth0', 'shop/web', 'shop-web', 'eth0', 'n1', ['10.7.0.5 10.7.0.0/28 p']],
        ['net:a:net1', 'shop/web', 'shop-web', 'net1', 'n1', ['10.7.0.6 10.7.0.0/28 p']],
      ],
    );
    assert.deepEqual(
      (await ipam.handlesOfPod(undefined, 'web')).map((h) => h.pod),
      ['shop/web', 'shop/web', 'other/web'],
      'by name, any namespace',
    );
    assert.deepEqual(await ipam.handlesOfPod('shop', 'nobody'), []);

    const h = await ipam.holderOfAddress(parseAddr('10.7.0.6'));
    assert.deepEqual([h?.ip, h?.block, h?.handle, h?.pod, h?.node], ['10.7.0.6', '10.7.0.0/28', 'net:a:net1', 'shop/web', 'n1']);
    const anon = await ipam.holderOfAddress(parseAddr('10.7.0.9'));
    assert.deepEqual([anon?.handle, anon?.pod], ['anon', null]);
    assert.equal(await ipam.holderOfAddress(parseAddr('10.7.0.10')), undefined, 'free');
    assert.equal(await ipam.holderOfAddress(parseAddr('192.0.2.1')), undefined, 'in no pool');
    // A leaked allocation (its handle record gone) is still named by its handle and block.
    const e = await store.get(handleKey('anon'));
    await store.txn([{ key: e!.key, rev: e!.rev }], [{ type: 'delete', key: e!.key }]);
    const leak = await ipam.holderOfAddress(parseAddr('10.7.0.9'));
    assert.deepEqual([leak?.handle, leak?.pod, leak?.node, leak?.addresses.map((a) => a.ip)], ['anon', null, 'n1', ['10.7.0.9']]);

    assert.deepEqual(
      [...(await ipam.podsOfHandles(['net:a:eth0', 'net:b:eth0', 'anon', 'gone']))],
      [
        ['net:a:eth0', 'shop/web'],
        ['net:b:eth0', 'other/web'],
      ],
    );
  } finally {
    await store.close();
  }
});
