/**
 * Sticky pods in the warm-pool back end, in-process on a real SQLite datastore file and a real
 * resource DB, with the sticky policy (no API server): a sticky pod's DEL leaves a reservation
 * its next incarnation (new container id) gets back within the window, also across a restart;
 * after the window it is an ordinary idle address; non-sticky pods are not sticky; the CNI GC
 * verb releases like DEL.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { IpamRequest } from '../plugin/ipam-backend.js';
import { startFakeKubeApiServer } from '../../test/helpers/fake-kube-apiserver.js';
import { type WarmRig, startWarmRig, stopWarmRig, warmConf } from '../../test/helpers/warm-rig.js';
import { POD_RETENTION_MS } from '../warm/pod-store.js';
import type { WarmOptions } from '../warm/warm-service.js';

const root = mkdtempSync(join(tmpdir(), 'podipam-warm-sticky-'));
after(() => rmSync(root, { recursive: true, force: true }));
let seq = 0;
const STICKY_FOR = 60_000;

type Rig = WarmRig;
const rig = (opts: Partial<WarmOptions> = {}, prev?: Rig): Promise<Rig> =>
  startWarmRig(
    {
      root,
      n: ++seq,
      pools: [{ name: 'v4', cidr: '10.78.0.0/16' }],
      options: {
        node: 'n1',
        minIdle: 4,
        maxIdle: 8,
        capacity: 64,
        cooldownMs: 1_000,
        stickyForMs: STICKY_FOR,
        sticky: { namespaces: ['db'] },
        tickMs: 3_600_000,
        writeDelayMs: 3_600_000,
        gcIntervalMs: 3_600_000,
      },
    },
    opts,
    prev,
  );
const stop = stopWarmRig;
const conf = warmConf;
const req = (containerId: string, namespace: string, name: string): IpamRequest => ({
  containerId,
  ifname: 'eth0',
  cniArgs: new Map([
    ['K8S_POD_NAMESPACE', namespace],
    ['K8S_POD_NAME', name],
    ['K8S_POD_UID', `uid-${containerId}`],
  ]),
  conf,
});
const addr = async (r: Rig, q: IpamRequest): Promise<string> => (await r.warm.add(q)).ips[0]!.address;

describe('warm pool: sticky pods by policy', () => {
  it('a sticky pod recreated within the window gets its address back; after the window it does not; a non-sticky pod never does', async () => {
    const r = await rig();
    try {
      const a = await addr(r, req('c1', 'db', 'pg-0'));
      const other = await addr(r, req('o1', 'web', 'nginx-abc'));
      await r.warm.maintain();
      await r.warm.del(req('c1', 'db', 'pg-0'));
      await r.warm.del(req('o1', 'web', 'nginx-abc'));
      let s = r.warm.report();
      assert.equal(s.stickyReservations, 1, 'the sticky pod left a reservation');
      assert.equal(s.pools.ipv4!.reserved, 1);
      assert.equal(s.pools.ipv4!.inUse, 0);
      // Past the cooldown, the non-sticky pod's address is idle for anyone; the sticky one is not.
      r.clock.t += 5_000;
      const taken: string[] = [];
      for (let i = 0; i < 8; i++) {
        taken.push(await addr(r, req(`x${i}`, 'web', `filler-${i}`)));
        await r.warm.maintain();
      }
      assert.ok(!taken.includes(a), `the reserved ${a} went to no other pod: ${taken.join(' ')}`);
      assert.ok(taken.includes(other), `the non-sticky pod's ${other} went back to the idle queue: ${taken.join(' ')}`);
      assert.equal(await addr(r, req('c2', 'db', 'pg-0')), a, 'same namespace/name, new container id: same address');
      s = r.warm.report();
      assert.equal(s.pods.stickyHits, 1);
      assert.equal(s.stickyReservations, 0);
      // A repeated ADD of the new incarnation answers the same; CHECK finds it.
      assert.equal(await addr(r, req('c2', 'db', 'pg-0')), a);
      await r.warm.check(req('c2', 'db', 'pg-0'));
      // DEL again; the window passes; the address is an ordinary idle one.
      await r.warm.del(req('c2', 'db', 'pg-0'));
      assert.equal(r.warm.report().stickyReservations, 1);
      r.clock.t += STICKY_FOR + 1;
      const b = await addr(r, req('c3', 'db', 'pg-0'));
      assert.notEqual(b, a, 'after the window the pod gets another address');
      assert.equal(r.warm.report().stickyReservations, 0, 'the reservation joined the idle queue');
      assert.equal(r.warm.report().pods.stickyHits, 1);
      assert.deepEqual(await r.admin.check(), { leaks: [], problems: [] });
    } finally {
      await stop(r);
    }
  });

  it('the reservation survives a restart on the same data dir', async () => {
    const r = await rig({ sticky: { namePattern: 'pg-[0-9]+' } });
    let r2: Rig | undefined;
    try {
      const a = await addr(r, req('c1', 'any', 'pg-7'));
      const n = await addr(r, req('n1', 'any', 'pg-7x')); // the pattern matches whole names only
      await r.warm.del(req('c1', 'any', 'pg-7'));
      await r.warm.del(req('n1', 'any', 'pg-7x'));
      assert.equal(r.warm.report().stickyReservations, 1);
      await stop(r);
      r2 = await rig({ sticky: { namePattern: 'pg-[0-9]+' } }, r);
      assert.equal(r2.warm.report().stickyReservations, 1, 'rebuilt from the resource DB');
      assert.equal(r2.warm.report().pods.podStore, 2, 'deleted pods stay in the pod store');
      r2.clock.t += 5_000;
      assert.equal(await addr(r2, req('c9', 'any', 'pg-7')), a);
      assert.notEqual(await addr(r2, req('n9', 'any', 'pg-7x')), n);
    } finally {
      if (r2) await stop(r2);
    }
  });

  it('an in-use sticky pod keeps its namespace/name pool key across a restart, and its DEL then reserves', async () => {
    const r = await rig();
    let r2: Rig | undefined;
    try {
      const a = await addr(r, req('c1', 'db', 'pg-1'));
      await stop(r);
      r2 = await rig({}, r);
      assert.equal(r2.warm.report().pools.ipv4!.inUse, 1);
      await r2.warm.del(req('c1', 'db', 'pg-1'));
      assert.equal(r2.warm.report().stickyReservations, 1);
      assert.equal(await addr(r2, req('c2', 'db', 'pg-1')), a);
    } finally {
      if (r2) await stop(r2);
    }
  });

  it('the CNI GC verb releases the attachments not listed valid, a sticky one into its reservation', async () => {
    const r = await rig();
    try {
      const a = await addr(r, req('c1', 'db', 'pg-2'));
      await addr(r, req('k1', 'web', 'keep'));
      await r.warm.gc(conf, [{ containerId: 'k1', ifname: 'eth0' }]);
      const s = r.warm.report();
      assert.equal(s.pools.ipv4!.inUse, 1, 'the valid attachment is kept');
      assert.equal(s.stickyReservations, 1);
      assert.equal(await addr(r, req('c2', 'db', 'pg-2')), a);
    } finally {
      await stop(r);
    }
  });

  it("a new incarnation (another uid) arriving before the old one's DEL takes the address over; the late DEL releases nothing of it", async () => {
    const r = await rig();
    try {
      const a = await addr(r, req('c1', 'db', 'pg-4'));
      const q2 = req('c2', 'db', 'pg-4'); // uid-c2: another pod of the same name
      assert.equal(await addr(r, q2), a, 'the old incarnation is dead: its address moves to the new one');
      assert.equal(r.warm.report().pools.ipv4!.inUse, 1);
      await r.warm.del(req('c1', 'db', 'pg-4')); // the old sandbox torn down late
      assert.equal(r.warm.report().pools.ipv4!.inUse, 1, 'the late DEL of the old one released nothing');
      await r.warm.check(q2);
      assert.equal(await addr(r, q2), a);
      // Same uid, another container, the old one not yet deleted: no takeover, not sticky.
      const same: IpamRequest = { ...req('c3', 'db', 'pg-4'), cniArgs: q2.cniArgs };
      assert.notEqual(await addr(r, same), a);
      await r.warm.del(same);
      assert.equal(r.warm.report().stickyReservations, 0, 'that attachment was not sticky');
      await r.warm.del(q2);
      assert.equal(r.warm.report().stickyReservations, 1);
      assert.deepEqual(await r.admin.check(), { leaks: [], problems: [] });
    } finally {
      await stop(r);
    }
  });

  it("with a kubeconfig: the pod GC releases a gone pod's address through the cooldown, a sticky one only after its window; deleted pods leave the pod store after an hour", async () => {
    const fake = await startFakeKubeApiServer();
    const kubeconfig = join(root, `kc${++seq}`);
    fake.writeKubeconfig(kubeconfig);
    const r = await rig({ kubeconfig, sticky: undefined });
    try {
      const sts = fake.addPod('db', 'pg-0', { node: 'n1', ownerKind: 'StatefulSet' });
      const rs = fake.addPod('web', 'web-1', { node: 'n1', ownerKind: 'ReplicaSet' });
      const kreq = (cid: string, ns: string, name: string, uid: string): IpamRequest => ({
        ...req(cid, ns, name),
        cniArgs: new Map([
          ['K8S_POD_NAMESPACE', ns],
          ['K8S_POD_NAME', name],
          ['K8S_POD_UID', uid],
        ]),
      });
      await addr(r, kreq('c1', 'db', 'pg-0', sts.metadata.uid));
      const w = await addr(r, kreq('w1', 'web', 'web-1', rs.metadata.uid));
      r.clock.t += 1;
      await r.warm.gcPods();
      assert.equal(r.warm.report().pools.ipv4!.inUse, 2, 'both pods are listed: nothing released');
      fake.deletePod('web', 'web-1');
      fake.deletePod('db', 'pg-0');
      r.clock.t += 1;
      await r.warm.gcPods();
      let s = r.warm.report();
      assert.equal(s.pods.gcReleases, 1, 'the ReplicaSet pod at once');
      assert.equal(s.pools.ipv4!.inUse, 1, 'the StatefulSet pod waits for its window');
      // The released address is not handed out before its cooldown.
      const other = fake.addPod('web', 'other', { node: 'n1' });
      const next = await addr(r, kreq('x1', 'web', 'other', other.metadata.uid));
      assert.notEqual(next, w);
      r.clock.t += STICKY_FOR - 2;
      await r.warm.gcPods();
      assert.equal(r.warm.report().pools.ipv4!.inUse, 2, 'still within the window');
      r.clock.t += 2;
      await r.warm.gcPods();
      s = r.warm.report();
      assert.equal(s.pods.gcReleases, 2);
      assert.equal(s.pools.ipv4!.inUse, 1);
      assert.equal(s.stickyReservations, 0, 'released for good');
      // The recreated pod gets no sticky hit now.
      const again = fake.addPod('db', 'pg-0', { node: 'n1', ownerKind: 'StatefulSet' });
      await addr(r, kreq('c2', 'db', 'pg-0', again.metadata.uid));
      assert.equal(r.warm.report().pods.stickyHits, 0);
      // Pod store: the GC-released attachments are deleted rows, purged an hour later.
      assert.equal(r.warm.report().pods.podStore, 4, 'c1, w1 (released), x1, c2 (live)');
      r.clock.t += POD_RETENTION_MS;
      await r.warm.gcPods();
      assert.equal(r.warm.report().pods.podStore, 2, 'the two released an hour ago are purged; the live ones stay');
      assert.deepEqual(await r.admin.check(), { leaks: [], problems: [] });
    } finally {
      await stop(r);
      await fake.close();
    }
  });

  it('stickyFor 0 turns stickiness off', async () => {
    const r = await rig({ stickyForMs: 0 });
    try {
      await addr(r, req('c1', 'db', 'pg-3'));
      await r.warm.del(req('c1', 'db', 'pg-3'));
      assert.equal(r.warm.report().stickyReservations, 0);
    } finally {
      await stop(r);
    }
  });
});
