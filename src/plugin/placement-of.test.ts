import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cniErrorOf } from '../cni/cni-error-of.js';
import { CniCode } from '../cni/errors.js';
import type { PodDirectory } from '../model/pod-directory.js';
import { placementOf } from './placement-of.js';

const pod = { namespace: 'shop', name: 'web-0', uid: 'u1' };
const dir = (synced: boolean, namespaces: Record<string, Record<string, string>>): PodDirectory => ({
  synced,
  pod: () => undefined,
  namespaceAnnotations: (ns) => namespaces[ns],
});

test("placementOf: the namespace's annotations from the cache; the runtime's pod annotations win", () => {
  const d = dir(true, { shop: { 'podipam.io/pools': 'blue' } });
  assert.deepEqual(placementOf({ pod }, d).pools?.parsed, ['blue']);
  assert.deepEqual(placementOf({ pod, podAnnotations: { 'podipam.io/ip': '10.0.0.5' } }, d).ips?.on, 'pod shop/web-0');
  assert.deepEqual(placementOf({ pod }, dir(true, {})), {}, 'a synced cache without the namespace: no namespace annotations');
  assert.deepEqual(placementOf({ pod }), {}, 'no cache (the per-pod plugin): only the runtime counts');
});

test('placementOf: a cache that has not listed yet does not guess — not ready (code 11) unless it knows the namespace', () => {
  assert.throws(
    () => placementOf({ pod }, dir(false, {})),
    (e: unknown) => {
      const c = cniErrorOf(e, 'ADD');
      return c.code === CniCode.TryAgainLater && /pod cache has not listed namespaces.*"shop"/.test(c.msg);
    },
  );
  assert.deepEqual(placementOf({ pod }, dir(false, { shop: { 'podipam.io/pools': 'blue' } })).pools?.parsed, ['blue'], 'a namespace it already holds is known');
  assert.deepEqual(placementOf({}, dir(false, {})), {}, 'a call naming no pod has no namespace to wait for');
});

test('placementFor waits (bounded) for a cache that is about to list, then places from it', async () => {
  const { placementFor } = await import('./placement-of.js');
  const namespaces: Record<string, Record<string, string>> = {};
  const d = {
    synced: false,
    pod: () => undefined,
    namespaceAnnotations: (ns: string) => namespaces[ns],
    whenSynced: async (ms: number) => {
      assert.ok(ms > 0);
      await new Promise((r) => setTimeout(r, 30));
      namespaces.shop = { 'podipam.io/pools': 'blue' };
      d.synced = true;
    },
  };
  assert.deepEqual((await placementFor({ pod }, d)).pools?.parsed, ['blue']);
  const never = { synced: false, pod: () => undefined, namespaceAnnotations: () => undefined, whenSynced: () => Promise.resolve() };
  await assert.rejects(placementFor({ pod }, never), /pod cache has not listed namespaces/);
});
