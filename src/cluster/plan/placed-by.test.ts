/**
 * `AssignRequest.placedBy` through the real assignment loop on a memory store: a pool an
 * annotation names must exist, be enabled and select the node (PlacementError, CNI code 7,
 * never a fallback to other pools); Calico's CIDR entries match a pool of that CIDR; Cilium's
 * and Spiderpool's name pools per family (a pool of the other family is code 7) and
 * Spiderpool's patterns stand for the matching pools that can serve; a taken address names
 * the pod holding it (code 101).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ClusterIpam } from '../service/cluster-ipam.js';
import { AddressUnavailableError, NoPoolError } from '../records/errors.js';
import { PlacementError, parsePlacement } from '../../model/placement.js';
import { placementRequest } from './placement-request.js';
import { encodeNodeRecord, nodeKey } from '../../model/node-record.js';
import { formatAddr } from '../../ip/index.js';
import { type Store, openStore } from '../../store/index.js';

const POD = { namespace: 'web', name: 'front-1' };

async function withIpam(fn: (ipam: ClusterIpam, store: Store) => Promise<void>): Promise<void> {
  const store = await openStore('memory:');
  try {
    const ipam = new ClusterIpam(store);
    await ipam.createPool({ name: 'default', cidr: '10.1.0.0/24', blockSize: 28 });
    await ipam.createPool({ name: 'blue', cidr: '10.2.0.0/24', blockSize: 28 });
    await ipam.createPool({ name: 'blue6', cidr: 'fd00:2::/120', blockSize: 124 });
    await ipam.createPool({ name: 'zoned', cidr: '10.3.0.0/24', blockSize: 28, nodeSelector: 'zone=b' });
    await store.txn([], [{ type: 'put', key: nodeKey('n1'), value: encodeNodeRecord({ name: 'n1', labels: { zone: 'a' }, podCIDRs: [], createdAt: 'T' }) }]);
    await fn(ipam, store);
  } finally {
    await store.close();
  }
}

/** The request an annotated pod makes (the same mapping the plugin uses). */
function req(annotations: Record<string, string>, handle = 'h1', pod = POD) {
  const p = parsePlacement(pod, annotations, undefined, 'eth0');
  return { node: 'n1', handle, attrs: { namespace: pod.namespace, pod: pod.name }, ...placementRequest(p, `${pod.namespace}/${pod.name}`, undefined) };
}

const placementError = (re: RegExp) => (e: unknown) => {
  assert.ok(e instanceof PlacementError, `PlacementError, got ${String(e)}`);
  assert.equal(e.failure, 'invalid-config', 'CNI code 7 (src/cni/cni-error-of.ts)');
  assert.match(e.message, re);
  return true;
};

describe('placedBy', () => {
  it('podipam.io/pools draws each family from the named pools only', () =>
    withIpam(async (ipam) => {
      const got = await ipam.assign(req({ 'podipam.io/pools': 'blue,blue6' }));
      assert.deepEqual(
        got.map((a) => a.pool),
        ['blue', 'blue6'],
      );
      const v4only = await ipam.assign(req({ 'podipam.io/pools': 'blue' }, 'h2'));
      assert.deepEqual(
        v4only.map((a) => a.pool),
        ['blue'],
        'a family no named pool serves gets no address',
      );
    }));

  it('an unknown pool is code 7 naming annotation, value, pod and pool — not a fallback', () =>
    withIpam(async (ipam) => {
      await assert.rejects(
        ipam.assign(req({ 'podipam.io/pools': 'blue,nosuch' })),
        placementError(/annotation podipam\.io\/pools="blue,nosuch" on pod web\/front-1: pool "nosuch" does not exist/),
      );
      // Without an annotation the same request is the old NoPoolError.
      await assert.rejects(ipam.assign({ node: 'n1', handle: 'h3', auto: 'each-family', pools: ['nosuch'] }), (e: unknown) => e instanceof NoPoolError);
    }));

  it('a pool whose nodeSelector does not select the node is code 7', () =>
    withIpam(async (ipam) => {
      await assert.rejects(
        ipam.assign(req({ 'podipam.io/pools': 'zoned' })),
        placementError(/pool "zoned" does not select node "n1" \(nodeSelector "zone=b"\)/),
      );
    }));

  it('a disabled pool is code 7', () =>
    withIpam(async (ipam) => {
      await ipam.setPoolDisabled('blue', true);
      await assert.rejects(ipam.assign(req({ 'podipam.io/pools': 'blue' })), placementError(/pool "blue" is disabled/));
    }));

  it("Calico's ipv4pools may name a pool by its CIDR (canonicalised)", () =>
    withIpam(async (ipam) => {
      const got = await ipam.assign(req({ 'cni.projectcalico.org/ipv4pools': '["10.2.0.0/24"]' }));
      assert.deepEqual(
        got.map((a) => a.pool),
        ['blue'],
      );
      await assert.rejects(
        ipam.assign(req({ 'cni.projectcalico.org/ipv4pools': '["10.9.0.0/24"]' }, 'h2')),
        placementError(/ipv4pools="\[\\"10\.9\.0\.0\/24\\"\]" on pod web\/front-1: pool CIDR 10\.9\.0\.0\/24 does not exist/),
      );
    }));

  it('podipam.io/ip taken → 101 naming the pod holding it; outside every pool → 101', () =>
    withIpam(async (ipam) => {
      const got = await ipam.assign(req({ 'podipam.io/ip': '10.2.0.9' }));
      assert.deepEqual(
        got.map((a) => formatAddr(a.addr)),
        ['10.2.0.9'],
      );
      const other = { namespace: 'web', name: 'front-2' };
      await assert.rejects(ipam.assign(req({ 'podipam.io/ip': '10.2.0.9' }, 'h2', other)), (e: unknown) => {
        assert.ok(e instanceof AddressUnavailableError);
        assert.equal(e.failure, 'address-unavailable', 'CNI code 101');
        assert.match(
          e.message,
          /address 10\.2\.0\.9 is not available: it is held by pod web\/front-1 \(handle "h1"\) \(asked for by annotation podipam\.io\/ip="10\.2\.0\.9" on pod web\/front-2\)/,
        );
        return true;
      });
      await assert.rejects(
        ipam.assign(req({ 'podipam.io/ip': '192.168.7.7' }, 'h3')),
        (e: unknown) => e instanceof AddressUnavailableError && e.reason === 'no-pool' && e.failure === 'address-unavailable',
      );
    }));

  it('a holder without pod fields is still named by its handle', () =>
    withIpam(async (ipam) => {
      await ipam.assign({ node: 'n1', handle: 'anon', ips: [{ family: 4, value: 0x0a020005n }] });
      await assert.rejects(ipam.assign(req({ 'podipam.io/ip': '10.2.0.5' }, 'h2')), /held by handle "anon" \(asked for by annotation podipam\.io\/ip/);
    }));

  it("Cilium's annotations: ip-pool for both families, ipv4-pool / ipv6-pool per family, a pool of the other family is code 7", () =>
    withIpam(async (ipam) => {
      assert.deepEqual(
        (await ipam.assign(req({ 'ipam.cilium.io/ip-pool': 'blue' }))).map((a) => a.pool),
        ['blue'],
        'a podipam pool has one family',
      );
      assert.deepEqual(
        (await ipam.assign(req({ 'ipam.cilium.io/ipv4-pool': 'blue', 'ipam.cilium.io/ipv6-pool': 'blue6' }, 'h2'))).map((a) => a.pool),
        ['blue', 'blue6'],
      );
      assert.deepEqual(
        (await ipam.assign(req({ 'ipam.cilium.io/ip-pool': 'blue6', 'ipam.cilium.io/ipv4-pool': 'default' }, 'h3'))).map((a) => a.pool),
        ['default', 'blue6'],
      );
      await assert.rejects(
        ipam.assign(req({ 'ipam.cilium.io/ipv4-pool': 'blue6' }, 'h4')),
        placementError(/ipv4-pool="blue6" on pod web\/front-1: pool "blue6" is an IPv6 pool, named for IPv4/),
      );
      await assert.rejects(
        ipam.assign(req({ 'ipam.cilium.io/ip-pool': 'nosuch' }, 'h5')),
        placementError(/ip-pool="nosuch" on pod web\/front-1: pool "nosuch" does not exist/),
      );
      await assert.rejects(ipam.assign(req({ 'ipam.cilium.io/ip-pool': 'zoned' }, 'h6')), placementError(/pool "zoned" does not select node "n1"/));
    }));

  it("Spiderpool's lists: per family, in order (the next pool when one is full), patterns for the matching pools that can serve", () =>
    withIpam(async (ipam) => {
      const spider = (v: object, h: string) => ipam.assign(req({ 'ipam.spidernet.io/ippool': JSON.stringify(v) }, h));
      assert.deepEqual(
        (await spider({ ipv4: ['blu*'], ipv6: ['blue?'] }, 'h1')).map((a) => a.pool),
        ['blue', 'blue6'],
      );
      assert.deepEqual(
        (await spider({ ipv4: ['*'] }, 'h2')).map((a) => a.pool),
        ['blue'],
        'a pattern: its pools in name order, those that can serve (zoned cannot)',
      );
      assert.deepEqual(
        (await spider({ ipv6: ['blue6'] }, 'h3')).map((a) => a.pool),
        ['blue6'],
        'an IPv6-only pod',
      );
      await assert.rejects(
        spider({ ipv4: ['z*'] }, 'h4'),
        placementError(/pool pattern "z\*" matches no pool that is enabled and selects node "n1" \(it matches zoned: not selecting the node\)/),
      );
      await assert.rejects(spider({ ipv4: ['nomatch-*'] }, 'h5'), placementError(/pool pattern "nomatch-\*" matches no pool$/));
      await assert.rejects(spider({ ipv4: ['blue6*'] }, 'h6'), placementError(/pool pattern "blue6\*" matches no IPv4 pool \(it matches blue6\)/));
      await assert.rejects(spider({ ipv4: ['blue', 'nosuch'] }, 'h7'), placementError(/ippool=.*pool "nosuch" does not exist/));
      // A /29 block: 5 addresses a pod may get, then the list's next pool.
      await ipam.createPool({ name: 'aa-small', cidr: '10.5.0.0/29', blockSize: 29 });
      const got: string[] = [];
      for (let i = 0; i < 7; i++) got.push((await spider({ ipv4: ['aa-small', 'default'] }, `s${i}`))[0]!.pool);
      assert.deepEqual(got, ['aa-small', 'aa-small', 'aa-small', 'aa-small', 'aa-small', 'default', 'default']);
    }));

  it("Spiderpool's namespace defaults serve a pod without pool annotations of its own", () =>
    withIpam(async (ipam) => {
      const p = parsePlacement(
        POD,
        { other: 'x' },
        { 'ipam.spidernet.io/default-ipv4-ippool': '["nosuch","blue"]', 'ipam.spidernet.io/default-ipv6-ippool': '["blue6"]' },
        'eth0',
      );
      await assert.rejects(
        ipam.assign({ node: 'n1', handle: 'h1', ...placementRequest(p, 'web/front-1', undefined) }),
        placementError(/default-ipv4-ippool, ipam\.spidernet\.io\/default-ipv6-ippool=.* on namespace web \(pod web\/front-1\): pool "nosuch" does not exist/),
      );
      const q = parsePlacement(
        POD,
        undefined,
        { 'ipam.spidernet.io/default-ipv4-ippool': '["blue"]', 'ipam.spidernet.io/default-ipv6-ippool': '["blue6"]' },
        'eth0',
      );
      assert.deepEqual(
        (await ipam.assign({ node: 'n1', handle: 'h2', ...placementRequest(q, 'web/front-1', undefined) })).map((a) => a.pool),
        ['blue', 'blue6'],
      );
    }));
});
