import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { addNode } from '../controller/add-node.js';
import { formatPrefix } from '../ip/index.js';
import { openStore, StoreUnavailableError } from '../store/index.js';
import { podCidrCachePath, PodCidrNotAssignedError, resolvePodCidrs } from './pod-cidr-source.js';

/** A loopback port with nothing listening (taken, then released). */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

test('resolvePodCidrs reads the node record, caches it, and names unknown or unassigned nodes', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'podipam-podcidr-'));
  try {
    const datastore = `sqlite:${join(dir, 'ds.db')}`;
    const store = await openStore(datastore);
    try {
      await addNode(store, { name: 'node-a', podCIDRs: ['10.244.3.0/24', 'fd00:10:0:3::/64'] });
      await addNode(store, { name: 'node-b' });
    } finally {
      await store.close();
    }
    const cacheDir = join(dir, 'cache');
    const got = await resolvePodCidrs({ datastore, nodeName: 'node-a', cacheDir });
    assert.deepEqual(got.map(formatPrefix), ['10.244.3.0/24', 'fd00:10:0:3::/64']);
    assert.deepEqual(JSON.parse(readFileSync(podCidrCachePath(cacheDir, 'node-a'), 'utf8')), {
      nodeName: 'node-a',
      datastore,
      podCIDRs: ['10.244.3.0/24', 'fd00:10:0:3::/64'],
    });
    await assert.rejects(resolvePodCidrs({ datastore, nodeName: 'node-z', cacheDir }), (e: unknown) => {
      assert.ok(e instanceof PodCidrNotAssignedError);
      assert.equal(e.nodeName, 'node-z');
      assert.equal(e.reason, 'unknown-node');
      assert.match(e.message, /node "node-z" is not registered in datastore sqlite:/);
      return true;
    });
    await assert.rejects(resolvePodCidrs({ datastore, nodeName: 'node-b', cacheDir }), (e: unknown) => {
      assert.ok(e instanceof PodCidrNotAssignedError);
      assert.equal(e.reason, 'no-cidr');
      assert.match(e.message, /node "node-b" has no pod CIDR yet/);
      return true;
    });
    assert.equal(existsSync(podCidrCachePath(cacheDir, 'node-b')), false);
    await assert.rejects(resolvePodCidrs({ datastore, nodeName: '../etc', cacheDir }), /invalid node name "..\/etc"/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('resolvePodCidrs falls back to the cache only when the datastore is unreachable', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'podipam-podcidr-'));
  try {
    const datastore = `etcd://127.0.0.1:${await closedPort()}`;
    const opts = { datastore, nodeName: 'node-a', cacheDir: dir, timeoutMs: 500 };
    await assert.rejects(resolvePodCidrs(opts), StoreUnavailableError);
    writeFileSync(podCidrCachePath(dir, 'node-a'), JSON.stringify({ nodeName: 'node-a', datastore, podCIDRs: ['10.1.2.0/24'] }));
    assert.deepEqual((await resolvePodCidrs(opts)).map(formatPrefix), ['10.1.2.0/24']);
    // A cache written for another datastore is not used.
    writeFileSync(podCidrCachePath(dir, 'node-a'), JSON.stringify({ nodeName: 'node-a', datastore: 'etcd://10.0.0.1:2379', podCIDRs: ['10.1.2.0/24'] }));
    await assert.rejects(resolvePodCidrs(opts), StoreUnavailableError);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
