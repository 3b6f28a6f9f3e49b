import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryStore } from '../store/memory/memory-store.js';
import { addNode } from './add-node.js';
import { assignBatch, type BatchItem } from './assign-batch.js';
import { listNodes } from './list-nodes.js';

async function items(store: MemoryStore, cidrs: Record<string, string>): Promise<BatchItem[]> {
  return (await listNodes(store)).map(({ record, rev }) => ({
    rev,
    next: { ...record, podCIDRs: [cidrs[record.name] as string] },
    claims: [cidrs[record.name] as string],
  }));
}

test('assignBatch records every node in one transaction, or none, naming claims held by others', async () => {
  const store = new MemoryStore();
  for (const n of ['a', 'b', 'c']) await addNode(store, { name: n });
  const rt = store.roundTrips;
  const ok = await assignBatch(store, await items(store, { a: '10.0.0.0/24', b: '10.0.1.0/24', c: '10.0.2.0/24' }));
  assert.equal(store.roundTrips - rt, 2, 'one listing + one txn');
  assert.ok(ok.every((o) => o.ok));
  assert.equal((await store.list('nodecidrs/')).length, 3);

  for (const n of ['d', 'e']) await addNode(store, { name: n });
  const pending = (await items(store, { a: 'x', b: 'x', c: 'x', d: '10.0.1.0/24', e: '10.0.3.0/24' })).slice(3);
  const lost = await assignBatch(store, pending);
  assert.deepEqual(lost, [
    { ok: false, claimedBy: new Map([['10.0.1.0/24', 'b']]) },
    { ok: false, claimedBy: new Map() },
  ]);
  assert.deepEqual(
    (await listNodes(store)).filter((n) => n.record.podCIDRs.length).map((n) => n.record.name),
    ['a', 'b', 'c'],
    'e was not written either',
  );
  await assert.rejects(
    assignBatch(
      store,
      Array.from({ length: 65 }, () => pending[1] as BatchItem),
    ),
    /at most 128/,
  );
});
