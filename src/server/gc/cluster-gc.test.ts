import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ClusterIpam } from '../../cluster/index.js';
import { handleKey } from '../../cluster/records/keys.js';
import { addNode } from '../../controller/add-node.js';
import { deleteNode } from '../../controller/delete-node.js';
import { openStore, type Store } from '../../store/index.js';
import { ClusterGc } from './cluster-gc.js';
import { formatAddr } from '../../ip/index.js';
import { linesLog } from '../../../test/helpers/lines-log.js';

async function dropHandle(store: Store, handle: string): Promise<void> {
  const e = await store.get(handleKey(handle));
  assert.ok(e);
  assert.ok((await store.txn([{ key: e.key, rev: e.rev }], [{ type: 'delete', key: e.key }])).succeeded);
}

async function setup() {
  const store = await openStore('memory:');
  const ipam = new ClusterIpam(store);
  await ipam.createPool({ name: 'v4', cidr: '10.0.0.0/24', blockSize: 28 });
  let now = 0;
  const lines: string[] = [];
  const gc = new ClusterGc({ ipam, graceMs: 1000, log: linesLog(lines), now: () => now });
  return { store, ipam, gc, lines, advance: (ms: number) => (now += ms) };
}

test('gc: a leak is freed only after it persisted for the grace period', async () => {
  const { store, ipam, gc, advance } = await setup();
  await ipam.assign({ node: 'n1', handle: 'net.keep.eth0', auto: { 4: 1 } });
  await ipam.assign({ node: 'n1', handle: 'net.leak.eth0', auto: { 4: 1 } });
  await dropHandle(store, 'net.leak.eth0');
  assert.deepEqual(await gc.runOnce(), { leaksReleased: 0, handlesReleased: 0, blocksReleased: 0, orphansDeleted: 0, holdsReleased: 0, waiting: 1 });
  advance(999);
  assert.equal((await gc.runOnce()).leaksReleased, 0);
  advance(1);
  assert.equal((await gc.runOnce()).leaksReleased, 1);
  const check = await ipam.check();
  assert.deepEqual(check.leaks, []);
  assert.equal((await ipam.addressesOf('net.keep.eth0'))?.length, 1);
});

test('gc: a leak that was re-allocated meanwhile is left alone', async () => {
  const { store, ipam, gc, advance } = await setup();
  const [a] = await ipam.assign({ node: 'n1', handle: 'net.leak.eth0', auto: { 4: 1 } });
  await dropHandle(store, 'net.leak.eth0');
  await gc.runOnce();
  advance(5000);
  // Someone frees the address and a new pod gets exactly it before GC acts.
  // (A fresh service instance, as another process would be.)
  const other = new ClusterIpam(store);
  await other.releaseAddresses([a!.addr]);
  await other.assign({ node: 'n1', handle: 'net.new.eth0', ips: [a!.addr] });
  const r = await gc.runOnce();
  assert.equal(r.leaksReleased, 0);
  assert.equal((await ipam.addressesOf('net.new.eth0'))?.length, 1);
});

test('gc: blocks of a deleted node are released with its pods; other nodes keep theirs', async () => {
  const { store, ipam, gc, lines, advance } = await setup();
  await addNode(store, { name: 'a' });
  await addNode(store, { name: 'b' });
  for (let i = 0; i < 3; i++) await ipam.assign({ node: 'a', handle: `net.a${i}.eth0`, auto: { 4: 1 } });
  await ipam.assign({ node: 'b', handle: 'net.b0.eth0', auto: { 4: 1 } });
  await deleteNode(store, 'a', { by: 'cli' });
  assert.equal((await gc.runOnce()).waiting, 1);
  advance(1000);
  const r = await gc.runOnce();
  assert.deepEqual(r, { leaksReleased: 0, handlesReleased: 3, blocksReleased: 1, orphansDeleted: 0, holdsReleased: 0, waiting: 0 });
  assert.deepEqual(await ipam.check(), { leaks: [], problems: [] });
  const usage = await ipam.usage();
  assert.deepEqual(
    usage.blocks.map((b) => [b.node, b.allocated]),
    [['b', 1]],
  );
  assert.match(lines.join('\n'), /node "a" is gone: released 3 of its pods' handle\(s\) and block 10\.0\.0\.\d+\/28 \(deleted\)/);
});

test('gc: never acts on the blocks of a node that never had a record, however long they stay', async () => {
  const { store, ipam, gc, lines, advance } = await setup();
  await addNode(store, { name: 'registered' });
  await ipam.assign({ node: 'newcomer', handle: 'net.n0.eth0', auto: { 4: 1 } });
  const first = await ipam.check();
  assert.deepEqual(
    first.problems.map((p) => p.kind),
    ['block-node-unregistered'],
  );
  assert.match(first.problems[0]!.message, /node "newcomer", which has no record and no proof of deletion: cluster GC will not free it/);
  for (let i = 0; i < 5; i++) {
    assert.deepEqual(await gc.runOnce(), { leaksReleased: 0, handlesReleased: 0, blocksReleased: 0, orphansDeleted: 0, holdsReleased: 0, waiting: 0 });
    advance(10_000);
  }
  assert.equal((await ipam.addressesOf('net.n0.eth0'))?.length, 1);
  assert.deepEqual(lines, []);
});

test('gc: a deleted node re-added within the grace period keeps its pods', async () => {
  const { store, ipam, gc, lines, advance } = await setup();
  await addNode(store, { name: 'a' });
  await ipam.assign({ node: 'a', handle: 'net.a0.eth0', auto: { 4: 1 } });
  await deleteNode(store, 'a', { by: 'kubernetes' });
  assert.match((await ipam.check()).problems[0]!.message, /node "a", whose record was deleted \(by kubernetes at /);
  assert.equal((await gc.runOnce()).waiting, 1);
  await addNode(store, { name: 'a' });
  advance(5000);
  assert.deepEqual(await gc.runOnce(), { leaksReleased: 0, handlesReleased: 0, blocksReleased: 0, orphansDeleted: 0, holdsReleased: 0, waiting: 0 });
  assert.equal((await ipam.addressesOf('net.a0.eth0'))?.length, 1);
  assert.deepEqual(lines, []);
});

test('gc: a finding past its grace whose proof went at the last moment is kept, and said so', async () => {
  const { store, ipam, lines } = await setup();
  await addNode(store, { name: 'a' });
  await ipam.assign({ node: 'a', handle: 'net.a0.eth0', auto: { 4: 1 } });
  await deleteNode(store, 'a', { by: 'api' });
  const stale = await ipam.check(); // the report GC acts on, taken before the node came back
  let now = 0;
  const gc = new ClusterGc({ ipam, check: async () => stale, graceMs: 1000, log: linesLog(lines), now: () => now });
  await gc.runOnce();
  await addNode(store, { name: 'a' });
  now += 1000;
  assert.deepEqual(await gc.runOnce(), { leaksReleased: 0, handlesReleased: 0, blocksReleased: 0, orphansDeleted: 0, holdsReleased: 0, waiting: 0 });
  assert.equal((await ipam.addressesOf('net.a0.eth0'))?.length, 1);
  assert.match(lines.join('\n'), /node "a" is back .*kept block 10\.0\.0\./);
});

test('gc: a sticky hold is released once its stickyUntil passed (no grace period more), naming the pod; a live one is kept', async () => {
  const store = await openStore('memory:');
  let now = Date.parse('2026-01-01T00:00:00Z');
  const ipam = new ClusterIpam(store, { now: () => new Date(now) });
  await ipam.createPool({ name: 'v4', cidr: '10.0.0.0/24', blockSize: 28 });
  const lines: string[] = [];
  const gc = new ClusterGc({ ipam, graceMs: 60_000, log: linesLog(lines), now: () => now });
  const [a] = await ipam.assign({ node: 'n1', handle: 'net:c1:eth0', auto: { 4: 1 } });
  const attrs = { node: 'n1', network: 'net', ifname: 'eth0', namespace: 'db', stickyUntil: '2026-01-01T00:00:01.000Z' };
  await ipam.holdSticky('net:c1:eth0', 'sticky:net:db:db-0:eth0', { ...attrs, pod: 'db-0' }, 'n1');
  await ipam.assign({ node: 'n1', handle: 'net:c2:eth0', auto: { 4: 1 } });
  await ipam.holdSticky('net:c2:eth0', 'sticky:net:db:db-1:eth0', { ...attrs, pod: 'db-1', stickyUntil: '2026-01-01T01:00:00.000Z' }, 'n1');
  assert.equal((await gc.runOnce()).holdsReleased, 0, 'not expired yet');
  now += 1000;
  assert.deepEqual(await gc.runOnce(), { leaksReleased: 0, handlesReleased: 0, blocksReleased: 0, orphansDeleted: 0, holdsReleased: 1, waiting: 0 });
  assert.ok(lines.join('\n').includes(`released sticky hold "sticky:net:db:db-0:eth0" of pod db/db-0: ${formatAddr(a!.addr)}`), lines.join('\n'));
  assert.deepEqual(
    (await ipam.check()).stickyHolds?.map((h) => h.pod),
    ['db-1'],
  );
  assert.equal((await gc.runOnce()).holdsReleased, 0);
});
