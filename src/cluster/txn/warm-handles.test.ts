import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { ClusterIpam } from '../service/cluster-ipam.js';
import { WarmRecordKeyError } from './warm-handles.js';
import { type Compare, type Op, type Store, type TxnResult, openStore } from '../../store/index.js';
import { StoreUnavailableError } from '../../store/errors.js';

const dir = mkdtempSync(join(tmpdir(), 'podipam-warm-handles-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

async function withIpam(fn: (ipam: ClusterIpam) => Promise<void>): Promise<void> {
  const store = await openStore(`sqlite:${join(dir, `t${++n}.db`)}`);
  try {
    await fn(new ClusterIpam(store));
  } finally {
    await store.close();
  }
}

test('warmHandles lists the handles of a prefix by name, not the others', () =>
  withIpam(async (ipam) => {
    await ipam.createPool({ name: 'p', cidr: '10.6.0.0/24', blockSize: 28 });
    await ipam.assign({ node: 'n1', handle: 'podipam-warm:n1:a', auto: { 4: 2 } });
    await ipam.assign({ node: 'n1', handle: 'podipam-warm:n1:b', auto: { 4: 1 } });
    await ipam.assign({ node: 'n2', handle: 'podipam-warm:n2:a', auto: { 4: 1 } });
    await ipam.assign({ node: 'n1', handle: 'pod-x', auto: { 4: 1 } });
    assert.deepEqual(await ipam.warmHandles('podipam-warm:n1:'), ['podipam-warm:n1:a', 'podipam-warm:n1:b']);
    assert.deepEqual(await ipam.warmHandles('podipam-warm:n3:'), []);
  }));

test('writeWarmRecords puts and deletes in one transaction (a key given twice: its last write); warmRecords reads a prefix', () =>
  withIpam(async (ipam) => {
    await ipam.writeWarmRecords([
      { key: 'agent-pods/n1/a', value: '{"addrs":["10.6.0.1"]}' },
      { key: 'agent-pods/n1/b', value: '{"addrs":["10.6.0.2"]}' },
      { key: 'agent-pods/n2/a', value: '{}' },
      { key: 'agent-pods/n1/c', value: 'x' },
      { key: 'agent-pods/n1/c', value: undefined },
    ]);
    assert.deepEqual(await ipam.warmRecords('agent-pods/n1/'), [
      { key: 'agent-pods/n1/a', value: '{"addrs":["10.6.0.1"]}' },
      { key: 'agent-pods/n1/b', value: '{"addrs":["10.6.0.2"]}' },
    ]);
    await ipam.writeWarmRecords([{ key: 'agent-pods/n1/a', value: undefined }]);
    assert.deepEqual(
      (await ipam.warmRecords('agent-pods/n1/')).map((r) => r.key),
      ['agent-pods/n1/b'],
    );
    await ipam.writeWarmRecords([]);
  }));

test("writeWarmRecords refuses a key of the allocator's own, writing nothing", () =>
  withIpam(async (ipam) => {
    for (const key of ['handles/x', 'blocks/10.0.0.0-26', 'pools/p', 'config', '']) {
      await assert.rejects(
        ipam.writeWarmRecords([
          { key: 'agent-pods/n1/ok', value: '{}' },
          { key, value: '{}' },
        ]),
        (e: unknown) => e instanceof WarmRecordKeyError && e.key === key,
      );
    }
    assert.deepEqual(await ipam.warmRecords('agent-pods/'), []);
    await assert.rejects(ipam.warmRecords('handles/'), WarmRecordKeyError);
  }));

test('currentPools reloads the snapshot only when the config generation changed: a pool created later is seen', () =>
  withIpam(async (ipam) => {
    await ipam.createPool({ name: 'v4', cidr: '10.7.0.0/16' });
    assert.deepEqual(
      (await ipam.currentPools()).pools.map((p) => p.name),
      ['v4'],
    );
    const snap = ipam.cache.snapshot;
    assert.ok(snap);
    assert.equal((await ipam.currentPools()).pools.length, 1);
    assert.equal(ipam.cache.snapshot, snap, 'not reloaded while the config is unchanged');
    await ipam.createPool({ name: 'v4b', cidr: '10.8.0.0/16' });
    assert.deepEqual(
      (await ipam.currentPools()).pools.map((p) => p.name),
      ['v4', 'v4b'],
    );
  }));

/** A store whose next txn is "given up": the caller gets a timeout now, the txn runs when `land()` is called. */
function lateStore(store: Store) {
  const late = { holdNext: false, land: async (): Promise<TxnResult> => Promise.reject(new Error('nothing held')) };
  const proxy = new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'txn') {
        return (compares: readonly Compare[], ops: readonly Op[]) => {
          if (!late.holdNext) return target.txn(compares, ops);
          late.holdNext = false;
          late.land = () => target.txn(compares, ops);
          return Promise.reject(new StoreUnavailableError('sqlite:late', 'did not answer within 5000 ms'));
        };
      }
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { proxy, late };
}

test('a fenced write given up on a timeout cannot land after a later one: the record the later txn deleted stays deleted (unfenced, the late put brings it back)', async () => {
  for (const fenced of [true, false]) {
    const store = await openStore(`sqlite:${join(dir, `t${++n}.db`)}`);
    try {
      const { proxy, late } = lateStore(store);
      const ipam = new ClusterIpam(proxy);
      const fence = (rev: number) => (fenced ? { key: 'agent-writes/n1', rev } : undefined);
      const put = { key: 'agent-pods/n1/a', value: '{"addrs":["10.6.0.1"]}' };
      late.holdNext = true;
      await assert.rejects(ipam.writeWarmRecords([put], fence(0)), StoreUnavailableError);
      // The write-behind writes its queue again (the put, and the DEL's delete queued since),
      // over the fence as it last saw it: the given-up txn has not landed yet.
      const later = await ipam.writeWarmRecords([put, { key: put.key, value: undefined }], fence(0));
      assert.equal(later.written, true);
      const landed = await late.land();
      if (fenced) {
        assert.equal(landed.succeeded, false, 'the late txn is refused: the fence moved');
        assert.equal(await store.get(put.key), undefined);
        assert.equal((await store.get('agent-writes/n1'))?.rev, later.fenceRev);
      } else {
        assert.equal(landed.succeeded, true);
        assert.ok(await store.get(put.key), 'without the fence the late put lands after the delete: the failure the fence is for');
      }
    } finally {
      await store.close();
    }
  }
});

test('a fenced write over a fence that moved writes nothing and answers its revision now; written again with it, it lands', () =>
  withIpam(async (ipam) => {
    const first = await ipam.writeWarmRecords([{ key: 'agent-pods/n1/a', value: '{}' }], { key: 'agent-writes/n1', rev: 0 });
    assert.equal(first.written, true);
    const stale = await ipam.writeWarmRecords([{ key: 'agent-pods/n1/b', value: '{}' }], { key: 'agent-writes/n1', rev: 0 });
    assert.deepEqual(stale, { written: false, fenceRev: first.fenceRev });
    assert.deepEqual(await ipam.warmRecords('agent-pods/n1/'), [{ key: 'agent-pods/n1/a', value: '{}' }]);
    const again = await ipam.writeWarmRecords([{ key: 'agent-pods/n1/b', value: '{}' }], { key: 'agent-writes/n1', rev: stale.fenceRev });
    assert.equal(again.written, true);
    assert.equal((await ipam.warmRecords('agent-pods/n1/')).length, 2);
  }));
