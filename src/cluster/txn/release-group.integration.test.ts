/**
 * Group release on a real 3-member etcd (release-group.ts): the grouped releases leave exactly
 * the records the same releases one at a time leave (on memory), in one round trip. Starts etcd,
 * so it is an integration test; the memory and SQLite cases are release-group.test.ts.
 */
import { test } from 'node:test';
import { type Store, openStore } from '../../store/index.js';
import { startEtcd } from '../../../test/helpers/etcd.js';
import { differential } from '../../../test/helpers/release-group-differential.js';

test('a 3-member etcd: the group leaves exactly what single releases leave', { timeout: 120_000 }, async () => {
  const etcd = await startEtcd({ members: 3 });
  const stores: Store[] = [];
  try {
    const a = await openStore(etcd.url);
    stores.push(a);
    const b = await openStore('memory:');
    stores.push(b);
    await differential(a, b, '5m');
  } finally {
    for (const s of stores) await s.close();
    await etcd.stop();
  }
});
