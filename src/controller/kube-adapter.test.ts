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

async function waitFor(what: string, check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  for (let waited = 0; waited < ms; waited += 20) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.fail(`timed out waiting for ${what}`);
}

test('kube adapter: Nodes get distinct podCIDRs patched in; a deleted Node\'s CIDR is freed and reused', async () => {
  const kube = await startFakeKubeApiServer();
  const dir = mkdtempSync(join(tmpdir(), 'podipam-kube-'));
  const store = new MemoryStore();
  const log: string[] = [];
  let adapter: KubeAdapter | undefined;
  const controller = new NodeCidrController({
    store,
    config: parseControllerConfig({ clusterCidr: '10.20.0.0/22', nodeMaskSize: '24' }),
    pollIntervalMs: 50,
    log: (l) => log.push(l),
    onChange: (name) => adapter?.notify(name),
  });
  try {
    kube.writeKubeconfig(join(dir, 'kubeconfig'));
    kube.addNode('k1', { zone: 'a' });
    kube.addNode('k2');
    // A Node that already has a CIDR (set before podipam) keeps it, and nobody else gets it.
    kube.addNode('old', {}, { podCIDR: '10.20.0.0/24', podCIDRs: ['10.20.0.0/24'] });
    // A record with no Node behind it goes away at the first list.
    await addNode(store, { name: 'stray' });
    await controller.start();
    adapter = new KubeAdapter({ store, controller, kubeconfig: join(dir, 'kubeconfig'), log: (l) => log.push(l), relistDelayMs: 100 });
    await adapter.start();

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
    await waitFor('k4 to get k2\'s CIDR', () => cidrOf('k4') !== undefined);
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
    if (process.env.PODIPAM_TEST_LOG) console.error(log.join('\n'));
    await adapter?.stop();
    await controller.stop();
    await kube.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
