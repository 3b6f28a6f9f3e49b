import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { ClusterIpam } from './cluster-ipam.js';
import { WarmRecordKeyError } from './warm-handles.js';
import { openStore } from '../store/index.js';

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
    assert.deepEqual((await ipam.warmRecords('agent-pods/n1/')).map((r) => r.key), ['agent-pods/n1/b']);
    await ipam.writeWarmRecords([]);
  }));

test('writeWarmRecords refuses a key of the allocator\'s own, writing nothing', () =>
  withIpam(async (ipam) => {
    for (const key of ['handles/x', 'blocks/10.0.0.0-26', 'pools/p', 'config', '']) {
      await assert.rejects(ipam.writeWarmRecords([{ key: 'agent-pods/n1/ok', value: '{}' }, { key, value: '{}' }]), (e: unknown) => e instanceof WarmRecordKeyError && e.key === key);
    }
    assert.deepEqual(await ipam.warmRecords('agent-pods/'), []);
    await assert.rejects(ipam.warmRecords('handles/'), WarmRecordKeyError);
  }));

test('cachedPools loads the snapshot once and keeps it in the instance\'s cache', () =>
  withIpam(async (ipam) => {
    await ipam.createPool({ name: 'v4', cidr: '10.7.0.0/16' });
    assert.deepEqual((await ipam.cachedPools()).map((p) => p.name), ['v4']);
    const snap = ipam.cache.snapshot;
    assert.ok(snap);
    assert.equal((await ipam.cachedPools()).length, 1);
    assert.equal(ipam.cache.snapshot, snap, 'not reloaded');
  }));
