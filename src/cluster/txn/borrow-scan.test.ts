/**
 * Borrowing at the per-host cap (borrow-scan.ts): the scan's pages cover every block key once
 * from any start, and a node at its cap borrows after reading a page, however many blocks the
 * cluster holds — not a list of every block (counted: entries the store returned).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type Entry, type Store, openStore } from '../../store/index.js';
import { ClusterIpam } from '../service/cluster-ipam.js';
import { PoolExhaustedError } from '../records/errors.js';
import { BORROW_PAGE, BorrowScan } from './borrow-scan.js';

test('from any start the pages hold every block key once, and cover every key between them', async () => {
  const store = await openStore('memory:');
  const keys = Array.from({ length: 10 }, (_, i) => `blocks/10.0.${i}.0-24`).sort();
  await store.txn(
    [],
    [...keys, 'config', 'pools/p'].map((key) => ({ type: 'put' as const, key, value: '{}' })),
  );
  for (const start of ['', keys[0]!, keys[4]!, keys[9]!, 'blocks/10.0.4.5-32', 'blocks/9']) {
    for (const size of [1, 3, 10, 64]) {
      const scan = new BorrowScan(store, start, size);
      const seen: string[] = [];
      const covered = new Set<string>();
      for (let n = 0; !scan.done; n++) {
        assert.ok(n <= 12, `start ${start}, pages of ${size}: the scan ends`);
        const page = await scan.next();
        seen.push(...page.entries.map((e) => e.key));
        for (const k of keys) if (page.covers(k)) covered.add(k);
      }
      assert.deepEqual([...seen].sort(), keys, `start ${JSON.stringify(start)}, pages of ${size}`);
      assert.equal(covered.size, keys.length);
    }
  }
});

/** `store` with a count of the entries its lists returned. */
function counting(store: Store): { store: Store; listed: () => number } {
  let listed = 0;
  const proxy = new Proxy(store, {
    get(target, p, receiver) {
      if (p === 'list')
        return async (prefix: string, o?: object): Promise<Entry[]> => {
          const r = await target.list(prefix, o);
          listed += r.length;
          return r;
        };
      const v: unknown = Reflect.get(target, p, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { store: proxy, listed: () => listed };
}

test('a node at its per-host cap borrows after reading a page of blocks, not every block of the cluster', async () => {
  for (const others of [100, 300]) {
    const { store, listed } = counting(await openStore('memory:'));
    const admin = new ClusterIpam(store);
    await admin.createPool({ name: 'p', cidr: '10.0.0.0/16', blockSize: 28 }); // 13 usable addresses a block
    await admin.updateSettings({ maxBlocksPerHost: 1 });
    for (let n = 0; n < others; n++) await admin.assign({ node: `other-${n}`, handle: `o-${n}`, auto: { 4: 1 } });
    const agent = new ClusterIpam(store);
    for (let i = 0; i < 13; i++) await agent.assign({ node: 'probe', handle: `p-${i}`, auto: { 4: 1 } });
    const before = listed();
    const [got] = await agent.assign({ node: 'probe', handle: 'borrower', auto: { 4: 1 } });
    const read = listed() - before;
    assert.ok(got, 'the 14th address was borrowed');
    assert.ok(read <= BORROW_PAGE, `with ${others} other nodes' blocks the borrow listed ${read} blocks`);
    const check = await agent.check();
    assert.deepEqual({ leaks: check.leaks, problems: check.problems }, { leaks: [], problems: [] });
  }
});

test('in a full pool the scan reads every block, then the ADD is refused as exhausted', async () => {
  const store = await openStore('memory:');
  const admin = new ClusterIpam(store);
  await admin.createPool({ name: 'p', cidr: '10.0.0.0/26', blockSize: 28 }); // 4 blocks of 13
  await admin.updateSettings({ maxBlocksPerHost: 1 });
  for (let n = 0; n < 4; n++) await admin.assign({ node: `n${n}`, handle: `h${n}`, auto: { 4: 13 } });
  await assert.rejects(admin.assign({ node: 'n4', handle: 'late', auto: { 4: 1 } }), PoolExhaustedError);
  await admin.releaseHandle('h2');
  assert.equal((await admin.assign({ node: 'n4', handle: 'late', auto: { 4: 1 } })).length, 1, 'a freed address is borrowed');
});

test('a full pool of 256 blocks: the scan pages double and do not count as attempts, so the ADD is refused as exhausted, not contended', async () => {
  const store = await openStore('memory:');
  const admin = new ClusterIpam(store);
  await admin.createPool({ name: 'p', cidr: '10.0.0.0/20', blockSize: 28 }); // 256 blocks of 13
  await admin.updateSettings({ maxBlocksPerHost: 1 });
  for (let n = 0; n < 256; n++) await admin.assign({ node: `n${n}`, handle: `h${n}`, auto: { 4: 13 } });
  const strict = new ClusterIpam(store, { maxAttempts: 2 });
  const before = store.roundTrips;
  // n0 is at its cap (one full block): it can only borrow, and no block has room.
  await assert.rejects(strict.assign({ node: 'n0', handle: 'late', auto: { 4: 1 } }), PoolExhaustedError);
  // Two scans (the refusal is proven on a fresh one) of pages of 64, 128, 256 (+ a short one), and the loads around them.
  const trips = store.roundTrips - before;
  assert.ok(trips <= 20, `${trips} round trips`);
});
