import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addNode } from '../../controller/add-node.js';
import { deleteNode } from '../../controller/delete-node.js';
import { MemoryStore } from '../../store/memory/memory-store.js';
import type { Store } from '../../store/index.js';
import { ClusterIpam } from '../service/cluster-ipam.js';
import { type Stamp, decodeStamp, encodeStamp, stampKey } from './history-stamp.js';
import { blockKey, handleKey } from './keys.js';
import { stickyHoldHandle } from './sticky-hold-id.js';

const T0 = Date.parse('2026-03-01T10:00:00Z');

async function setup(writer = 'n1') {
  const store = new MemoryStore();
  const clock = { now: T0 };
  const ipam = new ClusterIpam(store, { now: () => new Date(clock.now), writer });
  await ipam.createPool({ name: 'v4', cidr: '10.0.0.0/24', blockSize: 28 });
  return { store, ipam, clock };
}

/** The writer's stamp and its revision (the revision of the txn that last wrote it). */
async function stampOf(store: Store, writer: string): Promise<Stamp & { rev: number }> {
  const e = await store.get(stampKey(writer));
  assert.ok(e, `stamps/${writer} is written`);
  return { ...decodeStamp(e.key, e.value), rev: e.rev };
}

async function revOf(store: Store, key: string): Promise<number> {
  const e = await store.get(key);
  assert.ok(e, `${key} exists`);
  return e.rev;
}

test('encode/decode round trip; a bad stamp names its key and field', () => {
  const s: Stamp = { at: 5, why: 'cni-gc', keys: { 'agent-pods/n/a': { at: 4, why: 'del', value: '{"since":"x"}' } } };
  assert.deepEqual(decodeStamp('stamps/n', encodeStamp(s)), s);
  assert.deepEqual(decodeStamp('stamps/n', encodeStamp({ at: 1, keys: {} })), { at: 1 });
  assert.throws(() => decodeStamp('stamps/n', '{"at":1,"why":"bored"}'), /stamps\/n.*why/);
  assert.throws(() => decodeStamp('stamps/n', '{"why":"del"}'), /stamps\/n.*at/);
});

test('an assignment is stamped in its own txn: the writer, the clock, no reason', async () => {
  const { store, ipam, clock } = await setup();
  clock.now = T0 + 1000;
  const [a] = await ipam.assign({ node: 'n1', handle: 'net:c1:eth0', auto: { 4: 1 } });
  const s = await stampOf(store, 'n1');
  assert.deepEqual([s.at, s.why, s.keys], [T0 + 1000, undefined, undefined]);
  assert.equal(s.rev, await revOf(store, blockKey(a!.block)), 'same revision as the block: one txn');
  assert.equal(s.rev, await revOf(store, handleKey('net:c1:eth0')));
  // The pool's creation (a config txn, no address taken) wrote no stamp of its own: only the assign's revision.
  assert.equal(s.rev, await store.revision());
});

test('a batch assignment (group commit) writes one stamp in its one txn', async () => {
  const { store, ipam, clock } = await setup();
  await ipam.assign({ node: 'n1', handle: 'net:c0:eth0', auto: { 4: 1 } }); // the block is claimed, the view current
  clock.now = T0 + 2000;
  const before = await store.revision();
  const out = await ipam.assignMany(
    'n1',
    [1, 2, 3].map((i) => ({ node: 'n1', handle: `net:c${i}:eth0`, auto: { 4: 1 } })),
  );
  assert.ok(out.every((o) => o.ok));
  assert.equal(await store.revision(), before + 1, 'one txn for the three');
  const s = await stampOf(store, 'n1');
  assert.deepEqual([s.at, s.why, s.rev], [T0 + 2000, undefined, before + 1]);
});

test('a release by handle is stamped "del" by default, the context\'s reason otherwise; by address too', async () => {
  const { store, ipam, clock } = await setup();
  const [a] = await ipam.assign({ node: 'n1', handle: 'net:c1:eth0', auto: { 4: 1 } });
  await ipam.assign({ node: 'n1', handle: 'net:c2:eth0', auto: { 4: 1 } });
  const [c] = await ipam.assign({ node: 'n1', handle: 'net:c3:eth0', auto: { 4: 1 } });
  clock.now = T0 + 3000;
  assert.equal((await ipam.releaseHandle('net:c1:eth0', 'n1')).length, 1);
  let s = await stampOf(store, 'n1');
  assert.deepEqual([s.at, s.why], [T0 + 3000, 'del']);
  assert.equal(s.rev, await revOf(store, blockKey(a!.block)), 'same txn as the block');
  clock.now = T0 + 4000;
  await ipam.withReason('release').releaseHandle('net:c2:eth0');
  s = await stampOf(store, 'n1');
  assert.deepEqual([s.at, s.why, s.rev], [T0 + 4000, 'release', await revOf(store, blockKey(a!.block))]);
  clock.now = T0 + 5000;
  assert.equal((await ipam.withReason('release').releaseAddresses([c!.addr])).length, 1);
  s = await stampOf(store, 'n1');
  assert.deepEqual([s.at, s.why, s.rev], [T0 + 5000, 'release', await revOf(store, blockKey(c!.block))]);
  // The reason does not stick to the instance it came from.
  const [d] = await ipam.assign({ node: 'n1', handle: 'net:c4:eth0', auto: { 4: 1 } });
  await ipam.releaseAddresses([d!.addr]);
  assert.equal((await stampOf(store, 'n1')).why, 'del');
});

test('each writer its own key; withWriter and withReason compose', async () => {
  const { store, ipam } = await setup('serve');
  await ipam.assign({ node: 'n1', handle: 'net:c1:eth0', auto: { 4: 1 } });
  await ipam
    .withWriter('n2')
    .withReason('cni-gc')
    .assign({ node: 'n2', handle: 'net:c2:eth0', auto: { 4: 1 } });
  assert.equal((await stampOf(store, 'n2')).why, 'cni-gc');
  assert.equal((await stampOf(store, 'serve')).why, undefined);
  assert.equal(ipam.withReason('release').writer, 'serve');
  assert.equal(ipam.withWriter('cli').withReason('release').writer, 'cli');
  assert.equal(new ClusterIpam(store).writer, 'podipam');
});

test('a sticky DEL moving addresses to the hold is stamped "del" in its txn; the hold\'s expiry "sticky-expired"', async () => {
  const { store, ipam, clock } = await setup();
  const hold = stickyHoldHandle('net', { namespace: 'db', name: 'db-0' }, 'eth0')!;
  const [a] = await ipam.assign({ node: 'n1', handle: 'net:c1:eth0', auto: { 4: 1 } });
  clock.now = T0 + 6000;
  await ipam.holdSticky(
    'net:c1:eth0',
    hold,
    { node: 'n1', network: 'net', ifname: 'eth0', namespace: 'db', pod: 'db-0', stickyUntil: new Date(T0 + 7000).toISOString() },
    'n1',
  );
  let s = await stampOf(store, 'n1');
  assert.deepEqual([s.at, s.why, s.rev], [T0 + 6000, 'del', await revOf(store, handleKey(hold))]);
  clock.now = T0 + 8000;
  const serve = new ClusterIpam(store, { now: () => new Date(clock.now), writer: 'serve' }).withReason('cluster-gc');
  const [expired] = (await serve.check()).stickyHolds!;
  assert.ok(expired?.expired);
  assert.equal((await serve.releaseStickyHold(expired))?.length, 1);
  s = await stampOf(store, 'serve');
  assert.deepEqual([s.at, s.why, s.rev], [T0 + 8000, 'sticky-expired', await revOf(store, blockKey(a!.block))]);
});

test('CNI GC (gcNode) is stamped "cni-gc"', async () => {
  const { store, ipam, clock } = await setup();
  const [a] = await ipam.assign({ node: 'n1', handle: 'net:c1:eth0', attrs: { network: 'net', containerId: 'c1', ifname: 'eth0' }, auto: { 4: 1 } });
  clock.now = T0 + 9000;
  const r = await ipam.gcNode('n1', 'net', new Set());
  assert.equal(r.released.length, 1);
  const s = await stampOf(store, 'n1');
  assert.deepEqual([s.at, s.why, s.rev], [T0 + 9000, 'cni-gc', await revOf(store, blockKey(a!.block))]);
});

test('cluster GC: a leak\'s release and a deleted node\'s blocks are stamped "cluster-gc"', async () => {
  const { store, ipam, clock } = await setup();
  const serve = new ClusterIpam(store, { now: () => new Date(clock.now), writer: 'serve' });
  const [leaked] = await ipam.assign({ node: 'n1', handle: 'net:leak:eth0', auto: { 4: 1 } });
  await ipam.assign({ node: 'n1', handle: 'net:keep:eth0', auto: { 4: 1 } });
  const h = (await store.get(handleKey('net:leak:eth0')))!;
  assert.equal((await store.txn([{ key: h.key, rev: h.rev }], [{ type: 'delete', key: h.key }])).succeeded, true);
  const [finding] = (await serve.check()).leaks;
  clock.now = T0 + 10_000;
  assert.equal(await serve.releaseLeak(finding!), true);
  let s = await stampOf(store, 'serve');
  assert.deepEqual([s.at, s.why, s.rev], [T0 + 10_000, 'cluster-gc', await revOf(store, blockKey(leaked!.block))]);

  await addNode(store, { name: 'gone' });
  const [g] = await ipam.assign({ node: 'gone', handle: 'net:g0:eth0', auto: { 4: 1 } });
  await deleteNode(store, 'gone', { by: 'api' });
  clock.now = T0 + 11_000;
  const r = await serve.releaseDeletedNodeBlock(blockKey(g!.block));
  assert.deepEqual([r.released, r.handles], [true, 1]);
  s = await stampOf(store, 'serve');
  assert.deepEqual([s.at, s.why, s.rev], [T0 + 11_000, 'cluster-gc', await store.revision()], "the last txn (the affinity's removal) is stamped too");
  // A reason given by the caller wins over the default.
  await addNode(store, { name: 'gone2' });
  const [g2] = await ipam.assign({ node: 'gone2', handle: 'net:g2:eth0', auto: { 4: 1 } });
  await deleteNode(store, 'gone2', { by: 'api' });
  await serve.withReason('release').releaseDeletedNodeBlock(blockKey(g2!.block));
  assert.equal((await stampOf(store, 'serve')).why, 'release');
});

test("warm records: each delete's time and reason in the stamp's keys; a put folded away by its delete goes there as value", async () => {
  const { store, ipam, clock } = await setup();
  clock.now = T0 + 20_000;
  await ipam.writeWarmRecords([
    { key: 'agent-pods/n1/a', value: '{"since":"A"}' },
    { key: 'agent-pods/n1/b', value: '{"since":"B"}' },
  ]);
  let s = await stampOf(store, 'n1');
  assert.deepEqual([s.at, s.why, s.keys, s.rev], [T0 + 20_000, undefined, undefined, await revOf(store, 'agent-pods/n1/a')]);
  clock.now = T0 + 30_000;
  await ipam.writeWarmRecords([
    { key: 'agent-pods/n1/a', value: undefined, at: T0 + 21_000, why: 'del' },
    { key: 'agent-pods/n1/c', value: '{"since":"C"}' }, // ADD then DEL inside one write delay
    { key: 'agent-pods/n1/b', value: undefined, at: T0 + 22_000, why: 'warm-gc' },
    { key: 'agent-pods/n1/c', value: undefined, at: T0 + 23_000, why: 'cni-gc' },
    { key: 'agent-pods/n1/b', value: undefined, at: T0 + 24_000, why: 'reconcile' }, // deletes nothing more
    { key: 'agent-pods/n1/d', value: undefined }, // no time nor reason given: now, DEL
  ]);
  s = await stampOf(store, 'n1');
  assert.equal(s.at, T0 + 30_000);
  assert.equal(s.rev, await store.revision());
  assert.deepEqual(s.keys, {
    'agent-pods/n1/a': { at: T0 + 21_000, why: 'del' },
    'agent-pods/n1/b': { at: T0 + 22_000, why: 'warm-gc' },
    'agent-pods/n1/c': { at: T0 + 23_000, why: 'cni-gc', value: '{"since":"C"}' },
    'agent-pods/n1/d': { at: T0 + 30_000, why: 'del' },
  });
  assert.deepEqual(await ipam.warmRecords('agent-pods/n1/'), [], 'the folded put was not written');
  // A delete then a put of the same key (the attachment came back): the put is written, the earlier value's end is stamped.
  await ipam.writeWarmRecords([{ key: 'agent-pods/n1/e', value: '{"since":"E1"}' }]);
  await ipam.writeWarmRecords([
    { key: 'agent-pods/n1/e', value: undefined, at: T0 + 31_000, why: 'del' },
    { key: 'agent-pods/n1/e', value: '{"since":"E2"}' },
  ]);
  assert.deepEqual((await stampOf(store, 'n1')).keys, { 'agent-pods/n1/e': { at: T0 + 31_000, why: 'del' } });
  assert.deepEqual(await ipam.warmRecords('agent-pods/n1/'), [{ key: 'agent-pods/n1/e', value: '{"since":"E2"}' }]);
});

test('a warm record key under stamps/ is refused (it would collide with the stamp op)', async () => {
  const { ipam } = await setup();
  await assert.rejects(ipam.writeWarmRecords([{ key: 'stamps/n1', value: '{}' }]), /stamps\//);
});

test('round trips: a steady-state cluster ADD and DEL stay one txn each (the stamp rides along)', async () => {
  const { store, ipam } = await setup();
  await ipam.assign({ node: 'n1', handle: 'net:c0:eth0', auto: { 4: 1 } }); // claims the block, loads the view
  let before = store.roundTrips;
  await ipam.assign({ node: 'n1', handle: 'net:c1:eth0', auto: { 4: 1 } });
  assert.equal(store.roundTrips - before, 1, 'ADD: one txn');
  before = store.roundTrips;
  await ipam.releaseHandle('net:c1:eth0', 'n1');
  assert.equal(store.roundTrips - before, 1, 'DEL: one txn');
  // A first ADD on a fresh instance: snapshot, node blocks, claim — as many as before the stamp.
  const fresh = new MemoryStore();
  const p = new ClusterIpam(fresh, { writer: 'n9' });
  await p.createPool({ name: 'v4', cidr: '10.0.0.0/24', blockSize: 28 });
  const q = new ClusterIpam(fresh, { writer: 'n9' });
  before = fresh.roundTrips;
  await q.assign({ node: 'n9', handle: 'net:c1:eth0', auto: { 4: 1 } });
  assert.equal(fresh.roundTrips - before, BEFORE.firstAdd);
  // A DEL by an instance that did not write the handle (a fresh plugin process without hints):
  // the stamp adds nothing, and whether a freed address is quarantined comes from `config`,
  // read with the handle in the same round trip (config-quarantines.ts).
  before = fresh.roundTrips;
  await new ClusterIpam(fresh, { writer: 'n9' }).releaseHandle('net:c1:eth0', 'n9');
  assert.equal(fresh.roundTrips - before, BEFORE.coldDel);
});

/** Round trips measured on the same sequence before the stamp existed (main at 50e4016, MemoryStore). */
const BEFORE = { firstAdd: 6, coldDel: 3 };
