import { test } from 'node:test';
import { decodeNodeTombstone, nodeTombstoneKey } from '../model/node-tombstone.js';
import assert from 'node:assert/strict';
import { parsePrefix } from '../ip/index.js';
import { MemoryStore } from '../store/memory/memory-store.js';
import { openStore, StoreUnavailableError, type Store } from '../store/index.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { addNode } from './add-node.js';
import { parseControllerConfig, type ControllerSettings } from './controller-config.js';
import { deleteNode } from './delete-node.js';
import { listNodes } from './list-nodes.js';
import { NodeCidrController, type NodeCidrControllerOptions } from './node-cidr-controller.js';
import { encodeNodeRecord, nodeKey } from '../model/node-record.js';
import { linesLog } from '../../test/helpers/lines-log.js';
import { withTxn } from '../../test/helpers/txn-store.js';

function controller(store: Store, flags: ControllerSettings, extra: Partial<NodeCidrControllerOptions> = {}): { c: NodeCidrController; log: string[] } {
  const log: string[] = [];
  const c = new NodeCidrController({ store, config: parseControllerConfig(flags), log: linesLog(log, { fields: true }), pollIntervalMs: 20, ...extra });
  return { c, log };
}

async function cidrsByNode(store: Store): Promise<Map<string, readonly string[]>> {
  return new Map((await listNodes(store)).map((n) => [n.record.name, n.record.podCIDRs]));
}

function assertDistinct(all: Map<string, readonly string[]>): void {
  const flat = [...all.values()].flat();
  assert.equal(new Set(flat).size, flat.length, `a CIDR recorded twice: ${flat.join(' ')}`);
}

/** Polls `check` every 10 ms for up to `ms`; fails naming `what`. */
async function waitFor(what: string, check: () => Promise<boolean>, ms = 5000): Promise<void> {
  for (let waited = 0; waited < ms; waited += 10) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.fail(`timed out waiting for ${what}`);
}

for (const batch of [true, false])
  test(`controller gives every dual-stack node one CIDR per family, in cluster-CIDR order (batch: ${batch})`, async () => {
    const store = new MemoryStore();
    for (let i = 0; i < 20; i++) await addNode(store, { name: `n${i}` });
    const { c, log } = controller(store, { clusterCidrs: '10.244.0.0/16,fd00:10::/56', nodeMaskSize: '24', nodeMaskSizeV6: '64' }, { batch });
    const rt = store.roundTrips;
    const s = await c.runOnce();
    assert.deepEqual(s, { nodes: 20, assigned: 20, waiting: [], failed: [] });
    // Batched: one transaction for all 20 (plus listings); per node: a transaction each.
    assert.ok(batch ? store.roundTrips - rt < 10 : store.roundTrips - rt >= 20, `${store.roundTrips - rt} round trips`);
    const all = await cidrsByNode(store);
    assert.deepEqual(all.get('n0'), ['10.244.0.0/24', 'fd00:10::/64']);
    for (const cidrs of all.values()) {
      assert.equal(cidrs.length, 2);
      assert.match(cidrs[0] as string, /^10\.244\.\d+\.0\/24$/);
      assert.match(cidrs[1] as string, /^fd00:10:0:[0-9a-f]+::\/64$|^fd00:10::\/64$/);
    }
    assertDistinct(all);
    assert.equal(log.filter((l) => l.startsWith('assigned ')).length, 20);
    // Claims match the records exactly.
    const claims = await store.list('nodecidrs/');
    assert.equal(claims.length, 40);
  });

test('controller restarted on recorded CIDRs never hands one out twice', async () => {
  const store = new MemoryStore();
  const flags = { clusterCidrs: '10.0.0.0/20', nodeMaskSize: '24' };
  for (let i = 0; i < 5; i++) await addNode(store, { name: `a${i}` });
  await controller(store, flags).c.runOnce();
  // A node registered with a CIDR (as the Kubernetes adapter does for spec.podCIDRs).
  await addNode(store, { name: 'preset', podCIDRs: ['10.0.7.0/24'] });
  for (let i = 0; i < 10; i++) await addNode(store, { name: `b${i}` });
  const second = controller(store, flags).c;
  const s = await second.runOnce();
  assert.equal(s.assigned, 10);
  assert.equal(second.stats().conflicts, 0, 'recorded CIDRs were occupied before allocating, not found by losing claims');
  const all = await cidrsByNode(store);
  assertDistinct(all);
  assert.equal([...all.values()].flat().length, 16);
  assert.deepEqual(all.get('preset'), ['10.0.7.0/24']);
});

test('controller reports CIDRNotAvailable naming node and cluster CIDRs, then serves the node once a CIDR is freed', async () => {
  const store = new MemoryStore();
  const { c, log } = controller(store, { clusterCidrs: '10.0.0.0/23', nodeMaskSize: '24' });
  for (const n of ['x', 'y', 'z']) await addNode(store, { name: n });
  const s = await c.runOnce();
  assert.deepEqual(s.waiting, ['z']);
  assert.ok(log.includes('CIDRNotAvailable: node "z" cannot get an IPv4 pod CIDR: no remaining node CIDRs in cluster CIDRs 10.0.0.0/23'), log.join('\n'));
  await c.start();
  try {
    const freed = await deleteNode(store, 'x', { by: 'cli' });
    await waitFor('z to get the freed CIDR', async () => (await cidrsByNode(store)).get('z')?.[0] === freed.podCIDRs[0]);
    assert.equal(log.filter((l) => l.startsWith('CIDRNotAvailable')).length, 1, 'logged once while waiting');
  } finally {
    await c.stop();
  }
});

test('a running controller grown by a cluster CIDR serves the nodes that were waiting', async () => {
  const store = new MemoryStore();
  const { c, log } = controller(store, { clusterCidrs: '10.6.0.0/24', nodeMaskSize: '24' });
  for (const n of ['g1', 'g2', 'g3']) await addNode(store, { name: n });
  await c.start();
  try {
    await waitFor('two nodes waiting', async () => log.filter((l) => l.startsWith('CIDRNotAvailable')).length === 2);
    assert.throws(() => c.addClusterCidr(parsePrefix('10.6.0.128/25')), /overlaps cluster CIDR 10.6.0.0\/24/);
    c.addClusterCidr(parsePrefix('10.7.0.0/23'));
    await waitFor('all three served', async () => [...(await cidrsByNode(store)).values()].every((x) => x.length === 1));
    assert.deepEqual([...(await cidrsByNode(store)).values()].flat().sort(), ['10.6.0.0/24', '10.7.0.0/24', '10.7.1.0/24']);
  } finally {
    await c.stop();
  }
});

test("a running controller picks up added nodes, and reuses a deleted node's CIDR after wrapping", async () => {
  const store = new MemoryStore();
  const { c } = controller(store, { clusterCidrs: '10.1.0.0/22', nodeMaskSize: '24' });
  await c.start();
  try {
    for (const n of ['a', 'b', 'c']) await addNode(store, { name: n });
    await waitFor('three CIDRs', async () => [...(await cidrsByNode(store)).values()].every((x) => x.length === 1));
    const b = await deleteNode(store, 'b', { by: 'cli' });
    assert.deepEqual(b.podCIDRs, ['10.1.1.0/24']);
    await addNode(store, { name: 'd' });
    await waitFor('d', async () => (await cidrsByNode(store)).get('d')?.length === 1);
    assert.deepEqual((await cidrsByNode(store)).get('d'), ['10.1.3.0/24'], 'round robin: the free block after the last one first');
    await addNode(store, { name: 'e' });
    await waitFor('e', async () => (await cidrsByNode(store)).get('e')?.length === 1);
    assert.deepEqual((await cidrsByNode(store)).get('e'), ['10.1.1.0/24'], 'then the released one');
  } finally {
    await c.stop();
  }
});

test('two controllers on one store never record a CIDR twice', async () => {
  const store = new MemoryStore('two-controllers');
  const other = new MemoryStore('two-controllers');
  const flags = { clusterCidrs: '10.8.0.0/16,fd00:8::/48', nodeMaskSize: '26', nodeMaskSizeV6: '64' };
  const one = controller(store, flags, { workers: 4 }).c;
  const two = controller(other, flags, { workers: 4 }).c;
  // Both rebuild from the same records and start their round robin at the same block.
  await Promise.all(Array.from({ length: 100 }, (_, i) => addNode(store, { name: `r${i}` })));
  await Promise.all([one.runOnce(), two.runOnce()]);
  assert.ok(one.stats().conflicts + two.stats().conflicts > 0, 'they raced: writes were lost to the other');
  // Then both run, polling, while more nodes come.
  await Promise.all([one.start(), two.start()]);
  try {
    await Promise.all(Array.from({ length: 100 }, (_, i) => addNode(store, { name: `s${i}` })));
    await waitFor('200 dual-stack nodes', async () => [...(await cidrsByNode(store)).values()].every((x) => x.length === 2));
  } finally {
    await Promise.all([one.stop(), two.stop()]);
  }
  assert.equal(one.stats().assigned + two.stats().assigned, 200);
  const all = await cidrsByNode(store);
  assert.equal(all.size, 200);
  assertDistinct(all);
  assert.equal((await store.list('nodecidrs/')).length, 400);
});

test('controller sweeps claims left by records removed by hand, and frees their CIDRs', async () => {
  const store = new MemoryStore();
  const flags = { clusterCidrs: '10.2.0.0/22', nodeMaskSize: '24' };
  for (const n of ['p', 'q', 'o']) await addNode(store, { name: n });
  const first = controller(store, flags);
  await first.c.runOnce();
  const gone = [...(await cidrsByNode(store)).entries()].filter(([n]) => n !== 'q');
  await store.txn(
    [],
    [
      { type: 'delete', key: nodeKey('p') },
      { type: 'delete', key: nodeKey('o') },
    ],
  );
  for (const n of ['r', 's', 't']) await addNode(store, { name: n });
  // The same controller, at its next resync: both orphans swept, both CIDRs free again.
  const s = await first.c.runOnce();
  assert.deepEqual(s.waiting, [], first.log.join('\n'));
  for (const [n, cidrs] of gone) assert.ok(first.log.includes(`swept orphan claim cidr=${cidrs[0]} node=${n}`), first.log.join('\n'));
  const all = await cidrsByNode(store);
  assertDistinct(all);
  assert.equal([...all.values()].flat().length, 4);
  assert.equal((await store.list('nodecidrs/')).length, 4);
});

test('controller removes a record marked deleting, with its claims', async () => {
  const store = new MemoryStore();
  const flags = { clusterCidrs: '10.3.0.0/24', nodeMaskSize: '24' };
  await addNode(store, { name: 'gone' });
  await controller(store, flags).c.runOnce();
  const e = await store.get(nodeKey('gone'));
  const rec = JSON.parse(e?.value ?? '{}');
  await store.txn([], [{ type: 'put', key: nodeKey('gone'), value: encodeNodeRecord({ ...rec, deleting: true }) }]);
  await addNode(store, { name: 'next' });
  const s = await controller(store, flags).c.runOnce();
  assert.deepEqual(s.waiting, []);
  assert.equal(await store.get(nodeKey('gone')), undefined);
  const t = await store.get(nodeTombstoneKey('gone'));
  assert.equal(t && decodeNodeTombstone(t.key, t.value).by, 'controller', 'the deletion wrote the proof cluster GC needs');
  assert.deepEqual((await cidrsByNode(store)).get('next'), ['10.3.0.0/24']);
});

test('controller retries with back-off while the store is unavailable, without duplicates', async () => {
  const inner = new MemoryStore();
  let failures = 0;
  // Every third write fails as an unreachable engine would.
  const flaky = withTxn(inner, async (c, o) => {
    if (o.length > 0 && failures++ % 3 === 0) throw new StoreUnavailableError(inner.url, 'injected');
    return inner.txn(c, o);
  });
  for (let i = 0; i < 30; i++) await addNode(inner, { name: `f${i}` });
  const { c } = controller(flaky, { clusterCidrs: '10.4.0.0/16', nodeMaskSize: '24' });
  const s = await c.runOnce();
  assert.deepEqual(s.failed, []);
  assert.equal(s.assigned, 30);
  assert.ok(failures >= 30);
  assertDistinct(await cidrsByNode(inner));
});

test('a running controller on SQLite serves a node another connection adds, by its watch (no resync due)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'podipam-ctl-watch-'));
  const url = `sqlite:${join(dir, 'store.db')}`;
  const mine = await openStore(url);
  const theirs = await openStore(url);
  const { c, log } = controller(mine, { clusterCidrs: '10.5.0.0/16', nodeMaskSize: '24' }, { resyncIntervalMs: 3_600_000, pollIntervalMs: 3_600_000 });
  try {
    await c.start();
    await addNode(theirs, { name: 'late' });
    await waitFor('the node to get a CIDR', async () => (await cidrsByNode(theirs)).get('late')?.length === 1, 20_000);
    assert.ok(
      log.some((l) => l.startsWith('assigned node=late')),
      log.join('\n'),
    );
    await deleteNode(theirs, 'late', { by: 'cli' });
    await waitFor('the CIDR to be released', async () => log.some((l) => l.startsWith('released node=late')), 20_000);
  } finally {
    await c.stop();
    await mine.close();
    await theirs.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
