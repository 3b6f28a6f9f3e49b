import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ClusterIpam } from '../../cluster/index.js';
import { parsePrefix } from '../../ip/index.js';
import { openStore } from '../../store/index.js';
import { listAllocations, type AllocationFilter } from './allocation-query.js';
import { HttpError } from '../http/http-error.js';

async function setup() {
  const store = await openStore('memory:');
  const ipam = new ClusterIpam(store);
  await ipam.createPool({ name: 'v4', cidr: '10.0.0.0/24', blockSize: 29 });
  await ipam.createPool({ name: 'v6', cidr: 'fd00::/120', blockSize: 125 });
  for (let i = 0; i < 20; i++) await ipam.assign({ node: i % 2 ? 'odd' : 'even', handle: `net.c${i}.eth0`, auto: 'each-family' });
  return ipam;
}

async function all(store: Awaited<ReturnType<typeof setup>>, f: Omit<AllocationFilter, 'after'>): Promise<string[]> {
  const out: string[] = [];
  let after: string | undefined;
  for (let i = 0; i < 100; i++) {
    const page = await listAllocations(store, { ...f, after });
    assert.ok(page.items.length <= f.limit);
    out.push(...page.items.map((r) => r.ip));
    if (!page.next) return out;
    after = page.next;
  }
  throw new Error('paging did not end');
}

test('allocation query: pages cover every allocation exactly once, whatever the page size', async () => {
  const store = await setup();
  for (const limit of [1, 3, 7, 100]) {
    const ips = await all(store, { limit });
    assert.equal(ips.length, 40, `limit ${limit}`);
    assert.equal(new Set(ips).size, 40);
  }
});

test('allocation query: filters by node, pool and handle', async () => {
  const store = await setup();
  assert.equal((await all(store, { limit: 4, node: 'odd' })).length, 20);
  const v4 = await all(store, { limit: 5, pool: parsePrefix('10.0.0.0/24') });
  assert.equal(v4.length, 20);
  assert.ok(v4.every((ip) => ip.startsWith('10.0.0.')));
  const h = await listAllocations(store, { limit: 10, handle: 'net.c3.eth0' });
  assert.equal(h.items.length, 2);
  assert.ok(h.items.every((r) => r.handle === 'net.c3.eth0' && r.node === 'odd'));
  assert.deepEqual((await listAllocations(store, { limit: 10, handle: 'nobody' })).items, []);
});

test('allocation query: a malformed cursor is a 400 naming "after"', async () => {
  const store = await setup();
  await assert.rejects(
    listAllocations(store, { limit: 5, after: 'garbage' }),
    (e: unknown) => e instanceof HttpError && e.status === 400 && e.field === 'after',
  );
});
