/**
 * The import applier's suite (test/suites/import-apply-suite.ts) on a real etcd member, as
 * src/import/apply-import-plan.test.ts runs it on memory: and SQLite. Each test starts from an
 * empty keyspace (every key deleted before its store is opened).
 */
import { after, before } from 'node:test';
import { openStore } from '../../src/store/index.js';
import { etcdPost, startEtcd, type EtcdCluster } from '../helpers/etcd.js';
import { importApplySuite } from '../suites/import-apply-suite.js';

let etcd: EtcdCluster;
before(async () => {
  etcd = await startEtcd({ members: 1 });
});
after(() => etcd?.stop());

const NUL = Buffer.of(0).toString('base64');
importApplySuite('etcd', async () => {
  await etcdPost(etcd.members[0]!, 'kv/deleterange', { key: NUL, range_end: NUL });
  return openStore(etcd.url, { timeoutMs: 10_000 });
});
