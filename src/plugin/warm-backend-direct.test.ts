/**
 * Direct attachments (src/warm/warm-direct.ts) through the warm pool's CNI back end, in-process on a real
 * SQLite datastore file and a real resource DB: a pod annotated with `podipam.io/pools` or
 * `podipam.io/ip` is allocated on the datastore under its own handle (with its pod in the
 * handle's attributes) — never from the idle queue of the pool's configured pools — and its
 * DEL, CHECK, CNI GC, pod GC and the agent's restart settle that handle; unannotated pods are
 * served from the idle queue as before; a bad annotation is code 7, a taken address 101.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NetConf } from '../cni/types.js';
import { CniError } from '../cni/errors.js';
import { formatAddr, parseAddr } from '../ip/index.js';
import { ANNOTATION } from '../model/placement.js';
import type { IpamRequest } from './ipam-backend.js';
import { startFakeKubeApiServer } from '../../test/helpers/fake-kube-apiserver.js';
import { type WarmRig, startWarmRig, stopWarmRig, warmConf } from '../../test/helpers/warm-rig.js';
import { ResourceDb } from '../warm/resource-db.js';
import type { WarmOptions } from '../warm/warm-service.js';

const root = mkdtempSync(join(tmpdir(), 'podipam-warm-direct-'));
after(() => rmSync(root, { recursive: true, force: true }));
let seq = 0;

const rig = (opts: Partial<WarmOptions> = {}, prev?: WarmRig): Promise<WarmRig> =>
  startWarmRig(
    {
      root,
      n: ++seq,
      pools: [
        { name: 'pool-a', cidr: '10.80.0.0/16' },
        { name: 'pool-b', cidr: '10.81.0.0/16' },
      ],
      options: {
        node: 'n1',
        pools: ['pool-a'],
        minIdle: 4,
        maxIdle: 8,
        capacity: 64,
        cooldownMs: 1_000,
        stickyForMs: 0,
        tickMs: 3_600_000,
        writeDelayMs: 3_600_000,
        gcIntervalMs: 3_600_000,
      },
    },
    opts,
    prev,
  );

const key = (cid: string): string => `${warmConf.name}:${cid}:eth0`;
const req = (cid: string, annotations?: Record<string, string>, name = `pod-${cid}`, uid = `uid-${cid}`): IpamRequest => ({
  containerId: cid,
  ifname: 'eth0',
  cniArgs: new Map([
    ['K8S_POD_NAMESPACE', 'web'],
    ['K8S_POD_NAME', name],
    ['K8S_POD_UID', uid],
  ]),
  pod: { namespace: 'web', name, uid },
  ...(annotations ? { podAnnotations: annotations } : {}),
  conf: warmConf,
});
const withPrev = (q: IpamRequest, address: string): IpamRequest => {
  const prevResult = { cniVersion: '1.0.0', ips: [{ address }] };
  const conf: NetConf = { ...warmConf, prevResult, raw: { ...warmConf.raw, prevResult } };
  return { ...q, conf };
};
const ip = async (r: WarmRig, q: IpamRequest): Promise<string> => (await r.warm.add(q)).ips[0]!.address;
const code =
  (n: number) =>
  (e: unknown): boolean =>
    e instanceof CniError && e.code === n;
const clean = { leaks: [], problems: [] };

describe('warm pool: annotated pods allocated directly', () => {
  it("podipam.io/pools: an address of that pool under the pod's own handle, never from the idle queue; unannotated pods still hit; DEL frees the handle", async () => {
    const r = await rig();
    try {
      const before = r.warm.report();
      assert.equal(before.pools.ipv4!.idle, 4);
      const b = await ip(r, req('b1', { [ANNOTATION.pools]: 'pool-b' }));
      assert.match(b, /^10\.81\.\d+\.\d+\/26$/, "from pool-b, not the warm pool's pool-a");
      let s = r.warm.report();
      assert.equal(s.pools.ipv4!.idle, 4, 'the idle queue was not touched');
      assert.equal(s.pools.ipv4!.inUse, 0);
      assert.equal(s.hits, before.hits, 'not a hit');
      assert.equal(s.direct, 1);
      assert.equal(s.directAdds, 1);
      // The handle is the attachment's, with the pod in its attributes.
      const held = await r.admin.addressesOf(key('b1'));
      assert.deepEqual(
        held?.map((a) => a.addr.value),
        [parseAddr(b.split('/')[0]!).value],
      );
      const rec = await r.admin.store.get(`handles/${key('b1')}`);
      assert.ok(rec, 'handle record exists');
      const attrs = JSON.parse(rec.value) as { attrs?: Record<string, string> };
      assert.equal(JSON.stringify(attrs).includes('pod-b1'), true, `pod name in the handle record: ${rec.value}`);
      // A repeated ADD returns what the handle holds.
      assert.equal(await ip(r, req('b1', { [ANNOTATION.pools]: 'pool-b' })), b);
      assert.equal(await ip(r, req('b1')), b, 'also without the annotation this time');
      assert.equal(r.warm.report().directAdds, 1);
      // CHECK asks the handle.
      await r.warm.check(withPrev(req('b1'), b));
      await assert.rejects(r.warm.check(withPrev(req('b1'), '10.81.99.99/26')), code(102));
      // An unannotated pod: the idle queue, no datastore round trip.
      const rt = r.cluster.roundTrips();
      const a = await ip(r, req('a1'));
      assert.match(a, /^10\.80\./);
      assert.equal(r.cluster.roundTrips(), rt, 'no round trip for an unannotated pod');
      s = r.warm.report();
      assert.equal(s.hits, before.hits + 1);
      assert.equal(s.pools.ipv4!.inUse, 1);
      // DEL: the handle is released on the datastore, nothing joins the idle queue.
      await r.warm.maintain();
      const idle = r.warm.report().pools.ipv4!.idle;
      await r.warm.del(req('b1'));
      assert.equal(await r.admin.addressesOf(key('b1')), undefined);
      s = r.warm.report();
      assert.equal(s.direct, 0);
      assert.equal(s.directReleases, 1);
      assert.equal(s.pools.ipv4!.idle, idle, 'the freed address did not join the idle queue');
      await assert.rejects(r.warm.check(req('b1')), code(102), 'CHECK after DEL: held nothing');
      await r.warm.del(req('b1')); // repeated DEL: harmless
      await r.warm.del(req('a1'));
      assert.deepEqual(await r.admin.check(), clean);
    } finally {
      await stopWarmRig(r);
    }
  });

  it('podipam.io/ip: exactly that address; taken → 101 with nothing left behind; a malformed annotation → 7 before anything is allocated', async () => {
    const r = await rig();
    try {
      assert.equal(await ip(r, req('p1', { [ANNOTATION.ip]: '10.81.7.9' })), '10.81.7.9/26');
      await assert.rejects(r.warm.add(req('p2', { [ANNOTATION.ip]: '10.81.7.9' })), code(101));
      assert.equal(r.warm.report().direct, 1, 'the refused ADD left no direct attachment');
      await r.warm.del(req('p2')); // and its DEL is harmless
      const rt = r.cluster.roundTrips();
      await assert.rejects(
        r.warm.add(req('p3', { [ANNOTATION.ip]: '10.81.7' })),
        (e: unknown) => code(7)(e) && /podipam\.io\/ip/.test((e as Error).message) && /web\/pod-p3/.test((e as Error).message),
      );
      await assert.rejects(r.warm.add(req('p4', { [ANNOTATION.pools]: 'pool-b', [ANNOTATION.ip]: '10.81.7.10' })), code(7));
      assert.equal(r.cluster.roundTrips(), rt, 'a malformed annotation costs no datastore round trip');
      // An address of the warm pool's own pool, asked for by annotation, is never one of its idle ones.
      const idleBefore = r.warm.report().pools.ipv4!.idle;
      const own = await ip(r, req('p5', { [ANNOTATION.pools]: 'pool-a' }));
      assert.match(own, /^10\.80\./);
      assert.equal(r.warm.report().pools.ipv4!.idle, idleBefore);
      await r.warm.del(req('p1'));
      await r.warm.del(req('p5'));
      assert.deepEqual(await r.admin.check(), clean);
    } finally {
      await stopWarmRig(r);
    }
  });

  it('CNI GC releases a direct attachment not in the valid list, and keeps one that is', async () => {
    const r = await rig();
    try {
      await ip(r, req('g1', { [ANNOTATION.pools]: 'pool-b' }));
      await ip(r, req('g2', { [ANNOTATION.pools]: 'pool-b' }));
      await r.warm.gc(warmConf, [{ containerId: 'g2', ifname: 'eth0' }]);
      assert.equal(await r.admin.addressesOf(key('g1')), undefined);
      assert.equal((await r.admin.addressesOf(key('g2')))?.length, 1);
      assert.equal(r.warm.report().direct, 1);
      await r.warm.gc(warmConf, []);
      assert.equal(r.warm.report().direct, 0);
      assert.deepEqual(await r.admin.check(), clean);
    } finally {
      await stopWarmRig(r);
    }
  });

  it('a restart keeps a direct attachment (not adopted into the idle queue, not freed); an intent is completed or forgotten by its handle', async () => {
    const r1 = await rig();
    let r2: WarmRig | undefined;
    try {
      const b = await ip(r1, req('r1', { [ANNOTATION.pools]: 'pool-b' }));
      await r1.warm.close();
      // Two intents, as if the agent had stopped between the resource DB's commit and the
      // datastore's answer: one whose assignment landed, one whose did not.
      const landed = await r1.admin.assign({
        node: 'n1',
        handle: key('r2'),
        attrs: { network: warmConf.name, containerId: 'r2', ifname: 'eth0' },
        auto: 'each-family',
        pools: ['pool-b'],
      });
      const db = new ResourceDb(r1.dataDir);
      for (const cid of ['r2', 'r3']) db.putDirect({ key: key(cid), network: warmConf.name, containerId: cid, ifname: 'eth0', ips: [], since: 1 });
      db.close();
      await r1.cluster.close();
      await r1.admin.store.close();
      r2 = await rig({}, r1);
      const s = r2.warm.report();
      assert.equal(s.direct, 2, 'r1 kept, r2 completed, r3 forgotten');
      assert.equal(s.quarantined, 0);
      assert.equal(s.pools.ipv4!.inUse, 0);
      assert.equal(s.pools.ipv4!.idle, 4, 'nothing adopted into the idle queue');
      assert.equal(await ip(r2, req('r1')), b, 'the repeated ADD after the restart: what the handle holds');
      const l = landed[0]!;
      assert.equal(await ip(r2, req('r2')), `${formatAddr(l.addr)}/${l.prefixLen}`, 'the completed intent answers what its handle holds');
      await r2.warm.check(withPrev(req('r2'), `${formatAddr(l.addr)}/${l.prefixLen}`));
      await assert.rejects(r2.warm.check(req('r3')), code(102), 'the forgotten intent holds nothing');
      assert.deepEqual(await r2.admin.check(), clean, 'the direct handles are live handles, not leaks');
      for (const cid of ['r1', 'r2', 'r3']) await r2.warm.del(req(cid));
      assert.equal(await r2.admin.addressesOf(key('r1')), undefined);
      assert.equal(await r2.admin.addressesOf(key('r2')), undefined);
      assert.equal(r2.warm.report().direct, 0);
      assert.deepEqual(await r2.admin.check(), clean);
    } finally {
      if (r2) await stopWarmRig(r2);
    }
  });

  it('the pod GC releases the handle of a direct attachment whose pod is gone from the API server', async () => {
    const fake = await startFakeKubeApiServer();
    const kubeconfig = join(root, `kc${++seq}`);
    fake.writeKubeconfig(kubeconfig);
    const r = await rig({ kubeconfig });
    try {
      const p = fake.addPod('web', 'annotated', { node: 'n1' });
      const q = fake.addPod('web', 'stays', { node: 'n1' });
      await ip(r, req('k1', { [ANNOTATION.pools]: 'pool-b' }, 'annotated', p.metadata.uid));
      await ip(r, req('k2', { [ANNOTATION.pools]: 'pool-b' }, 'stays', q.metadata.uid));
      r.clock.t += 1;
      await r.warm.gcPods();
      assert.equal(r.warm.report().direct, 2, 'both pods listed');
      fake.deletePod('web', 'annotated');
      r.clock.t += 1;
      await r.warm.gcPods();
      assert.equal(await r.admin.addressesOf(key('k1')), undefined, 'released on the datastore');
      assert.equal((await r.admin.addressesOf(key('k2')))?.length, 1);
      const s = r.warm.report();
      assert.equal(s.direct, 1);
      assert.equal(s.pods.gcReleases, 1);
      assert.equal(s.pools.ipv4!.idle, 4, 'nothing joined the idle queue');
      assert.deepEqual(await r.admin.check(), clean);
    } finally {
      await stopWarmRig(r);
      await fake.close();
    }
  });
});
