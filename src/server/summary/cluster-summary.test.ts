import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ClusterIpam } from '../../cluster/index.js';
import { addNode } from '../../controller/add-node.js';
import { openStore, type Store } from '../../store/index.js';
import { SummaryCache, summarize } from './cluster-summary.js';

async function seeded(): Promise<{ store: Store; ipam: ClusterIpam }> {
  const store = await openStore('memory:');
  const ipam = new ClusterIpam(store);
  await ipam.createPool({ name: 'v4', cidr: '10.0.0.0/24', blockSize: 28 });
  await ipam.createPool({ name: 'v6', cidr: 'fd00::/120', blockSize: 124 });
  await addNode(store, { name: 'node-a' });
  for (let i = 0; i < 20; i++) await ipam.assign({ node: 'node-a', handle: `net.a${i}.eth0`, auto: 'each-family' });
  // node-b never registered: known from its blocks only.
  for (let i = 0; i < 3; i++) await ipam.assign({ node: 'node-b', handle: `net.b${i}.eth0`, auto: { 4: 1 } });
  return { store, ipam };
}

test('summary: per-pool, per-block and per-node counts from one pass', async () => {
  const { store } = await seeded();
  const s = await summarize(store);
  const v4 = s.pools.find((p) => p.name === 'v4')!;
  // Capacity counts usable addresses: a /28 block hands out 13 (network, gateway, broadcast excluded), a /124 block 14.
  assert.deepEqual([v4.capacity, v4.allocated, v4.blocks, v4.blockSlots, v4.blockCapacity], [16n * 13n, 23, 3, 16n, 13]);
  const v6 = s.pools.find((p) => p.name === 'v6')!;
  assert.deepEqual([v6.capacity, v6.allocated, v6.blocks, v6.blockCapacity], [16n * 14n, 20, 2, 14]);
  assert.deepEqual(s.totals, { pools: 2, nodes: 2, blocks: 5, allocated: 43, capacity: 16n * 13n + 16n * 14n });
  assert.deepEqual(
    s.blocks.map((b) => b.capacity),
    [13, 13, 13, 14, 14],
  );
  assert.deepEqual(
    s.nodes.map((n) => [n.name, n.registered, n.blocks, n.allocated]),
    [
      ['node-a', true, 4, 40],
      ['node-b', false, 1, 3],
    ],
  );
  assert.ok(
    s.blocks.every((b, i) => i === 0 || b.prefix.family > s.blocks[i - 1]!.prefix.family || b.prefix.base > s.blocks[i - 1]!.prefix.base),
    'address order',
  );
  assert.equal(
    s.blocks.reduce((n, b) => n + b.allocated, 0),
    43,
  );
});

test('summary cache: shares a pass within the TTL and reads afresh after invalidate', async () => {
  const { store, ipam } = await seeded();
  const cache = new SummaryCache(store, 60_000);
  const [a, b] = await Promise.all([cache.get(), cache.get()]);
  assert.equal(a, b, 'concurrent callers share one pass');
  await ipam.assign({ node: 'node-a', handle: 'net.late.eth0', auto: { 4: 1 } });
  assert.equal((await cache.get()).totals.allocated, 43, 'within the TTL the cached figures stand');
  cache.invalidate();
  assert.equal((await cache.get()).totals.allocated, 44);
});

test('summary cache following the store: a quiet store is not read again past the TTL; a write is seen without invalidate', async () => {
  const { store, ipam } = await seeded();
  const cache = new SummaryCache(store, 1);
  const stop = cache.follow();
  try {
    for (let i = 0; i < 2000 && !cache.following; i++) await new Promise((r) => setTimeout(r, 10));
    assert.ok(cache.following, 'the watch started');
    cache.invalidate();
    const t0 = Date.now();
    const quiet = await cache.get(); // a pass that began while the watch runs
    // past the TTL (1 ms) and past five times the pass, which would also allow reuse
    await new Promise((r) => setTimeout(r, Math.max(50, 6 * (Date.now() - t0))));
    const trips = store.roundTrips;
    assert.equal(await cache.get(), quiet, 'reused past the TTL');
    assert.equal(store.roundTrips, trips, 'no read of a quiet store');
    await ipam.assign({ node: 'node-a', handle: 'net.late.eth0', auto: { 4: 1 } });
    let seen = 0;
    for (let i = 0; i < 500 && seen !== 44; i++) {
      seen = (await cache.get()).totals.allocated;
      if (seen !== 44) await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(seen, 44, 'the write shows without invalidate');
  } finally {
    await stop();
  }
});

test("summary cache fed by another follower (serve's history follower): reused while it follows and nothing changed, read again after a change or once it stopped following", async () => {
  const { store, ipam } = await seeded();
  const cache = new SummaryCache(store, 1);
  assert.equal(cache.following, false);
  // The TTL is at least 5 passes long (a loaded machine's pass is slow): each wait goes past it.
  let took = 0;
  const timedGet = async () => {
    const t0 = Date.now();
    const v = await cache.get();
    took = Math.max(took, Date.now() - t0);
    return v;
  };
  const pastTtl = () => new Promise((r) => setTimeout(r, 5 * took + 50));
  cache.noteChange(true);
  const first = await timedGet();
  await pastTtl();
  const trips = store.roundTrips;
  assert.equal(await cache.get(), first, 'reused past the TTL: the follower saw no change');
  assert.equal(store.roundTrips, trips);
  await ipam.assign({ node: 'node-a', handle: 'net.late.eth0', auto: { 4: 1 } });
  cache.noteChange(true);
  await pastTtl();
  assert.equal((await timedGet()).totals.allocated, 44, 'read again after the change it was told of');
  cache.noteChange(false);
  assert.equal(cache.following, false);
  await timedGet();
  await pastTtl();
  const before = store.roundTrips;
  await cache.get();
  assert.ok(store.roundTrips > before, 'a follower that failed: the TTL rules again');
});
