import { after, before } from 'node:test';
import { etcdPost, startEtcd, type EtcdCluster, type EtcdMember } from '../../test/helpers/etcd.js';
import { followPrefixSuite } from '../../test/suites/follow-prefix-suite.js';
import { openStore } from './open-store.js';

let etcd: EtcdCluster;
before(async () => {
  etcd = await startEtcd({ members: 1 });
});
after(() => etcd?.stop());

followPrefixSuite('etcd', () => openStore(etcd.url), {
  compact: async (store) => {
    await etcdPost(etcd.members[0] as EtcdMember, 'kv/compaction', { revision: String(await store.revision()) });
  },
});
