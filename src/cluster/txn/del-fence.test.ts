/**
 * The DEL fence (del-fence-record.ts): an ADD txn whose answer was lost and that lands only
 * after the runtime's DEL found its handle absent must not hold an address (the partition-chaos
 * leak "handle … still holds … after every attachment's DEL"), on a real SQLite datastore. The
 * held txn is the real one, applied later with its own compares, as a paused member would.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { StoreUnavailableError, openStore, type Op } from '../../store/index.js';
import { lateTxnStore } from '../../../test/helpers/late-txn-store.js';
import { makeTempDir } from '../../../test/helpers/tmp.js';
import { ClusterIpam } from '../service/cluster-ipam.js';
import { DEL_FENCE_PREFIX, HANDLE_PREFIX, blockKey, decodeBlock, delFenceKey, type AssignRequest, type Assignment } from '../records/index.js';
import { freeCount } from '../../alloc/block.js';
import { formatPrefix } from '../../ip/index.js';

const req = (node: string, id: string): AssignRequest => ({
  node,
  handle: `net.${id}.eth0`,
  attrs: { network: 'net', containerId: id, ifname: 'eth0' },
  auto: 'each-family',
});
const writesHandle = (id: string) => (ops: readonly Op[]) => ops.some((o) => o.type === 'put' && o.key === `${HANDLE_PREFIX}net.${id}.eth0`);
const movesFence = (ops: readonly Op[]): boolean => ops.some((o) => o.key.startsWith(DEL_FENCE_PREFIX));

const cleanup: (() => Promise<void> | void)[] = [];
after(async () => {
  for (const c of cleanup) await c();
});

async function rig() {
  const dir = makeTempDir('del-fence');
  const store = lateTxnStore(await openStore(`sqlite:${join(dir.path, 'ipam.db')}`));
  cleanup.push(
    () => store.close(),
    () => dir.remove(),
  );
  const ipam = new ClusterIpam(store, { writer: 'n1' });
  await ipam.createPool({ name: 'v4', cidr: '10.60.0.0/24', blockSize: 28 });
  await ipam.assign(req('n1', 'warm-up')); // the node's block is claimed and its view current
  return { store, ipam };
}

test('an ADD that lands after the DEL found its handle absent fails its compare: nothing is held', async () => {
  const { store, ipam } = await rig();
  const held = store.holdNext(writesHandle('p1'));
  await assert.rejects(ipam.assign(req('n1', 'p1')), StoreUnavailableError);
  const late = await held;
  assert.deepEqual(await ipam.releaseHandle('net.p1.eth0', 'n1'), [], 'the DEL finds nothing to free');
  assert.ok(await store.get(delFenceKey('n1')), "the DEL moved the node's fence");
  const landed = await late.land();
  assert.equal(landed.succeeded, false, 'the late ADD must fail its compare on the fence');
  assert.equal(await ipam.addressesOf('net.p1.eth0'), undefined);
  const check = await ipam.check();
  assert.deepEqual({ leaks: check.leaks, problems: check.problems }, { leaks: [], problems: [] });
  // This process moved the fence and knows its revision: its next ADD is one round trip.
  const before = store.roundTrips;
  assert.equal((await ipam.assign(req('n1', 'p2'))).length, 1);
  assert.equal(store.roundTrips - before, 1, 'the steady state stays one round trip');
  // Another process (an agent restarted) assumes no fence, fails that compare once and learns it.
  const fresh = new ClusterIpam(store, { writer: 'n1' });
  await fresh.assign(req('n1', 'p3'));
  const again = store.roundTrips;
  await fresh.assign(req('n1', 'p4'));
  assert.equal(store.roundTrips - again, 1, 'after one failed compare it knows the fence');
});

test("an ADD that lands between the DEL's read and its fence: the DEL then frees what it holds", async () => {
  const { store, ipam } = await rig();
  const held = store.holdNext(writesHandle('p1'));
  await assert.rejects(ipam.assign(req('n1', 'p1')), StoreUnavailableError);
  const late = await held;
  let landed: boolean | undefined;
  store.before(movesFence, async () => {
    landed = (await late.land()).succeeded;
  });
  const freed = await ipam.releaseHandle('net.p1.eth0', 'n1');
  assert.equal(landed, true, 'the late ADD landed before the fence moved');
  assert.equal(freed.length, 1, 'the DEL freed the address the late ADD took');
  assert.equal(await ipam.addressesOf('net.p1.eth0'), undefined);
});

test('grouped DELs fence an absent handle too; a DEL with no node (a tool) writes no fence', async () => {
  const { store, ipam } = await rig();
  const held = store.holdNext(writesHandle('p1'));
  await assert.rejects(ipam.assign(req('n1', 'p1')), StoreUnavailableError);
  const late = await held;
  const out = await ipam.releaseMany('n1', ['net.p1.eth0', 'net.never.eth0']);
  assert.deepEqual(
    out.map((o) => (o.ok ? o.released.length : -1)),
    [0, 0],
  );
  assert.equal((await late.land()).succeeded, false, 'the late ADD must fail its compare on the fence');
  assert.equal(await ipam.addressesOf('net.p1.eth0'), undefined);
  const fence = await store.get(delFenceKey('n1'));
  assert.deepEqual(await ipam.releaseHandle('net.never.eth0'), []);
  assert.equal((await store.get(delFenceKey('n1')))?.rev, fence?.rev, 'no node: no fence moved');
});

test('an ADD that lands after a retry of it landed and the DEL freed it (and the block it claimed) fails too: every DEL moves the fence', async () => {
  const { store, ipam } = await rig();
  const blockOf = (a: readonly Assignment[]): string => formatPrefix(a[0]!.block);
  // Node n3 fills its first block.
  const got = await ipam.assign(req('n3', 'f0'));
  const first = blockOf(got);
  for (let i = 1; freeCount(decodeBlock((await store.get(blockKey(got[0]!.block)))!)) > 0; i++) {
    assert.ok(i < 64, 'the block fills');
    assert.equal(blockOf(await ipam.assign(req('n3', `f${i}`))), first, `f${i} in the first block`);
  }
  // The next ADD claims a second block; its answer is lost, and its txn waits in a stopped member.
  const held = store.holdNext(writesHandle('q1'));
  await assert.rejects(ipam.assign(req('n3', 'q1')), StoreUnavailableError);
  const late = await held;
  const retried = blockOf(await ipam.assign(req('n3', 'q1'))); // the runtime's retry lands the same claim
  assert.notEqual(retried, first, 'the retry claimed a second block');
  assert.equal((await ipam.releaseHandle('net.f0.eth0', 'n3')).length, 1); // the first block has room again
  assert.equal((await ipam.releaseHandle('net.q1.eth0', 'n3')).length, 1); // the second block is empty: deleted
  assert.equal((await store.list('blocks/')).length, 2, "rig's block and n3's first: the claimed one is gone");
  const landed = await late.land();
  assert.equal(landed.succeeded, false, 'the late claim must fail its compare on the fence');
  assert.equal(await ipam.addressesOf('net.q1.eth0'), undefined);
});

test('a release and a group release move the fence in their own txn: no extra round trip, and the next ADD is one', async () => {
  const { store, ipam } = await rig();
  for (const id of ['g1', 'g2', 'g3']) await ipam.assign(req('n1', id));
  const at = async (): Promise<number> => (await store.get(delFenceKey('n1')))?.rev ?? 0;
  const r0 = await at();
  let before = store.roundTrips;
  await ipam.releaseHandle('net.g1.eth0', 'n1');
  assert.equal(store.roundTrips - before, 1, 'the release is one txn');
  const r1 = await at();
  assert.ok(r1 > r0, 'the release moved the fence');
  before = store.roundTrips;
  const out = await ipam.releaseMany('n1', ['net.g2.eth0', 'net.g3.eth0']);
  assert.deepEqual(
    out.map((o) => (o.ok ? o.released.length : -1)),
    [1, 1],
  );
  assert.equal(store.roundTrips - before, 1, 'the group release is one txn');
  assert.ok((await at()) > r1, 'the group release moved the fence');
  before = store.roundTrips;
  await ipam.assign(req('n1', 'g4'));
  assert.equal(store.roundTrips - before, 1, 'the next ADD knows the fence: one round trip');
});
