import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { startFakeKubeApiServer } from '../../test/helpers/fake-kube-apiserver.js';
import { makeTempDir } from '../../test/helpers/tmp.js';
import { decideTaints } from './node-taint.js';
import { MAX_ATTEMPTS, applyNodeTaints } from './node-taint-patch.js';
import { openKube } from './kube-client.js';

test('a taint another writer adds between our read and our write is kept: 409, read again, recompute', async () => {
  const fake = await startFakeKubeApiServer();
  const dir = makeTempDir('podipam-taint-');
  try {
    fake.writeKubeconfig(join(dir.path, 'kc'));
    const api = (await openKube(join(dir.path, 'kc'))).coreApi;
    const node = fake.addNode('n1');
    let reads = 0;
    const r = await applyNodeTaints(api, 'n1', (current) => {
      if (++reads === 1) {
        // someone else writes the Node after our read
        node.spec.taints = [{ key: 'other', value: 'x', effect: 'NoExecute' }];
        node.metadata.resourceVersion = String(Number(node.metadata.resourceVersion) + 100);
      }
      return decideTaints(current, [{ family: 4, headroom: 0 }], 4, new Date()).taints;
    });
    assert.equal(r.attempts, 2);
    assert.deepEqual(
      fake.getNode('n1')?.spec.taints?.map((t) => [t.key, t.value, t.effect]),
      [
        ['other', 'x', 'NoExecute'],
        ['podipam.io/ip-exhausted', 'ipv4', 'NoSchedule'],
      ],
    );
    // already as wanted: no write
    const before = fake.patches.length;
    assert.equal((await applyNodeTaints(api, 'n1', (c) => decideTaints(c, [{ family: 4, headroom: 2 }], 4, new Date()).taints)).wrote, undefined);
    assert.equal(fake.patches.length, before);
    // a Node that changes under every attempt: bounded, an error naming it
    await assert.rejects(
      applyNodeTaints(api, 'n1', (c) => {
        const n = fake.getNode('n1')!;
        n.metadata.resourceVersion = String(Number(n.metadata.resourceVersion) + 1);
        return decideTaints(c, [{ family: 4, headroom: 10 }], 4, new Date()).taints;
      }),
      new RegExp(`node n1: its taints changed under every one of ${MAX_ATTEMPTS} attempts`),
    );
    await assert.rejects(
      applyNodeTaints(api, 'nope', () => []),
      /node nope: no such Node in the API server/,
    );
  } finally {
    await fake.close();
    dir.remove();
  }
});
