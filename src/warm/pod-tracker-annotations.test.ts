/**
 * The pod tracker's sticky decision with the `podipam.io/sticky` annotation and the host's pod
 * cache (PodDirectory), on a real SQLite resource DB and the Kubernetes API test double:
 * "true" makes any pod sticky, "false" no pod, a StatefulSet's included; a pod the cache holds
 * is never looked up on the API server (its owner kind comes from the cache); one it does not
 * hold still is. Then through the warm back end: the annotation, on the pod or its namespace,
 * decides whether a recreated pod gets its address back.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeKubeApiServer } from '../../test/helpers/fake-kube-apiserver.js';
import { type WarmRig, startWarmRig, stopWarmRig, warmConf } from '../../test/helpers/warm-rig.js';
import { KubePods } from '../agent/kube-pods.js';
import { ANNOTATION } from '../model/placement.js';
import type { CachedPod, PodDirectory } from '../model/pod-directory.js';
import type { IpamRequest } from '../plugin/ipam-backend.js';
import { PodTracker, type PodTrackerOptions, stickyKey } from './pod-tracker.js';
import { ResourceDb } from './resource-db.js';
import type { WarmOptions } from './warm-service.js';

const root = mkdtempSync(join(tmpdir(), 'podipam-pod-tracker-ann-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

const args = (namespace: string, name: string, uid?: string): Map<string, string> =>
  new Map([['K8S_POD_NAMESPACE', namespace], ['K8S_POD_NAME', name], ...(uid ? [['K8S_POD_UID', uid] as [string, string]] : [])]);

/** A PodDirectory over a map, counting its lookups. */
function directory(pods: readonly CachedPod[], namespaces: Record<string, Record<string, string>> = {}): PodDirectory & { lookups: number } {
  const byName = new Map(pods.map((p) => [`${p.namespace}/${p.name}`, p]));
  const d = {
    lookups: 0,
    pod(namespace: string, name: string): CachedPod | undefined {
      d.lookups++;
      return byName.get(`${namespace}/${name}`);
    },
    namespaceAnnotations: (ns: string) => namespaces[ns],
  };
  return d;
}
const cached = (namespace: string, name: string, ownerKind: string | undefined, uid = `uid-${name}`, annotations: Record<string, string> = {}): CachedPod => ({ namespace, name, uid, ownerKind, annotations, node: 'n1' });

async function tracker(o: Partial<PodTrackerOptions> = {}): Promise<PodTracker> {
  const db = new ResourceDb(join(root, `db${++n}`));
  const t = new PodTracker(db, { node: 'n1', stickyForMs: 60_000, now: () => 1_000_000, openPodSource: (k, to) => KubePods.open(k, to), ...o });
  await t.open();
  return t;
}

describe('pod tracker: podipam.io/sticky and the pod cache', () => {
  it('"true" makes a ReplicaSet pod sticky, "false" a StatefulSet pod not; neither asks the API server', async () => {
    const fake = await startFakeKubeApiServer();
    const kubeconfig = join(root, `kc${++n}`);
    fake.writeKubeconfig(kubeconfig);
    const t = await tracker({ kubeconfig });
    try {
      const rs = fake.addPod('web', 'web-x', { node: 'n1', ownerKind: 'ReplicaSet' });
      const sts = fake.addPod('db', 'pg-0', { node: 'n1', ownerKind: 'StatefulSet' });
      const a = await t.identify({ network: 'net', ifname: 'eth0', cniArgs: args('web', 'web-x', rs.metadata.uid), sticky: true }, 'net:c1:eth0', false);
      assert.equal(a.sticky, true);
      assert.equal(a.poolKey, stickyKey('web', 'web-x', 'net', 'eth0'));
      const b = await t.identify({ network: 'net', ifname: 'eth0', cniArgs: args('db', 'pg-0', sts.metadata.uid), sticky: false }, 'net:c2:eth0', false);
      assert.equal(b.sticky, false);
      assert.equal(b.poolKey, 'net:c2:eth0');
      assert.equal(fake.podRequests.get, 0, 'the annotation decides: no lookup');
      // Without the annotation the owner decides, looked up as before (no cache here).
      const c = await t.identify({ network: 'net', ifname: 'eth0', cniArgs: args('db', 'pg-0', sts.metadata.uid) }, 'net:c3:eth0', false);
      assert.equal(c.sticky, true);
      assert.equal(fake.podRequests.get, 1);
      // "true" still needs a pod name to key the reservation by.
      const d = await t.identify({ network: 'net', ifname: 'eth0', cniArgs: new Map(), sticky: true }, 'net:c4:eth0', false);
      assert.equal(d.sticky, false);
    } finally {
      await t.stop();
      await fake.close();
    }
  });

  it('with a pod cache: the owner kind (and uid) of a pod it holds come from it with no API request; a pod it does not hold is looked up', async () => {
    const fake = await startFakeKubeApiServer();
    const kubeconfig = join(root, `kc${++n}`);
    fake.writeKubeconfig(kubeconfig);
    const missing = fake.addPod('db', 'pg-9', { node: 'n1', ownerKind: 'StatefulSet' });
    const dir = directory([cached('db', 'pg-0', 'StatefulSet'), cached('web', 'web-x', 'ReplicaSet'), cached('web', 'bare', undefined)]);
    const t = await tracker({ kubeconfig, pods: dir });
    try {
      const a = await t.identify({ network: 'net', ifname: 'eth0', cniArgs: args('db', 'pg-0') }, 'net:c1:eth0', false);
      assert.deepEqual([a.sticky, a.ownerKind, a.uid], [true, 'StatefulSet', 'uid-pg-0'], 'the uid learnt from the cache');
      const b = await t.identify({ network: 'net', ifname: 'eth0', cniArgs: args('web', 'web-x', 'uid-web-x') }, 'net:c2:eth0', false);
      assert.deepEqual([b.sticky, b.ownerKind], [false, 'ReplicaSet']);
      const c = await t.identify({ network: 'net', ifname: 'eth0', cniArgs: args('web', 'bare') }, 'net:c3:eth0', false);
      assert.deepEqual([c.sticky, c.ownerKind], [false, '']);
      assert.equal(fake.podRequests.get, 0, 'no API request for pods the cache holds');
      assert.equal(t.report().cacheHits, 3);
      assert.equal(t.report().lookups, 0);
      // Not in the cache (the watch has not delivered it yet): looked up.
      const d = await t.identify({ network: 'net', ifname: 'eth0', cniArgs: args('db', 'pg-9', missing.metadata.uid) }, 'net:c4:eth0', false);
      assert.equal(d.sticky, true);
      assert.equal(fake.podRequests.get, 1);
      // The cache's pod of another uid is another pod: not trusted, looked up.
      const e = await t.identify({ network: 'net', ifname: 'eth0', cniArgs: args('db', 'pg-0', 'uid-new') }, 'net:c5:eth0', false);
      assert.equal(e.sticky, false, 'the API server has no pod of this uid');
      assert.equal(fake.podRequests.get, 2);
      // The annotation wins over the cache's owner.
      const f = await t.identify({ network: 'net', ifname: 'eth0', cniArgs: args('db', 'pg-0'), sticky: false }, 'net:c6:eth0', false);
      assert.equal(f.sticky, false);
    } finally {
      await t.stop();
      await fake.close();
    }
  });
});

describe('warm pool: podipam.io/sticky through the back end', () => {
  const STICKY_FOR = 60_000;
  let seq = 0;
  const rig = (opts: Partial<WarmOptions> = {}): Promise<WarmRig> =>
    startWarmRig(
      {
        root,
        n: ++seq + 1000,
        pools: [{ name: 'v4', cidr: '10.79.0.0/16' }],
        options: { node: 'n1', minIdle: 4, maxIdle: 8, capacity: 64, cooldownMs: 1_000, stickyForMs: STICKY_FOR, tickMs: 3_600_000, writeDelayMs: 3_600_000, gcIntervalMs: 3_600_000 },
      },
      opts,
    );
  const req = (cid: string, namespace: string, name: string, annotations?: Record<string, string>): IpamRequest => ({
    containerId: cid,
    ifname: 'eth0',
    cniArgs: args(namespace, name, `uid-${cid}`),
    pod: { namespace, name, uid: `uid-${cid}` },
    ...(annotations ? { podAnnotations: annotations } : {}),
    conf: warmConf,
  });
  const addr = async (r: WarmRig, q: IpamRequest): Promise<string> => (await r.warm.add(q)).ips[0]!.address;

  it('"true" on the pod, or on its namespace (from the pod cache), keeps a recreated pod\'s address; "false" on the pod overrides the namespace and a StatefulSet owner', async () => {
    const dir = directory([{ ...cached('db', 'pg-0', 'StatefulSet'), uid: undefined }], { team: { [ANNOTATION.sticky]: 'true' } });
    const r = await rig({ pods: dir });
    try {
      // No policy, no kubeconfig: only the annotation makes these sticky.
      const a = await addr(r, req('a1', 'web', 'nginx-1', { [ANNOTATION.sticky]: 'true' }));
      const t = await addr(r, req('t1', 'team', 'job-1'));
      const plain = await addr(r, req('p1', 'web', 'nginx-2'));
      await r.warm.maintain();
      for (const [cid, ns, name] of [['a1', 'web', 'nginx-1'], ['t1', 'team', 'job-1'], ['p1', 'web', 'nginx-2']] as const) await r.warm.del(req(cid, ns, name));
      assert.equal(r.warm.report().stickyReservations, 2, 'the annotated pod and the annotated namespace\'s');
      r.clock.t += 5_000;
      assert.equal(await addr(r, req('a2', 'web', 'nginx-1', { [ANNOTATION.sticky]: 'true' })), a);
      assert.equal(await addr(r, req('t2', 'team', 'job-1')), t);
      assert.notEqual(await addr(r, req('p2', 'web', 'nginx-2')), plain);
      assert.equal(r.warm.report().pods.stickyHits, 2);
      // A StatefulSet pod (owner from the cache) is sticky by default; "false" turns that off.
      await addr(r, req('s0', 'db', 'pg-0'));
      await r.warm.del(req('s0', 'db', 'pg-0'));
      assert.equal(r.warm.report().stickyReservations, 1, 'a StatefulSet pod the cache knows is sticky with no kubeconfig');
      const s1 = await addr(r, req('s1', 'db', 'pg-0', { [ANNOTATION.sticky]: 'false' }));
      await r.warm.del(req('s1', 'db', 'pg-0'));
      assert.equal(r.warm.report().stickyReservations, 1, '"false": no reservation, the earlier one untouched');
      assert.equal(r.warm.report().pods.stickyHits, 2, 'and it did not take the reservation');
      assert.ok(s1);
      // "false" on the pod beats "true" on its namespace.
      await addr(r, req('t3', 'team', 'job-2', { [ANNOTATION.sticky]: 'false' }));
      await r.warm.del(req('t3', 'team', 'job-2'));
      assert.equal(r.warm.report().stickyReservations, 1);
      assert.ok(dir.lookups > 0, 'the cache was asked');
    } finally {
      await stopWarmRig(r);
    }
  });
});
