/**
 * Sticky pods in cluster mode through the BUILT plugin (bin/podipam), on SQLite and on a real
 * etcd: a pod annotated `podipam.io/sticky: "true"` (the runtime's pod annotations in
 * runtimeConfig, its name in CNI_ARGS, as containerd passes them on ADD and DEL) keeps its
 * address across recreation (new container id, new uid); meanwhile no other pod gets it; a pod
 * annotated "false", or not annotated, frees its address at once; `ipam check` is clean with a
 * live hold and lists it; with stickyFor "30s" serve's GC releases the hold once its clock passes the expiry; an
 * unannotated pod's ADD costs no more round trips than a pod the runtime did not name.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { PODIPAM_BIN, type PluginRun, runPluginSync, runCliSync } from '../helpers/plugin.js';
import { startEtcd } from '../helpers/etcd.js';
import { withTempDir } from '../helpers/tmp.js';
import { linesLog } from '../helpers/lines-log.js';
import { ClusterIpam } from '../../src/cluster/index.js';
import { openStore } from '../../src/store/index.js';
import { ClusterGc } from '../../src/server/gc/cluster-gc.js';

const NET = 'e2e-sticky';

interface Pod {
  readonly ns: string;
  readonly name: string;
  readonly uid: string;
  readonly sticky?: 'true' | 'false';
}

function call(db: string, cacheDir: string, command: 'ADD' | 'DEL', id: string, pod: Pod | undefined, stickyFor?: string) {
  return runPluginSync(PODIPAM_BIN, {
    command,
    containerId: id,
    ifname: 'eth0',
    ...(pod ? { args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${pod.ns};K8S_POD_NAME=${pod.name};K8S_POD_UID=${pod.uid}` } : {}),
    env: { PODIPAM_STATS: '1' },
    config: {
      cniVersion: '1.0.0',
      name: NET,
      ipam: { type: 'podipam', datastore: db, nodeName: 'node-a', cacheDir, ...(stickyFor ? { stickyFor } : {}) },
      ...(pod?.sticky ? { runtimeConfig: { 'io.kubernetes.cri.pod-annotations': { 'podipam.io/sticky': pod.sticky, other: 'x' } } } : {}),
    },
  });
}

const ok = (r: PluginRun, what: string): PluginRun => {
  assert.equal(r.code, 0, `${what}: ${r.stdout}${r.stderr}`);
  return r;
};
const addressOf = (r: PluginRun): string => (JSON.parse(r.stdout) as { ips: { address: string }[] }).ips[0]!.address;
const roundTrips = (r: PluginRun): number => {
  const m = /podipam-stats (\{.*\})/.exec(r.stderr);
  assert.ok(m, `no podipam-stats line in ${r.stderr}`);
  return (JSON.parse(m[1]!) as { roundTrips: number }).roundTrips;
};

async function scenario(db: string, dir: string): Promise<void> {
  const cacheDir = join(dir, 'cache');
  const created = runCliSync(db, ['pool', 'create', 'sticky-v4', '--cidr', '10.77.0.0/24', '--block-size', '28']);
  assert.equal(created.code, 0, created.stderr);

  // Steady state first (the node's block claimed): what an ADD costs without any pod name.
  ok(call(db, cacheDir, 'ADD', 'warm0', undefined), 'ADD warm0');
  const anon = roundTrips(ok(call(db, cacheDir, 'ADD', 'warm1', undefined), 'ADD warm1'));
  const plain = roundTrips(ok(call(db, cacheDir, 'ADD', 'plain0', { ns: 'web', name: 'w-0', uid: 'u-w0' }), 'ADD plain0'));
  assert.equal(plain, anon, 'an unannotated pod costs no extra round trip');

  // The sticky pod: ADD → DEL → a new incarnation gets the same address.
  const db0: Pod = { ns: 'db', name: 'db-0', uid: 'uid-1', sticky: 'true' };
  const first = addressOf(ok(call(db, cacheDir, 'ADD', 'c-db0-a', db0), 'ADD sticky'));
  ok(call(db, cacheDir, 'DEL', 'c-db0-a', db0), 'DEL sticky');
  ok(call(db, cacheDir, 'DEL', 'c-db0-a', db0), 'DEL sticky repeated');
  // Meanwhile other pods never get it.
  const others = [];
  for (let i = 0; i < 6; i++) others.push(addressOf(ok(call(db, cacheDir, 'ADD', `o${i}`, { ns: 'web', name: `o-${i}`, uid: `uo${i}` }), `ADD o${i}`)));
  assert.ok(!others.includes(first), `${first} was handed to another pod: ${others.join(', ')}`);
  // ipam check: clean, the hold listed.
  const check = runCliSync(db, ['ipam', 'check']);
  assert.equal(check.code, 0, check.stdout + check.stderr);
  assert.match(
    check.stdout,
    new RegExp(`sticky-hold: "sticky:${NET}:db:db-0:eth0" keeps ${first.split('/')[0]!.replace(/\./g, '\\.')} for pod db/db-0 until `),
  );
  const again = ok(call(db, cacheDir, 'ADD', 'c-db0-b', { ...db0, uid: 'uid-2' }), 'ADD sticky again');
  assert.equal(addressOf(again), first, 'the recreated pod gets its address back');
  assert.equal(roundTrips(again), plain, 'the hold written by this node is a hint: no extra read');
  const shown = JSON.parse(runCliSync(db, ['ipam', 'check', '--json']).stdout) as { stickyHolds?: unknown[] };
  assert.equal(shown.stickyHolds, undefined, 'the hold was taken over');

  // sticky "false" and no annotation: the address is free at once.
  for (const pod of [
    { ns: 'db', name: 'db-9', uid: 'u9', sticky: 'false' as const },
    { ns: 'db', name: 'db-8', uid: 'u8' },
  ]) {
    const a = addressOf(ok(call(db, cacheDir, 'ADD', `c-${pod.name}`, pod), `ADD ${pod.name}`));
    ok(call(db, cacheDir, 'DEL', `c-${pod.name}`, pod), `DEL ${pod.name}`);
    // Another attachment asking for exactly that address gets it: it is free.
    const ip = a.split('/')[0]!;
    const next = runPluginSync(PODIPAM_BIN, {
      command: 'ADD',
      containerId: `n-${pod.name}`,
      ifname: 'eth0',
      args: `IgnoreUnknown=1;IP=${ip}`,
      config: { cniVersion: '1.0.0', name: NET, ipam: { type: 'podipam', datastore: db, nodeName: 'node-a', cacheDir } },
    });
    assert.equal(addressOf(ok(next, `ADD ${ip} after ${pod.name}`)), a, `${pod.name}'s address went back to the block at once`);
  }

  // stickyFor "30s": serve's GC keeps the hold while it lives and releases it once expired (the GC's
  // clock is moved past the expiry rather than waited for: a loaded machine may take seconds per call).
  const db1: Pod = { ns: 'db', name: 'db-1', uid: 'uid-3', sticky: 'true' };
  const held = addressOf(ok(call(db, cacheDir, 'ADD', 'c-db1-a', db1, '30s'), 'ADD db-1'));
  ok(call(db, cacheDir, 'DEL', 'c-db1-a', db1, '30s'), 'DEL db-1');
  const store = await openStore(db);
  try {
    const ipam = new ClusterIpam(store);
    const lines: string[] = [];
    let clock = Date.now();
    const gc = new ClusterGc({ ipam, graceMs: 60_000, log: linesLog(lines), now: () => clock });
    assert.equal((await gc.runOnce()).holdsReleased, 0, 'a live hold is kept');
    clock += 31_000;
    assert.equal((await gc.runOnce()).holdsReleased, 1, lines.join('\n'));
    assert.match(
      lines.join('\n'),
      new RegExp(`released sticky hold "sticky:${NET}:db:db-1:eth0" of pod db/db-1: ${held.split('/')[0]!.replace(/\./g, '\\.')}`),
    );
    assert.deepEqual((await ipam.check()).stickyHolds, undefined);
  } finally {
    await store.close();
  }
  // release --handle works on a hold.
  const db2: Pod = { ns: 'db', name: 'db-2', uid: 'uid-4', sticky: 'true' };
  ok(call(db, cacheDir, 'ADD', 'c-db2', db2), 'ADD db-2');
  ok(call(db, cacheDir, 'DEL', 'c-db2', db2), 'DEL db-2');
  const rel = runCliSync(db, ['ipam', 'release', '--handle', `sticky:${NET}:db:db-2:eth0`]);
  assert.equal(rel.code, 0, rel.stdout + rel.stderr);
  const final = runCliSync(db, ['ipam', 'check', '--json']);
  assert.equal(final.code, 0, final.stdout + final.stderr);
  assert.deepEqual(JSON.parse(final.stdout), { leaks: [], problems: [] });
}

test(
  'cluster sticky pods on SQLite: same address across recreation, held from others, freed at once when not sticky, expired by GC',
  { timeout: 300_000 },
  () => withTempDir('cluster-sticky', (dir) => scenario(`sqlite:${join(dir, 'ipam.db')}`, dir)),
);

test('cluster sticky pods on etcd: the same', { timeout: 300_000 }, async () => {
  const etcd = await startEtcd();
  try {
    await withTempDir('cluster-sticky-etcd', (dir) => scenario(etcd.url, dir));
  } finally {
    await etcd.stop();
  }
});
