import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatAddr } from '../ip/index.js';
import { MemoryStore } from '../store/memory/memory-store.js';
import type { Store } from '../store/index.js';
import { ClusterIpam } from './cluster-ipam.js';
import { blockKey, handleKey } from './keys.js';

/** `inner`, except that before the first txn touching `key` it runs `meddle` (another writer). */
function meddling(inner: Store, key: string, meddle: () => Promise<void>): Store & { txns: number } {
  let armed = true;
  const s = {
    url: inner.url,
    txns: 0,
    get roundTrips() {
      return inner.roundTrips;
    },
    get: (k: string) => inner.get(k),
    getMany: (k: readonly string[]) => inner.getMany(k),
    revision: () => inner.revision(),
    watch: (p: string, r: number, o?: { signal?: AbortSignal }) => inner.watch(p, r, o),
    list: (p: string, o?: { limit?: number; after?: string }) => inner.list(p, o),
    txn: async (c: Parameters<Store['txn']>[0], o: Parameters<Store['txn']>[1]) => {
      s.txns++;
      if (armed && c.some((x) => x.key === key)) {
        armed = false;
        await meddle();
      }
      return inner.txn(c, o);
    },
    close: () => inner.close(),
  };
  return s;
}

async function leakySetup() {
  const store = new MemoryStore();
  const admin = new ClusterIpam(store);
  await admin.createPool({ name: 'v4', cidr: '10.0.0.0/24', blockSize: 28 });
  const [leaked] = await admin.assign({ node: 'n1', handle: 'net.leak.eth0', auto: { 4: 1 } });
  const h = await store.get(handleKey('net.leak.eth0'));
  assert.ok(h && leaked);
  assert.equal((await store.txn([{ key: h.key, rev: h.rev }], [{ type: 'delete', key: h.key }])).succeeded, true);
  const [finding] = (await admin.check()).leaks;
  assert.ok(finding, 'check finds the leak');
  return { store, admin, leaked, finding };
}

test('releaseLeak retries when another writer changes the block between its read and its txn', async () => {
  const { store, admin, leaked, finding } = await leakySetup();
  let other: string | undefined;
  const s = meddling(store, blockKey(leaked.block), async () => {
    // a pod of the same node gets an address of the same block meanwhile
    const [a] = await new ClusterIpam(store).assign({ node: 'n1', handle: 'net.new.eth0', auto: { 4: 1 } });
    other = a ? formatAddr(a.addr) : undefined;
  });
  assert.equal(await new ClusterIpam(s).releaseLeak(finding), true);
  assert.equal(s.txns, 2, 'a failed CAS, then the retry');
  assert.deepEqual((await admin.check()).leaks, []);
  assert.deepEqual((await admin.addressesOf('net.new.eth0'))?.map((a) => formatAddr(a.addr)), [other], 'the concurrent write survived');
  assert.notEqual(other, formatAddr(leaked.addr));
});

test('releaseLeak leaves an address alone once its handle is back (no longer a leak), also when that shows only at the CAS', async () => {
  const { store, admin, leaked, finding } = await leakySetup();
  const s = meddling(store, blockKey(leaked.block), async () => {
    // the address is freed and handed to a new pod under the very same handle name
    const other = new ClusterIpam(store);
    await other.releaseAddresses([leaked.addr]);
    await other.assign({ node: 'n1', handle: 'net.leak.eth0', ips: [leaked.addr] });
  });
  assert.equal(await new ClusterIpam(s).releaseLeak(finding), false);
  assert.equal((await admin.addressesOf('net.leak.eth0'))?.length, 1);
  assert.equal(await new ClusterIpam(store).releaseLeak(finding), false, 'and again: nothing to do');
});

test('releaseNodelessBlock retries its affinity txn under a concurrent write and keeps what others borrowed', async () => {
  const store = new MemoryStore();
  const admin = new ClusterIpam(store);
  await admin.createPool({ name: 'v4', cidr: '10.0.0.0/24', blockSize: 28 });
  const [a] = await admin.assign({ node: 'gone', handle: 'net.g0.eth0', auto: { 4: 1 } });
  assert.ok(a);
  const key = blockKey(a.block);
  // another node borrows an address of that block, right before the affinity txn
  let borrowed = false;
  const s = meddling(store, key, async () => {
    if (borrowed) return;
    borrowed = true;
    await new ClusterIpam(store).assign({ node: 'other', handle: 'net.o0.eth0', ips: [{ family: 4, value: a.addr.value + 1n }] });
  });
  const r = await new ClusterIpam(s).releaseNodelessBlock(key);
  assert.equal(r.node, 'gone');
  assert.equal(r.handles, 1);
  assert.equal(r.released, true);
  assert.equal(r.deleted, false);
  assert.equal(r.borrowed, 1);
  assert.ok(s.txns >= 3, `the handle release, a failed affinity CAS, its retry: ${s.txns} txns`);
  assert.equal((await admin.addressesOf('net.o0.eth0'))?.length, 1);
  assert.equal(await admin.addressesOf('net.g0.eth0'), undefined);
  const u = await admin.utilisation();
  assert.deepEqual(u.blocks.map((b) => [b.node, b.allocated]), [[null, 1n]]);
  await assert.rejects(admin.releaseNodelessBlock('pools/x'), TypeError);
});
