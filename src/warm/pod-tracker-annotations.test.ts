/**
 * The pod tracker's sticky decision with the `podipam.io/sticky` annotation and the host's pod
 * cache (PodDirectory), on a real SQLite resource DB and the Kubernetes API test double:
 * "true" makes any pod sticky, "false" no pod, a StatefulSet's included; a pod the cache holds
 * is never looked up on the API server (its owner kind comes from the cache); one it does not
 * hold still is. (Through the warm back end: src/plugin/warm-backend-sticky-annotation.test.ts.)
 */
import { cachedPod, mapDirectory } from '../../test/helpers/pod-directory.js';
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeKubeApiServer } from '../../test/helpers/fake-kube-apiserver.js';
import { KubePods } from '../agent/kube-pods.js';
import { PodTracker, type PodTrackerOptions, stickyKey } from './pod-tracker.js';
import { ResourceDb } from './resource-db.js';

const root = mkdtempSync(join(tmpdir(), 'podipam-pod-tracker-ann-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

const args = (namespace: string, name: string, uid?: string): Map<string, string> =>
  new Map([['K8S_POD_NAMESPACE', namespace], ['K8S_POD_NAME', name], ...(uid ? [['K8S_POD_UID', uid] as [string, string]] : [])]);

const directory = mapDirectory;
const cached = cachedPod;

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
