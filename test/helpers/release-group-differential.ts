/**
 * The group-release differential (src/cluster/txn/release-group.ts): a node of 24 dual-stack pods
 * in blocks of 8 v4 addresses; 18 of its releases grouped on one store and one at a time on
 * another must free the same addresses and leave the same records. Shared by the unit test
 * (memory, SQLite) and the integration test (a real 3-member etcd).
 */
import assert from 'node:assert/strict';
import { formatAddr } from '../../src/ip/index.js';
import type { Store } from '../../src/store/index.js';
import { ClusterIpam } from '../../src/cluster/service/cluster-ipam.js';
import { AFFINITY_PREFIX, BLOCK_PREFIX, HANDLE_PREFIX } from '../../src/cluster/records/keys.js';
import type { AssignRequest } from '../../src/cluster/records/assignment.js';
import type { ReleaseOutcome } from '../../src/cluster/txn/release-group.js';

export const T0 = Date.parse('2026-12-04T12:00:00Z');
export const req = (node: string, id: string): AssignRequest => ({
  node,
  handle: `net.${id}.eth0`,
  attrs: { network: 'net', containerId: id, ifname: 'eth0' },
  auto: 'each-family',
});
export const handle = (id: string): string => `net.${id}.eth0`;

/** A node holding `pods` pods of two families in blocks of 8 v4 addresses (several blocks, some emptied by the releases). */
export async function filled(store: Store, pods: number, reuseAfter?: string): Promise<ClusterIpam> {
  const ipam = new ClusterIpam(store, { now: () => new Date(T0), writer: 'n1' });
  await ipam.createPool({ name: 'v4', cidr: '10.50.0.0/16', blockSize: 29, ...(reuseAfter ? { reuseAfter } : {}) });
  await ipam.createPool({ name: 'v6', cidr: 'fd50::/64' });
  for (let i = 0; i < pods; i++) await ipam.assign(req('n1', `p${i}`));
  return ipam;
}

/** The records a release changes, by key (revisions and history stamps left out). */
export async function records(store: Store): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const p of [BLOCK_PREFIX, AFFINITY_PREFIX, HANDLE_PREFIX]) for (const e of await store.list(p)) out.set(e.key, e.value);
  return out;
}

export const freed = (o: ReleaseOutcome): string[] => {
  assert.ok(o.ok, `failed: ${String((o as { error?: unknown }).error)}`);
  return o.released.map((r) => `${r.handle} ${formatAddr(r.addr)}`).sort();
};

/** The same releases grouped on `a` and one at a time on `b`: the same outcomes and the same records. */
export async function differential(a: Store, b: Store, reuseAfter?: string): Promise<void> {
  const ga = await filled(a, 24, reuseAfter);
  const gb = await filled(b, 24, reuseAfter);
  assert.deepEqual(await records(a), await records(b), 'the same start');
  // Every other pod, then a whole block's worth at the end: blocks thin out and some empty.
  const which = [...Array.from({ length: 12 }, (_, i) => handle(`p${2 * i}`)), ...Array.from({ length: 6 }, (_, i) => handle(`p${2 * i + 13}`))];
  const before = a.roundTrips;
  const grouped = await ga.releaseMany('n1', which);
  assert.equal(a.roundTrips - before, 1, 'one transaction for the whole group');
  const single = [];
  for (const h of which) single.push(await gb.releaseHandle(h, 'n1'));
  assert.deepEqual(
    grouped.map(freed),
    single.map((s) => s.map((r) => `${r.handle} ${formatAddr(r.addr)}`).sort()),
    'each release freed exactly what it would alone',
  );
  for (const [i, o] of grouped.entries()) assert.equal(freed(o).length, 2, `release ${i} freed its two addresses`);
  assert.deepEqual(await records(a), await records(b), 'the same records after');
  const check = await ga.check();
  assert.deepEqual({ leaks: check.leaks, problems: check.problems }, { leaks: [], problems: [] });
}
