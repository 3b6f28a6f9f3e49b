import { test } from 'node:test';
import { decodeNodeTombstone, nodeTombstoneKey } from '../model/node-tombstone.js';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeKubeApiServer } from '../../test/helpers/fake-kube-apiserver.js';
import { MemoryStore } from '../store/memory/memory-store.js';
import { addNode } from './add-node.js';
import { parseControllerConfig } from './controller-config.js';
import { KubeAdapter } from './kube-adapter.js';
import { listNodes } from './list-nodes.js';
import { NodeCidrController } from './node-cidr-controller.js';
import { linesLog } from '../../test/helpers/lines-log.js';

async function waitFor(what: string, check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  for (let waited = 0; waited < ms; waited += 20) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.fail(`timed out waiting for ${what}`);
}

/** A controller on a memory store and its Kubernetes adapter on the API test double; `start()` starts both, in the CLI's order. */
async function rig(clusterCidr: string) {
  const kube = await startFakeKubeApiServer();
  const dir = mkdtempSync(join(tmpdir(), 'podipam-kube-'));
  const kubeconfig = join(dir, 'kubeconfig');
  kube.writeKubeconfig(kubeconfig);
  const store = new MemoryStore();
  const log: string[] = [];
  let adapter: KubeAdapter | undefined;
  const controller = new NodeCidrController({
    store,
    config: parseControllerConfig({ clusterCidrs: clusterCidr, nodeMaskSize: '24' }),
    pollIntervalMs: 50,
    log: linesLog(log),
    onChange: (name) => adapter?.notify(name),
  });
  return {
    kube,
    store,
    log,
    async start(): Promise<void> {
      await controller.start();
      adapter = new KubeAdapter({
        store,
        controller,
        kubeconfig,
        log: linesLog(log, { fields: ['node'], component: true }).child({ component: 'kube' }),
        relistDelayMs: 100,
      });
      await adapter.start();
    },
    async close(): Promise<void> {
      if (process.env.PODIPAM_TEST_LOG) console.error(log.join('\n'));
      await adapter?.stop();
      await controller.stop();
      await kube.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

test("kube adapter: Nodes get distinct podCIDRs patched in; a deleted Node's CIDR is freed and reused", async () => {
  const r = await rig('10.20.0.0/22');
  const { kube, store, log } = r;
  try {
    kube.addNode('k1', { zone: 'a' });
    kube.addNode('k2');
    // A Node that already has a CIDR (set before podipam) keeps it, and nobody else gets it.
    kube.addNode('old', {}, { podCIDR: '10.20.0.0/24', podCIDRs: ['10.20.0.0/24'] });
    // A record with no Node behind it goes away at the first list.
    await addNode(store, { name: 'stray' });
    await r.start();

    const cidrOf = (n: string): string | undefined => kube.getNode(n)?.spec.podCIDRs?.[0];
    await waitFor('k1 and k2 patched', () => cidrOf('k1') !== undefined && cidrOf('k2') !== undefined);
    assert.equal(cidrOf('old'), '10.20.0.0/24');
    const given = ['k1', 'k2', 'old'].map(cidrOf);
    assert.equal(new Set(given).size, 3, `distinct: ${given.join(' ')}`);
    assert.equal(kube.getNode('k1')?.spec.podCIDR, cidrOf('k1'));
    assert.ok(kube.patches.every((p) => p.contentType === 'application/strategic-merge-patch+json'));
    assert.deepEqual(kube.patches.find((p) => p.name === 'k1')?.body, { spec: { podCIDR: cidrOf('k1'), podCIDRs: [cidrOf('k1')] } });
    await waitFor('the stray record to go', async () => !(await listNodes(store)).some((n) => n.record.name === 'stray'));
    const k1 = (await listNodes(store)).find((n) => n.record.name === 'k1');
    assert.deepEqual(k1?.record.labels, { zone: 'a' });

    // The cluster CIDR holds four /24s: the fourth Node takes the last, the fifth waits.
    kube.addNode('k3');
    await waitFor('k3 patched', () => cidrOf('k3') !== undefined);
    kube.addNode('k4');
    await waitFor('CIDRNotAvailable for k4', () => log.some((l) => l.startsWith('CIDRNotAvailable: node "k4"')));
    assert.equal(cidrOf('k4'), undefined);
    const freed = cidrOf('k2');
    kube.deleteNode('k2');
    await waitFor("k4 to get k2's CIDR", () => cidrOf('k4') !== undefined);
    assert.equal(cidrOf('k4'), freed);
    assert.ok(!(await listNodes(store)).some((n) => n.record.name === 'k2'));
    const t = await store.get(nodeTombstoneKey('k2'));
    assert.equal(t && decodeNodeTombstone(t.key, t.value).by, 'kubernetes', 'a deleted Node leaves the proof cluster GC needs');

    // A dropped watch is re-established from its resourceVersion.
    kube.dropWatches();
    kube.deleteNode('k3');
    kube.addNode('k5');
    await waitFor('k5 patched after the re-watch', () => cidrOf('k5') !== undefined);
    const all = kube.nodes().map((n) => n.spec.podCIDRs?.[0]);
    assert.equal(new Set(all).size, all.length);
  } catch (e) {
    console.error(log.join('\n'));
    throw e;
  } finally {
    await r.close();
  }
});

test('kube adapter: a Node missing from its cache (the list failed) is asked for before its record goes; only a 404 deletes it', async () => {
  const r = await rig('10.21.0.0/22');
  const { kube, store, log } = r;
  try {
    kube.addNode('live');
    // Every node list fails: the adapter's cache stays empty, so it knows of no Node at all.
    kube.failNodeLists(1_000_000);
    await r.start();
    await waitFor('a failed node list', () => log.some((l) => l.includes('node list/watch failed')));
    // Records appear (another controller's adapter, or an operator): the controller assigns
    // their CIDRs and tells the adapter, which finds neither Node in its (empty) cache.
    await addNode(store, { name: 'live' });
    await addNode(store, { name: 'never' });
    const cidrOf = (n: string): string | undefined => kube.getNode(n)?.spec.podCIDRs?.[0];
    const recordOf = async (n: string): Promise<boolean> => (await listNodes(store)).some((x) => x.record.name === n);
    await waitFor('live patched or its record deleted', async () => cidrOf('live') !== undefined || !(await recordOf('live')));
    assert.ok(await recordOf('live'), `the record of a Node that exists was deleted:\n${log.join('\n')}`);
    assert.ok(!log.some((l) => l.startsWith('kube: node deleted') && l.endsWith(' node=live')), log.join('\n'));
    const rec = (await listNodes(store)).find((x) => x.record.name === 'live');
    assert.deepEqual([cidrOf('live')], rec?.record.podCIDRs);
    // The API server says "never" does not exist (404): that is proof, and its record goes.
    await waitFor('the record of "never" to go', async () => !(await recordOf('never')));
    assert.ok(
      log.some((l) => l.startsWith('kube: node deleted in Kubernetes') && l.endsWith(' node=never')),
      log.join('\n'),
    );
    assert.ok(kube.nodeRequests.get >= 2, `each absence confirmed by a get: ${JSON.stringify(kube.nodeRequests)}`);
  } catch (e) {
    console.error(log.join('\n'));
    throw e;
  } finally {
    await r.close();
  }
});
