/**
 * The pod cache against the Kubernetes API double (test/helpers/fake-kube-apiserver.ts) with the
 * real transport: what the list and the watch bring in, resume after a dropped watch, relist
 * after 410, an API server down at start, and the API round trips counted.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type FakeKubeApiServer, startFakeKubeApiServer } from '../../test/helpers/fake-kube-apiserver.js';
import { recordingLog } from '../log/logger.js';
import { kubeTransport, openKube, type Kube } from './kube-client.js';
import { cachedPodOf, PodCache } from './pod-cache.js';
import { backoffDelay } from './pod-cache-reflector.js';

const TIMING = { backoffBaseMs: 50, backoffMaxMs: 400, listTimeoutMs: 2000, watchSeconds: 30 };

async function until(what: string, ok: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await sleep(10);
  }
}

describe('pod cache', () => {
  let fake: FakeKubeApiServer;
  let dir: string;
  let kube: Kube;
  before(async () => {
    fake = await startFakeKubeApiServer();
    dir = mkdtempSync(join(tmpdir(), 'podipam-pod-cache-'));
    fake.writeKubeconfig(join(dir, 'kubeconfig'));
    kube = await openKube(join(dir, 'kubeconfig'));
  });
  after(async () => {
    await fake.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const open = (node: string): PodCache => new PodCache({ transport: kubeTransport(kube), node, log: recordingLog(), timing: TIMING });

  it("lists the node's pods and the namespaces, then follows their events; owners: the controller, else the first", async () => {
    fake.addNamespace('team-a', { 'podipam.io/pools': 'gold' });
    fake.addNamespace('team-b');
    fake.addPod('team-a', 'web-1', {
      node: 'n1',
      ownerKind: 'ReplicaSet',
      annotations: { 'podipam.io/ip': '10.1.0.5', 'kubectl.kubernetes.io/last-applied-configuration': '{"big":1}' },
    });
    fake.addPod('team-a', 'other-node', { node: 'n2' });
    fake.addPod('team-b', 'db-0', { node: 'n1', owners: [{ kind: 'Foo' }, { kind: 'StatefulSet', controller: true }] });
    fake.addPod('team-b', 'first', { node: 'n1', owners: [{ kind: 'Bar' }, { kind: 'Baz' }] });
    const cache = open('n1');
    assert.equal(cache.pod('team-a', 'web-1'), undefined, 'nothing before the first list');
    assert.equal(cache.synced, false);
    cache.start();
    try {
      await until('synced', () => cache.synced);
      const web = cache.pod('team-a', 'web-1');
      assert.deepEqual(
        { ...web },
        {
          namespace: 'team-a',
          name: 'web-1',
          uid: fake.getPod('team-a', 'web-1')!.metadata.uid,
          annotations: { 'podipam.io/ip': '10.1.0.5' },
          ownerKind: 'ReplicaSet',
          node: 'n1',
        },
      );
      assert.equal(cache.pod('team-a', 'other-node'), undefined, "another node's pod is not held");
      assert.equal(cache.pod('team-b', 'db-0')?.ownerKind, 'StatefulSet');
      assert.equal(cache.pod('team-b', 'first')?.ownerKind, 'Bar');
      assert.deepEqual(cache.namespaceAnnotations('team-a'), { 'podipam.io/pools': 'gold' });
      assert.deepEqual(cache.namespaceAnnotations('team-b'), {});
      assert.equal(cache.namespaceAnnotations('nope'), undefined);

      fake.addPod('team-b', 'new', { node: 'n1', annotations: { 'podipam.io/sticky': 'true' } });
      fake.annotatePod('team-a', 'web-1', { 'podipam.io/ip': null, 'podipam.io/pools': 'silver' });
      fake.annotateNamespace('team-b', { 'podipam.io/ip-set': 'fixed' });
      fake.deletePod('team-b', 'first');
      fake.addNamespace('team-c', { x: 'y' });
      await until('events applied', () => cache.pod('team-b', 'first') === undefined && cache.namespaceAnnotations('team-c') !== undefined);
      assert.deepEqual(cache.pod('team-b', 'new')?.annotations, { 'podipam.io/sticky': 'true' });
      assert.deepEqual(cache.pod('team-a', 'web-1')?.annotations, { 'podipam.io/pools': 'silver' });
      assert.deepEqual(cache.namespaceAnnotations('team-b'), { 'podipam.io/ip-set': 'fixed' });
      const s = cache.status();
      assert.deepEqual(
        { synced: s.synced, pods: s.pods, namespaces: s.namespaces, relists: s.relists, errors: s.errors },
        { synced: true, pods: 3, namespaces: 3, relists: 0, errors: 0 },
      );
      assert.ok(s.events >= 5, `events ${s.events}`);
      assert.deepEqual(
        cache
          .pods()
          .map((p) => `${p.namespace}/${p.name}`)
          .sort(),
        ['team-a/web-1', 'team-b/db-0', 'team-b/new'],
      );
    } finally {
      await cache.stop();
    }
    await until('stop ends its watches', () => fake.openWatches() === 0);
  });

  it('a dropped watch resumes from its resourceVersion: no relist, no event missed', async () => {
    fake.addNamespace('resume');
    const cache = open('n3');
    cache.start();
    try {
      await until('synced', () => cache.synced);
      const lists = { pods: fake.podRequests.list, ns: fake.namespaceRequests.list };
      const watches = fake.podRequests.watch;
      for (let i = 0; i < 5; i++) {
        await until('watching', () => fake.openWatches() >= 2);
        fake.dropWatches();
        // Events while no watch is open: the resumed watch must deliver them from its resourceVersion.
        fake.addPod('resume', `p${i}`, { node: 'n3' });
        if (i > 0) fake.deletePod('resume', `p${i - 1}`);
      }
      await until('all events', () => cache.pod('resume', 'p4') !== undefined && cache.pod('resume', 'p3') === undefined);
      assert.deepEqual(
        cache.pods().map((p) => p.name),
        ['p4'],
      );
      assert.deepEqual({ pods: fake.podRequests.list, ns: fake.namespaceRequests.list }, lists, 'no list after a dropped watch');
      assert.ok(fake.podRequests.watch >= watches + 5, 'each drop re-watched');
      assert.equal(cache.status().relists, 0);
      assert.ok(cache.status().resumes >= 5, `resumes ${cache.status().resumes}`);
    } finally {
      await cache.stop();
    }
  });

  it('410 Gone (history compacted while the API server was away) → relist, and the cache is right afterwards', async () => {
    fake.addNamespace('gone', { a: '1' });
    fake.addPod('gone', 'stays', { node: 'n4' });
    fake.addPod('gone', 'goes', { node: 'n4' });
    const cache = open('n4');
    cache.start();
    try {
      await until('synced', () => cache.synced && cache.pod('gone', 'goes') !== undefined);
      const lists = fake.podRequests.list;
      await fake.down();
      fake.deletePod('gone', 'goes');
      fake.addPod('gone', 'came', { node: 'n4', annotations: { b: '2' } });
      fake.annotateNamespace('gone', { a: '3' });
      fake.expireWatchHistory();
      await fake.up();
      await until('relisted', () => cache.pod('gone', 'came') !== undefined && cache.namespaceAnnotations('gone')?.a === '3', 10_000);
      assert.equal(cache.pod('gone', 'goes'), undefined, 'a pod deleted during the outage is gone after the relist');
      assert.deepEqual(cache.pod('gone', 'came')?.annotations, { b: '2' });
      assert.deepEqual(cache.namespaceAnnotations('gone'), { a: '3' });
      assert.ok(fake.podRequests.list > lists, 'listed again');
      const s = cache.status();
      assert.ok(s.relists >= 2, `both resources relisted (${s.relists})`);
      // And it follows events again afterwards.
      fake.addPod('gone', 'after', { node: 'n4' });
      await until('watching again', () => cache.pod('gone', 'after') !== undefined);
    } finally {
      await cache.stop();
    }
  });

  it('API server down at start: no crash, bounded backoff, synced once it is back', async () => {
    fake.addPod('late', 'p', { node: 'n5' });
    await fake.down();
    const log = recordingLog();
    const cache = new PodCache({ transport: kubeTransport(kube), node: 'n5', log, timing: TIMING });
    cache.start();
    try {
      await sleep(1500);
      assert.equal(cache.synced, false);
      assert.equal(cache.pod('late', 'p'), undefined, 'lookups answer undefined before the first sync');
      const s = cache.status();
      // 50, 100, 200, 400, 400 ms…: about 6 tries per resource in 1.5 s, never a hot loop.
      assert.ok(s.errors >= 4 && s.errors <= 16, `errors ${s.errors} in 1.5 s`);
      assert.match(s.lastError?.message ?? '', /ECONNREFUSED/);
      assert.ok(log.records.some((r) => r.msg === 'list/watch failed: retrying'));
      await fake.up();
      await until('synced after the API server came back', () => cache.synced, 5000);
      assert.equal(cache.pod('late', 'p')?.node, 'n5');
    } finally {
      await fake.up();
      await cache.stop();
    }
  });

  it('a watch that the server ends at once backs off instead of looping', async () => {
    const cache = open('n6');
    cache.start();
    try {
      await until('synced', () => cache.synced);
      const w0 = fake.podRequests.watch;
      const end = Date.now() + 1000;
      while (Date.now() < end) {
        fake.dropWatches();
        await sleep(5);
      }
      assert.ok(fake.podRequests.watch - w0 < 40, `${fake.podRequests.watch - w0} pod watches in 1 s of drops`);
    } finally {
      await cache.stop();
    }
  });
});

describe('pod cache pieces', () => {
  it('backoff doubles from the base up to the bound, jittered ±20%', () => {
    const t = { backoffBaseMs: 100, backoffMaxMs: 1000 };
    assert.deepEqual(
      [1, 2, 3, 4, 5, 10].map((n) => backoffDelay(n, t, () => 0.5)),
      [100, 200, 400, 800, 1000, 1000],
    );
    assert.equal(
      backoffDelay(1, t, () => 0),
      80,
    );
    assert.equal(
      backoffDelay(30, t, () => 1),
      1200,
    );
  });

  it('a pod object without namespace or name is not kept; annotations other than strings are dropped', () => {
    assert.equal(cachedPodOf({ metadata: { name: 'x' } }), undefined);
    assert.equal(cachedPodOf(null), undefined);
    assert.deepEqual(
      { ...cachedPodOf({ metadata: { namespace: 'n', name: 'x', annotations: { a: 'b', c: 1 } } }) },
      { namespace: 'n', name: 'x', uid: undefined, annotations: { a: 'b' }, ownerKind: undefined, node: undefined },
    );
  });
});
