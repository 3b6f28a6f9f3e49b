import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatAddr, formatPrefix } from '../../ip/index.js';
import { MemoryStore } from '../../store/memory/memory-store.js';
import type { Store } from '../../store/index.js';
import { ClusterIpam } from '../service/cluster-ipam.js';
import { blockKey, handleKey } from '../records/keys.js';
import { addNode } from '../../controller/add-node.js';
import { deleteNode } from '../../controller/delete-node.js';
import { nodeTombstoneKey } from '../../model/node-tombstone.js';

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
    identity: () => inner.identity(),
    watch: (p: string, r: number, o?: { signal?: AbortSignal }) => inner.watch(p, r, o),
    list: (p: string, o?: { limit?: number; after?: string }) => inner.list(p, o),
    snapshot: (p: string) => inner.snapshot(p),
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
  assert.deepEqual(
    (await admin.addressesOf('net.new.eth0'))?.map((a) => formatAddr(a.addr)),
    [other],
    'the concurrent write survived',
  );
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

/** A pool, node `gone` registered, one pod on it; then its record is deleted (the proof). */
async function deletedNodeSetup(deleteIt = true) {
  const store = new MemoryStore();
  const admin = new ClusterIpam(store);
  await admin.createPool({ name: 'v4', cidr: '10.0.0.0/24', blockSize: 28 });
  await addNode(store, { name: 'gone' });
  const [a] = await admin.assign({ node: 'gone', handle: 'net.g0.eth0', auto: { 4: 1 } });
  assert.ok(a);
  if (deleteIt) await deleteNode(store, 'gone', { by: 'cli' });
  return { store, admin, a, key: blockKey(a.block) };
}

test('releaseDeletedNodeBlock retries its affinity txn under a concurrent write and keeps what others borrowed', async () => {
  const { store, admin, a, key } = await deletedNodeSetup();
  // another node borrows an address of that block, right before the affinity txn
  let borrowed = false;
  const s = meddling(store, key, async () => {
    if (borrowed) return;
    borrowed = true;
    await new ClusterIpam(store).assign({ node: 'other', handle: 'net.o0.eth0', ips: [{ family: 4, value: a.addr.value + 1n }] });
  });
  const r = await new ClusterIpam(s).releaseDeletedNodeBlock(key);
  assert.equal(r.node, 'gone');
  assert.equal(r.handles, 1);
  assert.equal(r.released, true);
  assert.equal(r.deleted, false);
  assert.equal(r.borrowed, 1);
  assert.equal(r.unproven, false);
  assert.ok(s.txns >= 3, `the handle release, a failed affinity CAS, its retry: ${s.txns} txns`);
  assert.equal((await admin.addressesOf('net.o0.eth0'))?.length, 1);
  assert.equal(await admin.addressesOf('net.g0.eth0'), undefined);
  const u = await admin.utilisation();
  assert.deepEqual(
    u.blocks.map((b) => [b.node, b.allocated]),
    [[null, 1n]],
  );
  await assert.rejects(admin.releaseDeletedNodeBlock('pools/x'), TypeError);
});

test('releaseDeletedNodeBlock frees nothing of a node that never had a record (no proof), nor of one still registered', async () => {
  for (const registered of [false, true]) {
    const store = new MemoryStore();
    const admin = new ClusterIpam(store);
    await admin.createPool({ name: 'v4', cidr: '10.0.0.0/24', blockSize: 28 });
    if (registered) await addNode(store, { name: 'n' });
    else await addNode(store, { name: 'someone-else' });
    const [a] = await admin.assign({ node: 'n', handle: 'net.p.eth0', auto: { 4: 1 } });
    const r = await admin.releaseDeletedNodeBlock(blockKey(a!.block));
    assert.deepEqual([r.unproven, r.released, r.handles], [true, false, 0], `registered: ${registered}`);
    assert.equal((await admin.addressesOf('net.p.eth0'))?.length, 1);
    const kinds = (await admin.check()).problems.map((p) => p.kind);
    assert.deepEqual(kinds, registered ? [] : ['block-node-unregistered']);
  }
});

test('a node re-added, or claiming a block, after its deletion clears the proof: nothing of it is freed', async () => {
  // re-added
  const re = await deletedNodeSetup();
  await addNode(re.store, { name: 'gone' });
  assert.equal(await re.store.get(nodeTombstoneKey('gone')), undefined, 'node add removes the tombstone');
  assert.equal((await re.admin.releaseDeletedNodeBlock(re.key)).unproven, true);
  assert.equal((await re.admin.addressesOf('net.g0.eth0'))?.length, 1);
  assert.deepEqual((await re.admin.check()).problems, []);

  // claims a block (its first is full): the claim txn removes the tombstone
  const cl = await deletedNodeSetup();
  await addNode(cl.store, { name: 'other' }); // node records in use: check reports nodes without one
  assert.deepEqual(
    (await cl.admin.check()).problems.map((p) => p.kind),
    ['block-node-deleted'],
  );
  for (let i = 1; i <= 16; i++) await cl.admin.assign({ node: 'gone', handle: `net.g${i}.eth0`, auto: { 4: 1 } });
  assert.equal(await cl.store.get(nodeTombstoneKey('gone')), undefined, 'a block claim removes the tombstone');
  assert.equal((await cl.admin.releaseDeletedNodeBlock(cl.key)).unproven, true);
  assert.equal((await cl.admin.addressesOf('net.g0.eth0'))?.length, 1);
  assert.deepEqual(
    (await cl.admin.check()).problems.map((p) => p.kind),
    ['block-node-unregistered', 'block-node-unregistered'],
  );
});

test('releaseDeletedNodeBlock stops when the proof goes while it works (node re-added between two handle releases)', async () => {
  const { store, admin, key } = await deletedNodeSetup(false);
  await admin.assign({ node: 'gone', handle: 'net.g1.eth0', auto: { 4: 1 } });
  await deleteNode(store, 'gone', { by: 'kubernetes' });
  let txnsOnBlock = 0;
  const s = meddling(store, key, async () => {});
  const inner = s.txn.bind(s);
  s.txn = async (c, o) => {
    if (c.some((x) => x.key === key) && ++txnsOnBlock === 2) await addNode(store, { name: 'gone' });
    return inner(c, o);
  };
  const r = await new ClusterIpam(s).releaseDeletedNodeBlock(key);
  assert.deepEqual([r.unproven, r.handles, r.released], [true, 1, false]);
  const left = [await admin.addressesOf('net.g0.eth0'), await admin.addressesOf('net.g1.eth0')].filter((x) => x !== undefined);
  assert.equal(left.length, 1, 'the pod released before the node came back is gone, the other kept');
  assert.equal((await store.get(key)) !== undefined, true);
});

test('releaseDeletedNode releases every block of a deleted node (v4 and v6) and leaves check clean', async () => {
  const store = new MemoryStore();
  const admin = new ClusterIpam(store);
  await admin.createPool({ name: 'v4', cidr: '10.0.0.0/24', blockSize: 28 });
  await admin.createPool({ name: 'v6', cidr: 'fd00::/120', blockSize: 124 });
  await addNode(store, { name: 'sim-1' });
  await admin.assign({ node: 'sim-1', handle: 'net.s.eth0', auto: { 4: 1, 6: 1 } });
  await admin.releaseHandle('net.s.eth0', 'sim-1');
  assert.equal((await admin.releaseDeletedNode('sim-1')).filter((r) => r.released).length, 0, 'no proof yet: nothing');
  await deleteNode(store, 'sim-1', { by: 'api' });
  const r = await admin.releaseDeletedNode('sim-1');
  assert.deepEqual(
    r.map((x) => [x.released, x.deleted]),
    [
      [true, true],
      [true, true],
    ],
  );
  assert.deepEqual(await admin.check(), { leaks: [], problems: [] });
});

test('the proof covers only what the node held at its deletion: a pod started on it afterwards keeps its address', async () => {
  const { store, admin, key } = await deletedNodeSetup();
  // The node's kubelet still runs: a pod starts in its block (no claim, so the tombstone stays).
  const [late] = await admin.assign({ node: 'gone', handle: 'net.late.eth0', auto: { 4: 1 } });
  assert.ok(late && blockKey(late.block) === key);
  assert.notEqual(await store.get(nodeTombstoneKey('gone')), undefined);
  const r = await admin.releaseDeletedNodeBlock(key);
  assert.equal(r.handles, 1, 'the pod of before the deletion is released');
  assert.equal(await admin.addressesOf('net.g0.eth0'), undefined);
  assert.deepEqual(
    (await admin.addressesOf('net.late.eth0'))?.map((x) => formatAddr(x.addr)),
    [formatAddr(late.addr)],
    'the later pod keeps its address',
  );
  assert.equal(r.borrowed, 1, 'the block stays (without affinity) for the address still held');
  const [next] = await admin.assign({ node: 'n2', handle: 'net.n2.eth0', auto: { 4: 1 } });
  assert.notEqual(formatAddr(next!.addr), formatAddr(late.addr));
});

test("a deleted node: its own pods and empty blocks freed; a block holding another node's pod is kept without affinity and named by check (borrowed)", async () => {
  const store = new MemoryStore();
  const admin = new ClusterIpam(store);
  await admin.createPool({ name: 'v4', cidr: '10.0.1.0/24', blockSize: 28 });
  await addNode(store, { name: 'gone' });
  await addNode(store, { name: 'alive' });
  const [own] = await admin.assign({ node: 'gone', handle: 'net.own.eth0', auto: { 4: 1 }, attrs: { namespace: 'ns', pod: 'own' } });
  // A pod of node "alive" borrows an address in gone's block (strictAffinity off).
  const borrowedAddr = { family: 4 as const, value: own!.addr.value + 1n };
  await admin.assign({ node: 'alive', handle: 'net.b.eth0', ips: [borrowedAddr], attrs: { namespace: 'ns', pod: 'borrower' } });
  const [emptyOne] = await admin.assign({ node: 'gone', handle: 'net.e.eth0', ips: [{ family: 4, value: own!.addr.value + 32n }] });
  await admin.releaseHandle('net.e.eth0');
  await deleteNode(store, 'gone', { by: 'api' });
  const before = await admin.check();
  assert.deepEqual(before.borrowed, [
    { block: formatPrefix(own!.block), node: 'gone', pods: [{ address: formatAddr(borrowedAddr), handle: 'net.b.eth0', node: 'alive', pod: 'ns/borrower' }] },
  ]);
  const r = await admin.releaseDeletedNode('gone');
  const byBlock = new Map(r.map((x) => [x.cidr ? formatPrefix(x.cidr) : '', x]));
  assert.deepEqual([byBlock.get(formatPrefix(own!.block))?.borrowed, byBlock.get(formatPrefix(own!.block))?.deleted], [1, false]);
  assert.equal(byBlock.get(formatPrefix(emptyOne!.block))?.deleted, true, 'the empty block is freed');
  assert.equal(await admin.addressesOf('net.own.eth0'), undefined, "the gone node's pod is released");
  assert.deepEqual(
    (await admin.addressesOf('net.b.eth0'))?.map((x) => formatAddr(x.addr)),
    [formatAddr(borrowedAddr)],
    'the borrower keeps its address',
  );
  const after = await admin.check();
  assert.deepEqual(after.problems, []);
  assert.deepEqual(after.borrowed, [
    { block: formatPrefix(own!.block), node: null, pods: [{ address: formatAddr(borrowedAddr), handle: 'net.b.eth0', node: 'alive', pod: 'ns/borrower' }] },
  ]);
  await admin.releaseHandle('net.b.eth0');
  assert.deepEqual(await admin.check(), { leaks: [], problems: [] });
});

test('releaseDeletedNodeBlock keeps an emptied block that still quarantines an address, and deletes it on a pass after the quarantine', async () => {
  const store = new MemoryStore();
  let t = Date.parse('2026-12-04T08:00:00.000Z');
  const admin = new ClusterIpam(store, { now: () => new Date(t) });
  await admin.createPool({ name: 'v4', cidr: '10.0.0.0/24', blockSize: 28, reuseAfter: '30s' });
  await addNode(store, { name: 'gone' });
  const [a] = await admin.assign({ node: 'gone', handle: 'net.g0.eth0', auto: { 4: 1 } });
  await deleteNode(store, 'gone', { by: 'cli' });
  const key = blockKey(a!.block);
  const first = await admin.releaseDeletedNodeBlock(key);
  assert.deepEqual([first.handles, first.released, first.deleted], [1, false, false], 'the pod is freed; its block stays, affine, for the quarantine');
  assert.ok(await store.get(key), 'a deleted block would let a node claim it and hand the address out at once');
  t += 31_000;
  const later = await admin.releaseDeletedNodeBlock(key);
  assert.deepEqual([later.released, later.deleted], [true, true]);
  assert.equal(await store.get(key), undefined);
});
