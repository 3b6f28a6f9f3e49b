/**
 * The warm-pool back end in-process on a real SQLite datastore file and a real resource DB:
 * preload, ADD with no datastore round trip, cooldown, batched returns above maxIdle, DEL into
 * the pool, write-behind, restart with reconcile both ways, `ipam check` clean.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import type { IpamRequest } from '../plugin/ipam-backend.js';
import { selectBackend } from '../plugin/select-backend.js';
import { CniError } from '../cni/errors.js';
import { formatAddr, parseAddr } from '../ip/index.js';
import { type WarmRig, startWarmRig, stopWarmRig, warmConf } from '../../test/helpers/warm-rig.js';
import { POD_RECORD_PREFIX, type WarmOptions } from '../warm/warm-service.js';
import { lineLog } from '../../test/helpers/line-log.js';

const root = mkdtempSync(join(tmpdir(), 'podipam-warm-backend-'));
after(() => rmSync(root, { recursive: true, force: true }));
let seq = 0;

type Rig = WarmRig;
const rig = (opts: Partial<WarmOptions> = {}, prev?: Rig): Promise<Rig> =>
  startWarmRig(
    {
      root,
      n: ++seq,
      pools: [
        { name: 'v4', cidr: '10.77.0.0/16' },
        { name: 'v6', cidr: 'fd00:77::/64' },
      ],
      options: {
        node: 'n1',
        minIdle: 4,
        maxIdle: 8,
        capacity: 64,
        cooldownMs: 30_000,
        stickyForMs: 0,
        tickMs: 3_600_000,
        writeDelayMs: 3_600_000,
        watch: false,
      },
    },
    opts,
    prev,
  );
const stop = stopWarmRig;
const conf = warmConf;
const req = (id: string): IpamRequest => ({ containerId: id, ifname: 'eth0', cniArgs: new Map(), conf });
const addrsOf = (r: { ips: readonly { address: string }[] }): string[] => r.ips.map((i) => i.address.split('/')[0]!);

describe('warm-pool back end', () => {
  it('is what select-backend picks inside an agent that runs one; code 7 in an agent without; code 11 outside', async () => {
    const r = await rig();
    try {
      assert.equal(await selectBackend(conf, {}, { warm: r.warm }), r.warm);
      await assert.rejects(selectBackend(conf, {}, { cluster: r.cluster }), (e: unknown) => e instanceof CniError && e.code === 7);
      await assert.rejects(selectBackend(conf, {}), (e: unknown) => e instanceof CniError && e.code === 11);
    } finally {
      await stop(r);
    }
  });

  it('preloads minIdle per family in one txn; an ADD from the pool makes no datastore round trip and answers block prefix and gateway', async () => {
    const r = await rig();
    try {
      const s0 = r.warm.report();
      assert.deepEqual(s0.families, [4, 6]);
      assert.equal(s0.pools.ipv4!.idle, 4);
      assert.equal(s0.pools.ipv6!.idle, 4);
      assert.equal(s0.refillTxns, 1, 'both families preloaded in one transaction');
      for (let i = 0; i < 4; i++) {
        const before = r.cluster.roundTrips();
        const got = await r.warm.add(req(`c${i}`));
        assert.equal(r.cluster.roundTrips(), before, `ADD ${i} made no datastore round trip`);
        assert.equal(got.ips.length, 2);
        assert.match(got.ips[0]!.address, /^10\.77\.\d+\.\d+\/26$/);
        assert.match(got.ips[1]!.address, /^fd00:77::[0-9a-f:]+\/122$/);
        await r.warm.maintain(); // the refill the ADD kicked off, done before the next ADD counts
      }
      const s = r.warm.report();
      assert.equal(s.hits, 4);
      assert.equal(s.misses, 0);
      assert.equal(s.pools.ipv4!.inUse, 4);
      assert.equal(s.writeBehindDepth, 4, 'four pod records queued');
      // The answer is the datastore's: the address's block prefix and gateway.
      const again = await r.warm.add(req('c0'));
      assert.equal(r.warm.report().hits, 4, 'a repeated ADD is not a new hit');
      const withPrev = (ips: unknown): IpamRequest => ({ ...req('c0'), conf: { ...conf, prevResult: { ips } } });
      await r.warm.check(withPrev(again.ips));
      await assert.rejects(r.warm.check(withPrev([{ address: '10.99.0.1/26' }])), (e: unknown) => e instanceof CniError && e.code === 102);
      await assert.rejects(r.warm.check(req('nobody')), (e: unknown) => e instanceof CniError && e.code === 102);
      const ds = new Map<string, string>();
      for (const e of await r.admin.store.list('handles/podipam-warm:n1:')) {
        for (const a of (await r.admin.addressesOf(e.key.slice('handles/'.length)))!) ds.set(`${formatAddr(a.addr)}/${a.prefixLen}`, formatAddr(a.gateway));
      }
      for (const ip of again.ips) assert.equal(ds.get(ip.address), ip.gateway, `${ip.address} via ${ip.gateway}`);
      await r.warm.flushWrites();
      assert.equal(r.warm.report().writeBehindDepth, 0);
      assert.equal(r.warm.report().writeTxns, 1, 'the four pod records in one transaction');
      const recs = await r.admin.store.list(`${POD_RECORD_PREFIX}n1/`);
      assert.equal(recs.length, 4);
      assert.deepEqual(JSON.parse(recs[0]!.value).addrs, addrsOf(await r.warm.add(req('c0'))));
      assert.deepEqual(await r.admin.check(), { leaks: [], problems: [] });
    } finally {
      await stop(r);
    }
  });

  it('a released address is not handed out again before its cooldown; DEL returns it to the pool', async () => {
    const r = await rig({ minIdle: 2, maxIdle: 16 });
    try {
      const first = addrsOf(await r.warm.add(req('p0')));
      await r.warm.del(req('p0'));
      assert.equal(r.warm.report().pools.ipv4!.inUse, 0);
      const seen = new Set<string>();
      for (let i = 1; i <= 6; i++) {
        await r.warm.maintain();
        for (const a of addrsOf(await r.warm.add(req(`p${i}`)))) seen.add(a);
      }
      for (const a of first) assert.ok(!seen.has(a), `${a} reused within its cooldown`);
      for (let i = 1; i <= 6; i++) await r.warm.del(req(`p${i}`));
      r.clock.t += 30_001;
      await r.warm.maintain();
      // After the cooldown p0's addresses are handed out again (behind the idle ones freed earlier).
      const idle = r.warm.report().pools.ipv4!.idle;
      let back = false;
      for (let i = 0; i < idle && !back; i++) back = addrsOf(await r.warm.add(req(`q${i}`)))[0] === first[0];
      assert.ok(back, `${first[0]} handed out again after its cooldown`);
    } finally {
      await stop(r);
    }
  });

  it('concurrent misses share batched refills (≤ 32 per family per txn); idle above maxIdle goes back in batched txns after the cooldown', async () => {
    const r = await rig({ minIdle: 0, maxIdle: 2, capacity: 64 });
    try {
      assert.equal(r.warm.report().refillTxns, 0);
      const pods = 40;
      const all = await Promise.all(Array.from({ length: pods }, (_, i) => r.warm.add(req(`m${i}`))));
      const flat = all.flatMap(addrsOf);
      assert.equal(new Set(flat).size, pods * 2, 'distinct addresses');
      const s = r.warm.report();
      assert.ok(s.misses >= 1);
      assert.ok(s.refillTxns <= 3, `${s.refillTxns} refill txns for ${pods} concurrent misses`);
      for (let i = 0; i < pods; i++) await r.warm.del(req(`m${i}`));
      await r.warm.maintain();
      assert.equal(r.warm.report().returnTxns, 0, 'nothing returned during the cooldown');
      r.clock.t += 30_001;
      await r.warm.maintain();
      const e = r.warm.report();
      assert.equal(e.returnTxns, Math.ceil(((pods - 2) * 2) / 32), 'the surplus went back 32 addresses per txn');
      assert.equal(e.returned, (pods - 2) * 2);
      assert.equal(e.pools.ipv4!.idle, 2);
      assert.equal(e.pools.ipv6!.idle, 2);
      assert.deepEqual(await r.admin.check(), { leaks: [], problems: [] });
    } finally {
      await stop(r);
    }
  });

  it('a surplus address freed behind the agent and given to another pod is not freed by the return', async () => {
    const r = await rig({ minIdle: 0, maxIdle: 0, capacity: 64, cooldownMs: 0 });
    try {
      const got = addrsOf(await r.warm.add(req('p0')));
      await r.warm.del(req('p0'));
      const v4 = got.find((a) => !a.includes(':'))!;
      // An operator frees the idle address; a cluster-mode pod of another node gets it.
      await r.admin.releaseAddresses([parseAddr(v4)]);
      const other = await r.admin.assign({
        node: 'n2',
        handle: 'net:other:eth0',
        attrs: { network: 'net', containerId: 'other', ifname: 'eth0' },
        ips: [parseAddr(v4)],
      });
      assert.equal(formatAddr(other[0]!.addr), v4);
      await r.warm.maintain();
      const held = await r.admin.addressesOf('net:other:eth0');
      assert.deepEqual(
        held?.map((a) => formatAddr(a.addr)),
        [v4],
        'the other pod still holds its address after the warm pool returned its surplus',
      );
      assert.ok(r.warm.report().returnTxns >= 1, 'the surplus was returned');
    } finally {
      await stop(r);
    }
  });

  it('addresses refilled for waiting ADDs are not returned as surplus by a refill run that loops for later demand', async () => {
    const r = await rig({ minIdle: 0, maxIdle: 2, capacity: 128, cooldownMs: 0 });
    try {
      const first = Array.from({ length: 10 }, (_, i) => r.warm.add(req(`a${i}`)));
      for (let i = 0; i < 1000 && r.warm.report().refillTxns < 1; i++) await new Promise((res) => setImmediate(res));
      const second = Array.from({ length: 10 }, (_, i) => r.warm.add(req(`b${i}`)));
      const all = await Promise.all([...first, ...second]);
      assert.equal(new Set(all.flatMap(addrsOf)).size, 40);
      const s = r.warm.report();
      assert.equal(s.returnTxns, 0, `nothing returned while ADDs waited (${JSON.stringify(s)})`);
      assert.ok(s.refillTxns <= 4, `${s.refillTxns} refill txns`);
    } finally {
      await stop(r);
    }
  });

  it(
    'datastore away (write lock held elsewhere): pods keep starting from the pool, the write-behind queue drains when it returns, refills back off',
    { timeout: 60_000 },
    async () => {
      const r = await rig({ minIdle: 4, maxIdle: 8 });
      const Database = createRequire(import.meta.url)('better-sqlite3') as new (path: string) => { exec(sql: string): void; close(): void };
      const holder = new Database(r.url.slice('sqlite:'.length));
      try {
        holder.exec('BEGIN IMMEDIATE');
        // Counted, not timed: the ADDs from the pool make no datastore round trip at all.
        const trips = r.cluster.roundTrips();
        const got = [];
        for (let i = 0; i < 3; i++) got.push(await r.warm.add(req(`o${i}`)));
        assert.equal(r.cluster.roundTrips(), trips, 'ADDs from the pool do not touch the datastore');
        assert.equal(new Set(got.flatMap(addrsOf)).size, 6);
        await r.warm.flushWrites();
        assert.equal(r.warm.report().writeBehindDepth, 3, 'queued while the datastore is away');
        await r.warm.maintain(); // idle 1 < minIdle: the refill fails and backs off
        assert.ok(r.warm.report().lastError, 'the failure is reported');
        assert.equal(r.warm.report().refillTxns, 1, 'only the preload landed');
        holder.exec('ROLLBACK');
        await r.warm.flushWrites();
        assert.equal(r.warm.report().writeBehindDepth, 0, 'drained once the datastore is back');
        assert.equal((await r.admin.store.list(`${POD_RECORD_PREFIX}n1/`)).length, 3);
      } finally {
        holder.close();
        await stop(r);
      }
    },
  );

  it('restart: the pool is rebuilt from the resource DB and reconciled with the datastore both ways', async () => {
    const logs: string[] = [];
    const r = await rig({ minIdle: 3, maxIdle: 6, log: lineLog((l) => logs.push(l)) });
    const pods = await Promise.all(['r0', 'r1'].map((id) => r.warm.add(req(id))));
    await r.warm.maintain();
    const idleBefore = r.warm.report().pools.ipv4!.idle;
    await r.warm.close();
    await r.cluster.close();
    // Behind the agent's back: one idle v4 address released in the datastore, one extra
    // address assigned to a warm handle of the node.
    const warmHandles = (await r.admin.store.list('handles/podipam-warm:n1:')).map((e) => e.key.slice('handles/'.length));
    const heldNow = (await Promise.all(warmHandles.map((h) => r.admin.addressesOf(h)))).flatMap((x) => x ?? []).map((a) => a.addr);
    const inUse = new Set(pods.flatMap(addrsOf));
    const victim = heldNow.find((a) => a.family === 4 && !inUse.has(formatAddr(a)))!;
    await r.admin.releaseAddresses([victim]);
    const extra = await r.admin.assign({ node: 'n1', handle: 'podipam-warm:n1:extra', auto: { 4: 1 } });
    const r2 = await rig({ minIdle: 3, maxIdle: 6, log: lineLog((l) => logs.push(l)) }, { ...r, warm: undefined as never, cluster: undefined as never });
    try {
      const s = r2.warm.report();
      assert.equal(s.pools.ipv4!.inUse, 2, 'the two pods are still in use');
      assert.equal(s.droppedOnReconcile, 1);
      // An address of a warm handle the DB never knew, named by no pod record: nothing says it is free.
      assert.equal(s.adoptedOnReconcile, 0);
      assert.equal(s.quarantined, 1);
      assert.ok(
        logs.some((l) => l.includes('no longer holds')),
        logs.join('\n'),
      );
      assert.ok(
        logs.some((l) => l.includes('not known to be free') && l.includes(formatAddr(extra[0]!.addr))),
        logs.join('\n'),
      );
      assert.ok(s.pools.ipv4!.idle >= idleBefore - 1, `idle ${s.pools.ipv4!.idle} (was ${idleBefore})`);
      // The pods' repeated ADDs get their addresses back; the quarantined address is never handed out.
      assert.deepEqual(addrsOf(await r2.warm.add(req('r0'))), addrsOf(pods[0]!));
      const fresh = await Promise.all(Array.from({ length: 3 }, (_, i) => r2.warm.add(req(`n${i}`))));
      const extraText = formatAddr(extra[0]!.addr);
      r2.clock.t += 3_600_000;
      const later = await Promise.all(Array.from({ length: 3 }, (_, i) => r2.warm.add(req(`m${i}`))));
      assert.ok(![...fresh, ...later].flatMap(addrsOf).includes(extraText), 'the quarantined address is not handed out, even an hour later');
      const all = [...pods, ...fresh, ...later].flatMap(addrsOf);
      assert.equal(new Set(all).size, all.length, 'no address held twice');
      assert.ok(!all.includes(formatAddr(victim)), 'the address the datastore took away is not handed out');
      for (const id of ['r0', 'r1', 'n0', 'n1', 'n2', 'm0', 'm1', 'm2']) await r2.warm.del(req(id));
      await r2.warm.flushWrites();
      assert.deepEqual(await r2.admin.store.list(`${POD_RECORD_PREFIX}n1/`), []);
      assert.deepEqual(await r2.admin.check(), { leaks: [], problems: [] });
    } finally {
      await stop(r2);
      await r.admin.store.close();
    }
  });
});
