/**
 * Group release (release-group.ts): a batch of a node's releases in one transaction leaves the
 * datastore exactly as the same releases one at a time would (differential, on memory and SQLite;
 * release-group.integration.test.ts: a real etcd), costs one round trip in the steady state, and falls back to single
 * releases — still conditional — when a compare fails, a handle repeats or is unknown to the
 * view, or one request is bad.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { type Store, openStore } from '../../store/index.js';
import { lostAnswerStore } from '../../../test/helpers/lost-answer-store.js';
import { T0, differential, filled, freed, handle, req } from '../../../test/helpers/release-group-differential.js';
import { makeTempDir } from '../../../test/helpers/tmp.js';
import { ClusterIpam } from '../service/cluster-ipam.js';
import { HANDLE_PREFIX } from '../records/keys.js';

test('a group of 18 releases: one round trip, and exactly the records the same releases one at a time leave', async () => {
  await differential(await openStore('memory:'), await openStore('memory:'));
});

test('with reuseAfter: the grouped releases stamp their release times as single releases do', async () => {
  await differential(await openStore('memory:'), await openStore('memory:'), '10m');
});

test('a stale view (another writer freed an address of the same block) fails the group compare; each release then runs alone, none lost', async () => {
  const store = await openStore('memory:');
  const ipam = await filled(store, 8);
  const other = new ClusterIpam(store, { now: () => new Date(T0) }); // a second process on the same store
  await other.releaseHandle(handle('p7'));
  const before = store.roundTrips;
  const out = await ipam.releaseMany('n1', [handle('p1'), handle('p2'), handle('p3')]);
  assert.ok(store.roundTrips - before > 1, 'the group transaction failed its compares and the releases ran alone');
  for (const o of out) assert.equal(freed(o).length, 2);
  for (const id of ['p1', 'p2', 'p3', 'p7']) assert.equal(await ipam.addressesOf(handle(id)), undefined, `${id} released`);
  for (const id of ['p0', 'p4', 'p5', 'p6']) assert.equal((await ipam.addressesOf(handle(id)))!.length, 2, `${id} still holds its addresses`);
  const check = await ipam.check();
  assert.deepEqual({ leaks: check.leaks, problems: check.problems }, { leaks: [], problems: [] });
});

test('a handle twice, a handle the view does not know, an absent one and a bad one: each gets what it would alone', async () => {
  const store = await openStore('memory:');
  const ipam = await filled(store, 4);
  const other = new ClusterIpam(store, { now: () => new Date(T0) });
  await other.assign(req('n1', 'x')); // written by another process: not in this view
  const out = await ipam.releaseMany('n1', [handle('p0'), handle('p0'), handle('x'), handle('never'), 'bad handle\n', handle('p1')]);
  assert.equal(freed(out[0]!).length, 2);
  assert.deepEqual(freed(out[1]!), [], 'the repeat finds the handle released');
  assert.equal(freed(out[2]!).length, 2, 'the unknown handle is read and released alone');
  assert.deepEqual(freed(out[3]!), []);
  assert.ok(!out[4]!.ok && /handle/.test(String(out[4]!.error)), 'the bad handle fails alone');
  assert.equal(freed(out[5]!).length, 2);
  for (const id of ['p2', 'p3']) assert.equal((await ipam.addressesOf(handle(id)))!.length, 2, `${id} untouched`);
  const check = await ipam.check();
  assert.deepEqual({ leaks: check.leaks, problems: check.problems }, { leaks: [], problems: [] });
});

test("the store lost the group's answer (outcome unknown): each release runs alone and finds its handle gone; nothing freed twice", async () => {
  const store = lostAnswerStore(await openStore('memory:'));
  const ipam = await filled(store, 6);
  const lost = store.loseNext((ops) => ops.filter((o) => o.key.startsWith(HANDLE_PREFIX)).length === 3);
  const out = await ipam.releaseMany('n1', [handle('p0'), handle('p1'), handle('p2')]);
  await lost;
  for (const o of out) assert.deepEqual(freed(o), [], 'already released by the committed group');
  for (const id of ['p0', 'p1', 'p2']) assert.equal(await ipam.addressesOf(handle(id)), undefined);
  for (const id of ['p3', 'p4', 'p5']) assert.equal((await ipam.addressesOf(handle(id)))!.length, 2);
  const check = await ipam.check();
  assert.deepEqual({ leaks: check.leaks, problems: check.problems }, { leaks: [], problems: [] });
});

test('SQLite: the group leaves exactly what single releases leave', async () => {
  const dir = makeTempDir('release-group');
  const stores: Store[] = [];
  try {
    stores.push(await openStore(`sqlite:${join(dir.path, 'a.db')}`), await openStore(`sqlite:${join(dir.path, 'b.db')}`));
    await differential(stores[0]!, stores[1]!, '5m');
  } finally {
    for (const s of stores) await s.close();
    dir.remove();
  }
});
