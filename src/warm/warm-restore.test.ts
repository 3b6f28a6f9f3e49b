/**
 * The warm pool's start on a real SQLite datastore and resource DB, with no usable pool: an
 * agent started before any pool exists answers DELs and refuses ADDs (code 11), then serves the
 * first ADD after a pool is created with no restart and no maintenance tick (a refusal re-reads
 * the pools, it never trusts the view it loaded at start); an agent restarted while its only pool
 * drains still answers the DELs of the pods it holds; a family whose first pool is created later
 * is served once the agent sees the config change; an agent restarted after a reservation over
 * its idle addresses hands none of them out, before any refresh.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startWarmRig, stopWarmRig, warmConf } from '../../test/helpers/warm-rig.js';
import { ClusterIpam } from '../cluster/service/cluster-ipam.js';
import { formatAddr } from '../ip/index.js';
import { openStore } from '../store/index.js';
import { warmHandlePrefix } from './warm-handle.js';

const root = mkdtempSync(join(tmpdir(), 'podipam-warm-restore-'));
after(() => rmSync(root, { recursive: true, force: true }));

type Req = Parameters<Awaited<ReturnType<typeof startWarmRig>>['warm']['add']>[0];
const req = (id: string): Req => ({ containerId: id, ifname: 'eth0', cniArgs: new Map(), conf: warmConf });

const options = { node: 'n1', minIdle: 1, maxIdle: 2, capacity: 8, cooldownMs: 0, stickyForMs: 0, tickMs: 3_600_000, writeDelayMs: 0 };

test('started before any pool exists: DELs answered, ADDs refused, then served once a pool is created (no restart)', async () => {
  const r = await startWarmRig({
    root,
    n: 1,
    pools: [],
    options,
  });
  try {
    await r.warm.del(req('never-added'));
    await assert.rejects(r.warm.add(req('early')), /not ready: no enabled pool exists/);
    await r.admin.createPool({ name: 'v4', cidr: '10.77.0.0/24' });
    const res = await r.warm.add(req('late'));
    assert.match(res.ips[0]!.address, /^10\.77\.0\.\d+\/\d+$/);
  } finally {
    await stopWarmRig(r);
  }
});

test('restarted while its only pool drains: the DEL of a pod it holds is answered, a new ADD is refused', async () => {
  let r = await startWarmRig({ root, n: 2, pools: [{ name: 'v4', cidr: '10.76.0.0/24' }], options });
  try {
    const a = await r.warm.add(req('held'));
    assert.match(a.ips[0]!.address, /^10\.76\.0\./);
    await r.admin.setPoolDraining('v4', true);
    await stopWarmRig(r);
    r = await startWarmRig({ root, n: 2, pools: [], options }, {}, r);
    await r.warm.del(req('held'));
    await assert.rejects(r.warm.add(req('new')), /no usable IPv4 pool for node "n1": every such pool is disabled or draining/);
  } finally {
    await stopWarmRig(r);
  }
});

test('a family whose first pool is created after the start is served once the agent sees the config change', async () => {
  const r = await startWarmRig({ root, n: 3, pools: [{ name: 'v4', cidr: '10.75.0.0/24' }], options });
  try {
    assert.equal((await r.warm.add(req('v4-only'))).ips.length, 1);
    await r.admin.createPool({ name: 'v6', cidr: 'fd75::/120' });
    let ips: readonly { address: string }[] = [];
    for (let i = 0; i < 50 && ips.length < 2; i++) {
      await new Promise((ok) => setTimeout(ok, 100));
      ips = (await r.warm.add(req(`dual-${i}`))).ips;
    }
    assert.deepEqual(
      ips.map((x) => x.address.split(':').length > 1),
      [false, true],
      `an ADD gets both families within 5 s: ${JSON.stringify(ips)}`,
    );
  } finally {
    await stopWarmRig(r);
  }
});

test('restarted after a reservation over its idle addresses: the start reads the reservations too, no ADD gets one (before any refresh)', async () => {
  let r = await startWarmRig({ root, n: 4, pools: [{ name: 'v4', cidr: '10.74.0.0/24' }], options: { ...options, minIdle: 2 } });
  try {
    const used = (await r.warm.add(req('a'))).ips[0]!.address.split('/')[0]!;
    await r.warm.maintain();
    const held: string[] = [];
    for (const h of await r.admin.warmHandles(warmHandlePrefix('n1'))) for (const x of (await r.admin.addressesOf(h)) ?? []) held.push(formatAddr(x.addr));
    const idle = held.filter((x) => x !== used);
    assert.ok(idle.length >= 2, `idle addresses to reserve: ${held.join(' ')}`);
    await stopWarmRig(r);
    const admin = new ClusterIpam(await openStore(r.url));
    await admin.putReservation('r1', idle);
    await admin.store.close();
    // No watch and no maintenance tick: only what the start read decides. (The clock moves on as it
    // would between two processes: a refill's handle id is its time, pid and sequence.)
    r.clock.t += 1000;
    r = await startWarmRig({ root, n: 4, pools: [], options: { ...options, minIdle: 2 } }, { watch: false }, r);
    for (let i = 0; i < 3; i++) {
      const got = (await r.warm.add(req(`b${i}`))).ips[0]!.address.split('/')[0]!;
      assert.ok(!idle.includes(got), `b${i} got the reserved ${got}`);
    }
  } finally {
    await stopWarmRig(r);
  }
});
