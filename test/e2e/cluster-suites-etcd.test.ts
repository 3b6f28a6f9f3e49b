/**
 * The cluster service suites (test/suites/cluster-ipam-suite.ts, cluster-admin-suite.ts,
 * cluster-pool-live-suite.ts:
 * assignment, limits, failures, a crash at every round trip, random invariants, check) on
 * real etcd, as src/cluster/service/cluster-ipam.test.ts runs them on memory and SQLite. One etcd
 * member for the file; each test starts from an empty keyspace (every key deleted before its
 * store is opened; the tests of a file run one after another).
 */
import { after, before } from 'node:test';
import { openStore } from '../../src/store/index.js';
import { etcdPost, startEtcd, type EtcdCluster } from '../helpers/etcd.js';
import { clusterAdminSuite } from '../suites/cluster-admin-suite.js';
import { clusterServiceSuite } from '../suites/cluster-ipam-suite.js';
import { clusterIpSetSuite } from '../suites/cluster-ip-set-suite.js';
import { clusterPoolLiveSuite } from '../suites/cluster-pool-live-suite.js';

let etcd: EtcdCluster;
before(async () => {
  etcd = await startEtcd({ members: 1 });
});
after(() => etcd?.stop());

const NUL = Buffer.of(0).toString('base64');
async function freshStore() {
  // key "\0" with range_end "\0": every key.
  await etcdPost(etcd.members[0]!, 'kv/deleterange', { key: NUL, range_end: NUL });
  return openStore(etcd.url, { timeoutMs: 10_000 });
}

clusterServiceSuite('etcd', freshStore);
clusterAdminSuite('etcd', freshStore);
clusterIpSetSuite('etcd', freshStore);
clusterPoolLiveSuite('etcd', freshStore);
