/**
 * Group commit (assign-group.ts): a batch of a node's ADDs in one transaction gives every
 * request what assign would (distinct addresses, one per family, idempotent repeats), costs one
 * round trip in the steady state, and falls back to single assignments — still correct — when
 * a compare fails, a handle repeats, or a request cannot be planned from the view.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatAddr } from '../../ip/index.js';
import { openStore } from '../../store/index.js';
import { ClusterIpam } from '../service/cluster-ipam.js';
import type { AssignRequest } from '../records/assignment.js';

const req = (node: string, id: string): AssignRequest => ({
  node,
  handle: `net.${id}.eth0`,
  attrs: { network: 'net', containerId: id, ifname: 'eth0' },
  auto: 'each-family',
});

async function setup(blockSize = 26): Promise<ClusterIpam> {
  const store = await openStore('memory:');
  const ipam = new ClusterIpam(store);
  await ipam.createPool({ name: 'v4', cidr: '10.50.0.0/16', blockSize });
  await ipam.createPool({ name: 'v6', cidr: 'fd50::/64' });
  return ipam;
}

const addrs = (o: { ok: boolean; assignments?: { addr: Parameters<typeof formatAddr>[0] }[] }[]): string[] =>
  o.flatMap((x) => {
    assert.ok(x.ok, `failed: ${String((x as { error?: unknown }).error)}`);
    return x.assignments!.map((a) => formatAddr(a.addr));
  });

test('a batch of 20 ADDs: one address per family each, all distinct, one round trip once the node is warm', async () => {
  const ipam = await setup();
  await ipam.assign(req('n1', 'warm')); // claims the node's blocks
  const before = ipam.store.roundTrips;
  const out = await ipam.assignMany(
    'n1',
    Array.from({ length: 20 }, (_, i) => req('n1', `p${i}`)),
  );
  assert.equal(ipam.store.roundTrips - before, 1, 'one transaction for the whole batch');
  const all = addrs(out);
  assert.equal(all.length, 40);
  assert.equal(new Set(all).size, 40);
  for (let i = 0; i < 20; i++) {
    const held = await ipam.addressesOf(`net.p${i}.eth0`);
    const o = out[i]!;
    assert.deepEqual(
      held!.map((a) => formatAddr(a.addr)),
      o.ok ? o.assignments.map((a) => formatAddr(a.addr)) : [],
    );
  }
  const check = await ipam.check();
  assert.deepEqual({ leaks: check.leaks, problems: check.problems }, { leaks: [], problems: [] });
});

test('a batch that fills a block claims the next one within the batch; repeats of a handle get the same addresses', async () => {
  const ipam = await setup(29); // 8 addresses per v4 block
  const out = await ipam.assignMany('n1', [...Array.from({ length: 12 }, (_, i) => req('n1', `q${i}`)), req('n1', 'q0')]);
  const v4 = out.map((o) => (o.ok ? o.assignments.filter((a) => a.addr.family === 4).map((a) => formatAddr(a.addr))[0] : 'error'));
  assert.equal(v4[12], v4[0], 'the repeated handle got its address back');
  assert.equal(new Set(v4.slice(0, 12)).size, 12);
  const check = await ipam.check();
  assert.deepEqual({ leaks: check.leaks, problems: check.problems }, { leaks: [], problems: [] });
});

test('a stale view (another writer took addresses) fails the batch compare; each request then succeeds alone, no duplicate', async () => {
  const ipam = await setup();
  await ipam.assign(req('n1', 'warm'));
  const other = new ClusterIpam(ipam.store); // a second process on the same store, same node
  for (let i = 0; i < 5; i++) await other.assign(req('n1', `o${i}`));
  const before = ipam.store.roundTrips;
  const out = await ipam.assignMany(
    'n1',
    Array.from({ length: 6 }, (_, i) => req('n1', `b${i}`)),
  );
  assert.ok(ipam.store.roundTrips - before > 1, 'the batch transaction failed its compares and the requests ran alone');
  const mine = addrs(out);
  const theirs = (await Promise.all(Array.from({ length: 5 }, (_, i) => ipam.addressesOf(`net.o${i}.eth0`)))).flatMap((h) => h!.map((a) => formatAddr(a.addr)));
  assert.equal(new Set([...mine, ...theirs]).size, mine.length + theirs.length);
});

test('an exhausted pool: the requests that fit get addresses, the rest get the exhaustion error', async () => {
  const store = await openStore('memory:');
  const ipam = new ClusterIpam(store);
  await ipam.createPool({ name: 'tiny', cidr: '10.60.0.0/29', blockSize: 29 });
  const out = await ipam.assignMany(
    'n1',
    Array.from({ length: 10 }, (_, i) => req('n1', `t${i}`)),
  );
  const ok = out.filter((o) => o.ok).length;
  assert.ok(ok > 0 && ok < 10, `${ok} of 10 succeeded`);
  for (const o of out) if (!o.ok) assert.match(String((o.error as Error).name), /PoolExhausted/);
  const all = out.flatMap((o) => (o.ok ? o.assignments.map((a) => formatAddr(a.addr)) : []));
  assert.equal(new Set(all).size, all.length);
});
