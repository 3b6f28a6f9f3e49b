/**
 * EtcdRawReader (src/store/etcd/etcd-raw-reader.ts) on a real etcd member: a prefix of more keys
 * than one page is listed whole, in key order, and nothing outside the prefix (a neighbouring
 * prefix, podipam's own /podipam/ keys) is read.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { EtcdRawReader, RAW_PAGE } from '../../src/store/etcd/etcd-raw-reader.js';
import { openStore } from '../../src/store/index.js';
import { etcdPost, startEtcd, type EtcdCluster } from '../helpers/etcd.js';

let etcd: EtcdCluster;
before(async () => {
  etcd = await startEtcd({ members: 1 });
});
after(() => etcd?.stop());

const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');

test('EtcdRawReader lists a prefix across pages, only that prefix', { timeout: 60_000 }, async () => {
  const n = RAW_PAGE * 2 + 7;
  const keys = Array.from({ length: n }, (_, i) => `/calico/ipam/v2/handle/h-${String(i).padStart(5, '0')}`);
  for (let i = 0; i < keys.length; i += 100) {
    const success = keys.slice(i, i + 100).map((k) => ({ request_put: { key: b64(k), value: b64(`{"block":{},"n":"${k}"}`) } }));
    await etcdPost(etcd.members[0]!, 'kv/txn', { success });
  }
  await etcdPost(etcd.members[0]!, 'kv/put', { key: b64('/calico/ipam/v2/handlex'), value: b64('outside') });
  const store = await openStore(etcd.url);
  try {
    await store.txn([], [{ type: 'put', key: 'pools/p', value: '{}' }]);
  } finally {
    await store.close();
  }
  const reader = await EtcdRawReader.open(etcd.url);
  try {
    const got = await reader.list('/calico/ipam/v2/handle/');
    assert.equal(got.length, n);
    assert.deepEqual(
      got.map((kv) => kv.key),
      keys,
    );
    assert.equal(got[n - 1]!.value, `{"block":{},"n":"${keys[n - 1]}"}`);
    assert.deepEqual(await reader.list('/nothing/'), []);
  } finally {
    reader.close();
  }
  await assert.rejects(EtcdRawReader.open('sqlite:/tmp/x.db'), /not an etcd URL/);
});
