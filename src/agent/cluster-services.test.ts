import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CniError } from '../cni/errors.js';
import { BURST_WINDOW_MS, ClusterServices } from './cluster-services.js';

test('close refuses new and queued calls with code 11, lets the running call finish on an open store, then closes', async () => {
  const root = mkdtempSync(join(tmpdir(), 'podipam-cs-'));
  try {
    const url = `sqlite:${join(root, 'db.sqlite')}`;
    const cs = new ClusterServices();
    await cs.run(url, 'n1', (ipam) => ipam.createPool({ name: 'v4', cidr: '10.0.0.0/16' }));
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    // The running call: still busy when close() begins, then reads the store.
    const first = cs.run(url, 'n1', async (ipam) => {
      started();
      await gate;
      return (await ipam.listPools()).map((p) => p.name);
    });
    const queued = cs.run(url, 'n1', (ipam) => ipam.listPools());
    await running;
    const closing = cs.close();
    let closed = false;
    void closing.then(() => (closed = true));
    const code = (e: unknown) => (e instanceof CniError ? e.code : e);
    await assert.rejects(queued, (e) => code(e) === 11, 'a queued call is refused with code 11');
    await assert.rejects(
      cs.run(url, 'n2', (ipam) => ipam.listPools()),
      (e) => code(e) === 11,
      'a new call is refused',
    );
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(closed, false, 'close waits for the running call');
    release();
    assert.deepEqual(await first, ['v4'], 'the running call finished on an open store');
    await closing;
    assert.deepEqual(cs.datastores(), [], 'no store is left open or reopened');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("each node's calls (run, a single ADD, a group of ADDs) are stamped as that node", async () => {
  const { decodeStamp, stampKey } = await import('../cluster/records/history-stamp.js');
  const cs = new ClusterServices();
  try {
    const url = 'memory:cluster-services-stamp';
    await cs.run(url, 'n1', (ipam) => ipam.createPool({ name: 'v4', cidr: '10.0.0.0/16' }));
    const store = await cs.storeOf(url);
    const stampOf = async (node: string) => {
      const e = await store.get(stampKey(node));
      assert.ok(e, `stamps/${node}`);
      return { ...decodeStamp(e.key, e.value), rev: e.rev };
    };
    await cs.assign(url, { node: 'n1', handle: 'net:a:eth0', auto: { 4: 1 } });
    const n1 = await stampOf('n1');
    await Promise.all(['b', 'c', 'd'].map((id) => cs.assign(url, { node: 'n2', handle: `net:${id}:eth0`, auto: { 4: 1 } })));
    assert.ok(cs.groups.batches >= 1, 'the three ADDs of n2 went as a group');
    assert.equal((await stampOf('n1')).rev, n1.rev, "n2's txns do not write n1's stamp");
    assert.equal((await stampOf('n2')).rev, await store.revision());
    await cs.run(url, 'n1', (ipam) => ipam.withReason('cni-gc').releaseHandle('net:a:eth0', 'n1'));
    assert.equal((await stampOf('n1')).why, 'cni-gc');
    assert.equal((await stampOf('n1')).rev, await store.revision());
  } finally {
    await cs.close();
  }
});

test('the DELs queued together on a node are one group release (one round trip), in queue order with the ADDs around them', async () => {
  const { decodeStamp, stampKey } = await import('../cluster/records/history-stamp.js');
  const cs = new ClusterServices();
  try {
    const url = 'memory:cluster-services-release';
    await cs.run(url, 'n1', (ipam) => ipam.createPool({ name: 'v4', cidr: '10.0.0.0/16' }));
    const ids = ['a', 'b', 'c', 'd', 'e', 'f'];
    const got = await Promise.all(ids.map((id) => cs.assign(url, { node: 'n1', handle: `net:${id}:eth0`, auto: { 4: 1 } })));
    const store = await cs.storeOf(url);
    const before = store.roundTrips;
    // Queued in one turn: six DELs, then an ADD that re-creates the first handle.
    const dels = ids.map((id) => cs.release(url, 'n1', `net:${id}:eth0`));
    const again = cs.assign(url, { node: 'n1', handle: 'net:a:eth0', auto: { 4: 1 } });
    const freed = await Promise.all(dels);
    assert.deepEqual(cs.releaseGroups, { batches: 1, dels: 6 }, 'the six DELs went as one group');
    freed.forEach((f, i) =>
      assert.deepEqual(
        f.map((r) => r.addr),
        got[i]!.map((a) => a.addr),
        `DEL ${ids[i]} freed its own address`,
      ),
    );
    assert.equal((await again).length, 1, 'the ADD queued after the DELs ran after them');
    assert.equal(store.roundTrips - before, 2, 'one txn for the six DELs, one for the ADD after them');
    const stamp = await store.get(stampKey('n1'));
    assert.ok(stamp);
    assert.equal(decodeStamp(stamp.key, stamp.value).why, undefined, 'the last txn is the ADD');
    const ipam = (await import('../cluster/service/cluster-ipam.js')).ClusterIpam;
    const held = await new ipam(store).addressesOf('net:b:eth0');
    assert.equal(held, undefined, 'b released');
  } finally {
    await cs.close();
  }
});

test('a node in a burst holds a lone ADD for LINGER_MS so that the next one joins its transaction; an idle node never waits', async () => {
  const root = mkdtempSync(join(tmpdir(), 'podipam-cs-'));
  const cs = new ClusterServices();
  try {
    const url = `sqlite:${join(root, 'db.sqlite')}`;
    await cs.run(url, 'n1', (ipam) => ipam.createPool({ name: 'v4', cidr: '10.0.0.0/16' }));
    const add = (h: string) => cs.assign(url, { node: 'n1', handle: `net:${h}:eth0`, auto: { 4: 1 } });
    // A lone ADD, and another queued one turn of the event loop later (after the first's drain began).
    const loneThenNext = async (a: string, b: string) => {
      const first = add(a);
      const second = await new Promise<Promise<unknown>>((r) => setImmediate(() => r(add(b))));
      await Promise.all([first, second]);
    };
    await loneThenNext('idle-1', 'idle-2');
    assert.deepEqual(cs.groups, { batches: 0, adds: 0 }, 'an idle node writes a lone ADD at once');
    await Promise.all(['b1', 'b2', 'b3'].map(add));
    assert.deepEqual(cs.groups, { batches: 1, adds: 3 }, 'a burst is one group');
    await loneThenNext('burst-1', 'burst-2');
    assert.deepEqual(cs.groups, { batches: 2, adds: 5 }, 'in a burst, the lone ADD waited for the next one');
    await new Promise((r) => setTimeout(r, BURST_WINDOW_MS + 20));
    await loneThenNext('after-1', 'after-2');
    assert.deepEqual(cs.groups, { batches: 2, adds: 5 }, 'once the burst is over, no ADD waits');
  } finally {
    await cs.close();
    rmSync(root, { recursive: true, force: true });
  }
});
