/**
 * The pod tracker against the Kubernetes API test double through the real client-node, on a real
 * SQLite resource DB: who is sticky (StatefulSet owner, the policy's filters), the pod store as a
 * cache, a failed, missing or hung lookup degrading to not sticky, the GC run releasing only with
 * a list that succeeded.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeKubeApiServer } from '../../test/helpers/fake-kube-apiserver.js';
import { PodTracker, type PodTrackerOptions, stickyKey } from './pod-tracker.js';
import { ResourceDb } from './resource-db.js';
import { KubePods } from '../agent/kube-pods.js';
import { lineLog } from '../../test/helpers/line-log.js';

const root = mkdtempSync(join(tmpdir(), 'podipam-pod-tracker-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

const args = (namespace: string, name: string, uid?: string): Map<string, string> =>
  new Map([['K8S_POD_NAMESPACE', namespace], ['K8S_POD_NAME', name], ...(uid ? [['K8S_POD_UID', uid] as [string, string]] : [])]);

async function tracker(o: Partial<PodTrackerOptions> = {}): Promise<{ t: PodTracker; db: ResourceDb; clock: { t: number } }> {
  const db = new ResourceDb(join(root, `db${++n}`));
  const clock = { t: 1_000_000 };
  const t = new PodTracker(db, { node: 'n1', stickyForMs: 60_000, now: () => clock.t, openPodSource: (k, t) => KubePods.open(k, t), ...o });
  await t.open();
  return { t, db, clock };
}

describe('pod tracker', () => {
  it('with a kubeconfig: a StatefulSet pod is sticky, a ReplicaSet or ownerless pod is not; the pod store caches the owner', async () => {
    const fake = await startFakeKubeApiServer();
    const kubeconfig = join(root, `kc${++n}`);
    fake.writeKubeconfig(kubeconfig);
    const { t, db } = await tracker({ kubeconfig });
    try {
      const sts = fake.addPod('db', 'pg-0', { node: 'n1', ownerKind: 'StatefulSet' });
      const rs = fake.addPod('web', 'web-x', { node: 'n1', ownerKind: 'ReplicaSet' });
      const bare = fake.addPod('web', 'bare', { node: 'n1' });
      const a = await t.identify({ network: 'net', ifname: 'eth0', cniArgs: args('db', 'pg-0', sts.metadata.uid) }, 'net:c1:eth0', false);
      assert.deepEqual(a, {
        namespace: 'db',
        name: 'pg-0',
        uid: sts.metadata.uid,
        ownerKind: 'StatefulSet',
        sticky: true,
        poolKey: stickyKey('db', 'pg-0', 'net', 'eth0'),
      });
      const b = await t.identify({ network: 'net', ifname: 'eth0', cniArgs: args('web', 'web-x', rs.metadata.uid) }, 'net:c2:eth0', false);
      assert.equal(b.sticky, false);
      assert.equal(b.ownerKind, 'ReplicaSet');
      assert.equal(b.poolKey, 'net:c2:eth0');
      const c = await t.identify({ network: 'net', ifname: 'eth0', cniArgs: args('web', 'bare') }, 'net:c3:eth0', false);
      assert.deepEqual([c.sticky, c.ownerKind, c.uid], [false, '', bare.metadata.uid], 'no owner; the uid learnt from the API server');
      assert.equal(fake.podRequests.get, 3);
      // Cached: the pod store knows this uid's owner.
      t.store.seen({
        key: 'net:c1:eth0',
        network: 'net',
        namespace: 'db',
        name: 'pg-0',
        uid: sts.metadata.uid,
        containerId: 'c1',
        ifname: 'eth0',
        ownerKind: 'StatefulSet',
        sticky: true,
        poolKey: a.poolKey,
        addrs: ['10.0.0.1'],
        addedAt: 1,
      });
      t.store.deleted('net:c1:eth0', 2);
      const again = await t.identify({ network: 'net', ifname: 'eth0', cniArgs: args('db', 'pg-0', sts.metadata.uid) }, 'net:c9:eth0', false);
      assert.equal(again.sticky, true);
      assert.equal(fake.podRequests.get, 3, 'no API request for a pod the store knows');
      // A pod that does not exist, and one whose uid is not the API server's: not sticky, counted.
      const missing = await t.identify({ network: 'net', ifname: 'eth0', cniArgs: args('db', 'nope', 'u') }, 'net:c4:eth0', false);
      assert.equal(missing.sticky, false);
      const stale = await t.identify({ network: 'net', ifname: 'eth0', cniArgs: args('db', 'pg-0', 'old-uid') }, 'net:c5:eth0', false);
      assert.equal(stale.sticky, false);
      assert.equal(t.counters.lookupsFailed, 2);
      // Not a Kubernetes pod: nothing to look up.
      const plain = await t.identify({ network: 'net', ifname: 'eth0', cniArgs: new Map() }, 'net:c6:eth0', false);
      assert.deepEqual([plain.sticky, plain.poolKey], [false, 'net:c6:eth0']);
      // The API server stops: the lookup fails, the pod is not sticky, later ADDs skip it a while.
      await fake.close();
      const down = await t.identify({ network: 'net', ifname: 'eth0', cniArgs: args('db', 'pg-1', 'u1') }, 'net:c7:eth0', false);
      assert.equal(down.sticky, false);
      assert.equal(t.counters.lookupsFailed, 3);
      const skipped = await t.identify({ network: 'net', ifname: 'eth0', cniArgs: args('db', 'pg-2', 'u2') }, 'net:c8:eth0', false);
      assert.equal(skipped.sticky, false);
      assert.equal(t.counters.lookupsFailed, 4);
    } finally {
      await t.stop();
      db.close();
      await fake.close();
    }
  });

  it('a lookup the API server never answers gives up after the lookup timeout: not sticky', async () => {
    const conns = new Set<Socket>();
    const hung = createServer((s) => conns.add(s)); // accepts, never answers
    await new Promise<void>((resolve) => hung.listen(0, '127.0.0.1', resolve));
    const fake = await startFakeKubeApiServer();
    const kubeconfig = join(root, `kc${++n}`);
    fake.writeKubeconfig(kubeconfig);
    await fake.close();
    const { writeFileSync, readFileSync } = await import('node:fs');
    writeFileSync(kubeconfig, readFileSync(kubeconfig, 'utf8').replace(/server: .*/, `server: http://127.0.0.1:${(hung.address() as { port: number }).port}`));
    const { t, db } = await tracker({ kubeconfig, lookupTimeoutMs: 300 });
    try {
      const t0 = performance.now();
      const id = await t.identify({ network: 'net', ifname: 'eth0', cniArgs: args('db', 'pg-0', 'u') }, 'net:c1:eth0', false);
      assert.equal(id.sticky, false);
      assert.equal(t.counters.lookupsFailed, 1);
      assert.ok(conns.size >= 1, 'the lookup reached the hung server');
      assert.ok(performance.now() - t0 < 30_000, 'the lookup ended');
    } finally {
      await t.stop();
      db.close();
      for (const c of conns) c.destroy();
      await new Promise<void>((resolve) => hung.close(() => resolve()));
    }
  });

  it('without a kubeconfig: the policy filters decide; no filter, nothing is sticky', async () => {
    const none = await tracker();
    const both = await tracker({ policy: { namespaces: ['db'], namePattern: 'pg-[0-9]+' } });
    try {
      const id = (t: PodTracker, ns: string, name: string) =>
        t.identify({ network: 'net', ifname: 'eth0', cniArgs: args(ns, name) }, `net:${ns}-${name}:eth0`, false).then((x) => x.sticky);
      assert.equal(await id(none.t, 'db', 'pg-0'), false);
      assert.equal(await id(both.t, 'db', 'pg-0'), true);
      assert.equal(await id(both.t, 'web', 'pg-0'), false, 'namespace not listed');
      assert.equal(await id(both.t, 'db', 'pg-0-backup'), false, 'the pattern matches the whole name');
      assert.throws(() => new PodTracker(none.db, { node: 'n1', stickyForMs: 1, now: Date.now, policy: { namePattern: '(' } }), /invalid namePattern "\("/);
    } finally {
      none.db.close();
      both.db.close();
    }
  });

  it('a GC run releases the attachments of pods gone from the list, and nothing when the list fails', async () => {
    const fake = await startFakeKubeApiServer();
    const kubeconfig = join(root, `kc${++n}`);
    fake.writeKubeconfig(kubeconfig);
    const { t, db, clock } = await tracker({ kubeconfig, stickyForMs: 10_000 });
    try {
      const keep = fake.addPod('web', 'keep', { node: 'n1' });
      const row = (key: string, name: string, uid: string, sticky: boolean) => ({
        key,
        network: 'net',
        namespace: 'web',
        name,
        uid,
        containerId: key,
        ifname: 'eth0',
        ownerKind: sticky ? 'StatefulSet' : '',
        sticky,
        poolKey: sticky ? stickyKey('web', name, 'net', 'eth0') : key,
        addrs: ['10.0.0.1'],
        addedAt: 1,
      });
      t.store.seen(row('k', 'keep', keep.metadata.uid, false));
      t.store.seen(row('g', 'gone', 'u-g', false));
      t.store.seen(row('s', 'gone-sts', 'u-s', true));
      const released: string[][] = [];
      const release = async (keys: readonly string[]): Promise<number> => (released.push([...keys]), keys.length);
      const r1 = await t.runOnce(release);
      assert.deepEqual(released, [['g']], 'the non-sticky pod at once');
      assert.deepEqual([r1?.ok, r1?.listed, r1?.released], [true, 1, 1]);
      assert.equal(t.store.get('s')?.goneAt, clock.t, 'the sticky one marked gone');
      clock.t += 10_000;
      await fake.close();
      const r2 = await t.runOnce(release);
      assert.equal(r2?.ok, false);
      assert.deepEqual(released, [['g']], 'nothing released without a list, even past the window');
      assert.equal(t.counters.gcListFailures, 1);
      assert.equal(t.report().lastGc?.ok, false);
    } finally {
      await t.stop();
      db.close();
      await fake.close();
    }
  });

  it('a pod missing from the list is asked for: kept while the API server has it (or cannot say), released on its 404', async () => {
    const fake = await startFakeKubeApiServer();
    const kubeconfig = join(root, `kc${++n}`);
    fake.writeKubeconfig(kubeconfig);
    const logs: string[] = [];
    const { t, db } = await tracker({ kubeconfig, stickyForMs: 0, log: lineLog((msg) => logs.push(msg)) });
    try {
      // The list of node n1 misses the pod: the API server has it on "n1.example".
      const p = fake.addPod('web', 'away', { node: 'n1.example' });
      t.store.seen({
        key: 'a',
        network: 'net',
        namespace: 'web',
        name: 'away',
        uid: p.metadata.uid,
        containerId: 'a',
        ifname: 'eth0',
        ownerKind: '',
        sticky: false,
        poolKey: 'a',
        addrs: ['10.0.0.1'],
        addedAt: 1,
      });
      const released: string[][] = [];
      const release = async (keys: readonly string[]): Promise<number> => (released.push([...keys]), keys.length);
      fake.failPodGets(1);
      const r1 = await t.runOnce(release);
      assert.deepEqual([r1?.ok, r1?.listed, released], [true, 0, []], 'a failed get: no evidence, nothing released');
      assert.equal(t.store.get('a')?.goneAt, undefined, 'not even marked gone');
      assert.ok(
        logs.some((l) => l.includes('cannot be looked up')),
        logs.join('\n'),
      );
      await t.runOnce(release);
      assert.deepEqual(released, [], 'the API server has the pod: kept');
      assert.ok(
        logs.some((l) => l.includes('still exist in the API server')),
        logs.join('\n'),
      );
      fake.deletePod('web', 'away');
      await t.runOnce(release);
      assert.deepEqual(released, [['a']], 'its 404 is proof');
    } finally {
      await t.stop();
      db.close();
      await fake.close();
    }
  });
});
