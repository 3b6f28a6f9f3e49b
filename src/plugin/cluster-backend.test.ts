import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CniError } from '../cni/errors.js';
import { cniErrorOf } from '../cni/cni-error-of.js';
import type { IpamRequest } from './ipam-backend.js';
import type { NetConf } from '../cni/types.js';
import { openStore } from '../store/index.js';
import { createClusterBackend } from './cluster-backend.js';
import { ClusterIpam } from '../cluster/service/cluster-ipam.js';
import { formatAddr, parseCidr, prefixLast, prefixOf } from '../ip/index.js';

const dir = mkdtempSync(join(tmpdir(), 'podipam-cluster-backend-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let seq = 0;

/** A fresh named memory datastore with a v4 and a v6 pool. */
async function datastore(): Promise<string> {
  const url = `memory:cluster-backend-${++seq}`;
  const s = await openStore(url);
  const c = new ClusterIpam(s);
  await c.createPool({ name: 'v4', cidr: '10.50.0.0/16' });
  await c.createPool({ name: 'v6', cidr: 'fd00:50::/64' });
  return url;
}

function conf(ipam: Record<string, unknown>, extra: Record<string, unknown> = {}): NetConf {
  const raw = { cniVersion: '1.0.0', name: 'net', ipam: { type: 'podipam', nodeName: 'n1', cacheDir: join(dir, 'cache'), ...ipam }, ...extra };
  return {
    cniVersion: '1.0.0',
    name: 'net',
    ipam: raw.ipam,
    raw,
    runtimeConfig: extra.runtimeConfig as NetConf['runtimeConfig'],
    prevResult: extra.prevResult,
    args: extra.args as NetConf['args'],
  };
}

function req(c: NetConf, containerId: string, args: Record<string, string> = {}): IpamRequest {
  return { containerId, ifname: 'eth0', cniArgs: new Map(Object.entries(args)), conf: c };
}

async function cniCode(p: Promise<unknown>): Promise<[number, string]> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof CniError, String(e));
    return [e.code, e.msg];
  }
  return [0, ''];
}

describe('cluster back end (CNI edge)', () => {
  it('ADD gives one address per family with the block prefix and gateway, routes as configured; ADD again returns the same', async () => {
    const c = conf({ datastore: await datastore(), routes: [{ dst: '0.0.0.0/0' }] });
    const b = await createClusterBackend(c);
    const r = await b.add(req(c, 'c1'));
    assert.equal(r.ips.length, 2);
    assert.match(r.ips[0]!.address, /^10\.50\.\d+\.\d+\/26$/);
    assert.match(r.ips[1]!.address, /^fd00:50::[0-9a-f:]+\/122$/);
    for (const ip of r.ips) {
      // The gateway is the block's first usable address; the pod's own address is neither it nor the block's network or broadcast address.
      const { addr, len } = parseCidr(ip.address);
      const block = prefixOf(addr, len);
      assert.equal(ip.gateway, formatAddr({ family: addr.family, value: block.base + 1n }), ip.address);
      assert.ok(addr.value - block.base >= 2n, `${ip.address} is the block's network address or gateway`);
      if (addr.family === 4) assert.ok(addr.value < prefixLast(block).value, `${ip.address} is the block's broadcast address`);
    }
    assert.deepEqual(r.routes, [{ dst: '0.0.0.0/0' }]);
    assert.deepEqual(await b.add(req(c, 'c1')), r);
    assert.notDeepEqual((await b.add(req(c, 'c2'))).ips, r.ips);
  });

  it('ADD returns the configured routes of the families the pod got an address of', async () => {
    const url = await datastore();
    const routes = [{ dst: '0.0.0.0/0' }, { dst: '::/0' }];
    const both = conf({ datastore: url, routes });
    assert.deepEqual((await (await createClusterBackend(both)).add(req(both, 'd1'))).routes, routes);
    const v4 = conf({ datastore: url, routes, pools: ['v4'] });
    assert.deepEqual((await (await createClusterBackend(v4)).add(req(v4, 'd2'))).routes, [{ dst: '0.0.0.0/0' }]);
    const v6only = conf({ datastore: url, routes: [{ dst: '0.0.0.0/0' }], pools: ['v6'] });
    assert.equal((await (await createClusterBackend(v6only)).add(req(v6only, 'd3'))).routes, undefined);
  });

  it('honours the pools list, and specific IPs from CNI_ARGS, runtimeConfig.ips and args.cni.ips', async () => {
    const url = await datastore();
    const only4 = conf({ datastore: url, pools: ['v4'] });
    assert.equal((await (await createClusterBackend(only4)).add(req(only4, 'a'))).ips.length, 1);
    const b = await createClusterBackend(conf({ datastore: url }));
    assert.deepEqual((await b.add(req(conf({ datastore: url }), 'b', { IP: '10.50.9.9', IgnoreUnknown: '1', K8S_POD_NAME: 'x' }))).ips, [
      { address: '10.50.9.9/26', gateway: '10.50.9.1' },
    ]);
    const rc = conf({ datastore: url }, { runtimeConfig: { ips: ['10.50.9.10/24', 'fd00:50::9'] } });
    assert.deepEqual((await b.add(req(rc, 'c'))).ips, [
      { address: '10.50.9.10/26', gateway: '10.50.9.1' },
      { address: 'fd00:50::9/122', gateway: 'fd00:50::1' },
    ]);
    const args = conf({ datastore: url }, { args: { cni: { ips: ['10.50.9.11'] } } });
    assert.deepEqual((await b.add(req(args, 'd'))).ips, [{ address: '10.50.9.11/26', gateway: '10.50.9.1' }]);
    assert.deepEqual(await cniCode(b.add(req(conf({ datastore: url }), 'e', { IP: '10.50.9.9' }))), [
      101,
      'address 10.50.9.9 is not available: it is held by handle "net:b:eth0"',
    ]);
    for (const [ip, role] of [
      ['10.50.9.0', 'the network address'],
      ['10.50.9.1', 'the gateway'],
      ['10.50.9.63', 'the broadcast address'],
    ]) {
      assert.deepEqual(await cniCode(b.add(req(conf({ datastore: url }), 'e', { IP: ip! }))), [
        101,
        `address ${ip} is not available: it is ${role} of block 10.50.9.0/26 (never handed out)`,
      ]);
    }
    assert.equal((await cniCode(b.add(req(conf({ datastore: url }), 'e', { IP: 'nope' }))))[0], 4);
    assert.equal((await cniCode(b.add(req(conf({ datastore: url }), 'e', { FOO: '1' }))))[0], 4);
    assert.equal((await cniCode(b.add(req(conf({ datastore: url }, { runtimeConfig: { ips: 'x' } }), 'e'))))[0], 7);
  });

  it('DEL is idempotent, CHECK verifies the prevResult, GC keeps only valid attachments', async () => {
    const url = await datastore();
    const c = conf({ datastore: url });
    const b = await createClusterBackend(c);
    const r = await b.add(req(c, 'c1'));
    await b.add(req(c, 'c2'));
    const withPrev = conf({ datastore: url }, { prevResult: { cniVersion: '1.0.0', ips: r.ips } });
    await b.check(req(withPrev, 'c1'));
    const wrong = conf({ datastore: url }, { prevResult: { cniVersion: '1.0.0', ips: [{ address: '10.50.255.255/16' }] } });
    assert.equal((await cniCode(b.check(req(wrong, 'c1'))))[0], 102);
    await b.del(req(c, 'c1'));
    await b.del(req(c, 'c1'));
    assert.equal((await cniCode(b.check(req(withPrev, 'c1'))))[0], 102);
    await b.gc(c, [{ containerId: 'c3', ifname: 'eth0' }]);
    const u = await new ClusterIpam(await openStore(url)).usage();
    assert.deepEqual(
      u.pools.map((p) => p.allocated),
      [0, 0],
      'GC released c2',
    );
  });

  it('maps failures to CNI codes: exhausted 100, no pool 7, STATUS 50', async () => {
    const url = `memory:cluster-backend-${++seq}`;
    const none = conf({ datastore: url });
    const b = await createClusterBackend(none);
    assert.equal((await cniCode(b.add(req(none, 'x'))))[0], 7);
    assert.equal((await cniCode(b.status(none)))[0], 50);
    await new ClusterIpam(await openStore(url)).createPool({ name: 'tiny', cidr: '10.60.0.0/30', blockSize: 30 });
    await b.status(none);
    assert.deepEqual((await b.add(req(none, 't0'))).ips, [{ address: '10.60.0.2/30', gateway: '10.60.0.1' }], 'a /30 block has one usable address');
    const [code, msg] = await cniCode(b.add(req(none, 'full')));
    assert.equal(code, 100);
    assert.match(msg, /no free IPv4 address for node "n1" in pools \[tiny\]: requested 1, found 0/);
  });

  it('refuses bad config with code 7 naming the field and value', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ datastore: 'mysql://x' }, /^ipam\.datastore "mysql:\/\/x": invalid datastore URL/],
      [{ datastore: 5 }, /^ipam\.datastore 5: must be a datastore URL string/],
      [{ datastore: 'memory:', nodeName: 'a/b' }, /^ipam\.nodeName "a\/b": invalid node name/],
      [{ datastore: 'memory:', pools: 'v4' }, /^ipam\.pools "v4": must be a non-empty array/],
      [{ datastore: 'memory:', pools: ['V4'] }, /^ipam\.pools\[0\] "V4"/],
      [{ datastore: 'memory:', cacheDir: 'rel' }, /^ipam\.cacheDir "rel": must be an absolute/],
      [{ datastore: 'memory:', routes: [{ dst: 'x' }] }, /^ipam\.routes\[0\]\.dst: invalid CIDR address "x"/],
      [{ datastore: 'memory:', subnets: [] }, /^ipam\.subnets \[\]: unknown key/],
    ];
    for (const [ipam, re] of cases) {
      const [code, msg] = await cniCode(createClusterBackend(conf(ipam)));
      assert.equal(code, 7, msg);
      assert.match(msg, re);
    }
  });
});

describe('cluster back end: placement annotations', () => {
  const pod = { namespace: 'shop', name: 'web-1', uid: 'u1' };
  /** The code the edge prints: the back end's CniError, or its typed error through the one table. */
  const tableCode = async (p: Promise<unknown>): Promise<[number, string]> => {
    try {
      await p;
    } catch (e) {
      const c = cniErrorOf(e);
      return [c.code, c.msg];
    }
    return [0, ''];
  };
  const annotated = (c: NetConf, id: string, podAnnotations?: Record<string, string>, args: Record<string, string> = {}): IpamRequest => ({
    ...req(c, id, args),
    pod,
    ...(podAnnotations ? { podAnnotations } : {}),
  });

  it("the runtime's pod annotations choose the pools over the configured ones, and name the pod on the handle", async () => {
    const url = await datastore();
    const c = conf({ datastore: url, pools: ['v4'] });
    const b = await createClusterBackend(c);
    const r = await b.add(annotated(c, 'a1', { 'podipam.io/pools': 'v6' }));
    assert.deepEqual(
      r.ips.map((x) => x.address.includes(':')),
      [true],
      'only the annotated v6 pool',
    );
    const plain = await b.add(annotated(c, 'a2'));
    assert.deepEqual(
      plain.ips.map((x) => x.address.includes(':')),
      [false],
      'without annotations: the configured v4 pool',
    );
    const s = await openStore(url);
    try {
      assert.deepEqual(
        (await new ClusterIpam(s).handlesOfPod('shop', 'web-1')).map((h) => h.handle),
        ['net:a1:eth0', 'net:a2:eth0'],
      );
    } finally {
      await s.close();
    }
  });

  it("in a host, the pod cache's namespace annotations apply when the runtime passed none (select-backend hands the cache over)", async () => {
    const { selectBackend } = await import('./select-backend.js');
    const c = conf({ datastore: await datastore() });
    const pods = { synced: true, pod: () => undefined, namespaceAnnotations: (ns: string) => (ns === 'shop' ? { 'podipam.io/pools': 'nosuch' } : undefined) };
    const b = await selectBackend(c, {}, { pods });
    const [code, msg] = await tableCode(b.add(annotated(c, 'h1')));
    assert.equal(code, 7);
    assert.equal(msg, 'annotation podipam.io/pools="nosuch" on namespace shop (pod shop/web-1): pool "nosuch" does not exist');
  });

  it('an annotation with an explicitly requested address is code 7 naming both; a malformed one is 7 naming annotation, pod and value', async () => {
    const c = conf({ datastore: await datastore() });
    const b = await createClusterBackend(c);
    const [code, msg] = await tableCode(b.add(annotated(c, 'x1', { 'podipam.io/ip': '10.50.0.9' }, { IgnoreUnknown: '1', IP: '10.50.0.10' })));
    assert.equal(code, 7);
    assert.match(msg, /^annotation podipam\.io\/ip="10\.50\.0\.9" on pod shop\/web-1: cannot be combined with the requested address\(es\) 10\.50\.0\.10/);
    const [code2, msg2] = await tableCode(b.add(annotated(c, 'x2', { 'cni.projectcalico.org/ipv4pools': 'blue' })));
    assert.equal(code2, 7);
    assert.match(msg2, /^annotation cni\.projectcalico\.org\/ipv4pools="blue" on pod shop\/web-1: not JSON/);
  });
  it("Cilium's and Spiderpool's annotations from the runtime choose pools like podipam's; Spiderpool's ippools by the call's interface", async () => {
    const c = conf({ datastore: await datastore(), pools: ['v4'] });
    const b = await createClusterBackend(c);
    const fam = (r: { ips: readonly { address: string }[] }) => r.ips.map((x) => (x.address.includes(':') ? 6 : 4));
    assert.deepEqual(fam(await b.add(annotated(c, 'c1', { 'ipam.cilium.io/ip-pool': 'v6' }))), [6], 'ip-pool instead of the configured pools');
    assert.deepEqual(fam(await b.add(annotated(c, 'c2', { 'ipam.cilium.io/ipv4-pool': 'v4', 'ipam.cilium.io/ipv6-pool': 'v6' }))), [4, 6]);
    const ippools = JSON.stringify([
      { interface: 'net1', ipv4: ['v4'] },
      { interface: 'eth0', ipv6: ['v*'] },
    ]);
    assert.deepEqual(fam(await b.add(annotated(c, 's1', { 'ipam.spidernet.io/ippools': ippools }))), [6], "eth0's entry: v* stands for v6 only");
    assert.deepEqual(fam(await b.add({ ...annotated(c, 's2', { 'ipam.spidernet.io/ippools': ippools }), ifname: 'net1' })), [4], "net1's entry");
    const [code, msg] = await tableCode(b.add(annotated(c, 's3', { 'ipam.spidernet.io/ippool': '{"ipv4":["nosuch"]}' })));
    assert.equal(code, 7);
    assert.equal(msg, 'annotation ipam.spidernet.io/ippool="{\\"ipv4\\":[\\"nosuch\\"]}" on pod shop/web-1: pool "nosuch" does not exist');
    const [code2, msg2] = await tableCode(b.add({ ...annotated(c, 's4', { 'ipam.spidernet.io/ippools': ippools }), ifname: 'net9' }));
    assert.equal(code2, 7);
    assert.match(msg2, /^annotation ipam\.spidernet\.io\/ippools=.* on pod shop\/web-1: names no entry for interface "net9"/);
    const [code3, msg3] = await tableCode(b.add(annotated(c, 'c3', { 'ipam.cilium.io/ip-pool': 'v6' }, { IgnoreUnknown: '1', IP: '10.50.0.10' })));
    assert.equal(code3, 7, 'with an explicitly requested address: code 7 naming both');
    assert.match(msg3, /^annotation ipam\.cilium\.io\/ip-pool="v6" on pod shop\/web-1: cannot be combined with the requested address/);
  });

  it("in a host, a namespace's Cilium or Spiderpool annotations from the pod cache apply to a pod without its own", async () => {
    const { selectBackend } = await import('./select-backend.js');
    const c = conf({ datastore: await datastore() });
    const nsAnn: Record<string, Record<string, string>> = {
      shop: { 'ipam.cilium.io/ip-pool': 'v6' },
      spider: { 'ipam.spidernet.io/default-ipv4-ippool': '["v4"]', 'ipam.spidernet.io/default-ipv6-ippool': '["v6"]' },
    };
    const pods = { synced: true, pod: () => undefined, namespaceAnnotations: (ns: string) => nsAnn[ns] };
    const b = await selectBackend(c, {}, { pods });
    const r = await b.add(annotated(c, 'n1'));
    assert.deepEqual(
      r.ips.map((x) => x.address.includes(':')),
      [true],
      "the namespace's ip-pool",
    );
    const r2 = await b.add({ ...annotated(c, 'n2'), pod: { namespace: 'spider', name: 'p-0' } });
    assert.deepEqual(
      r2.ips.map((x) => x.address.includes(':')),
      [false, true],
      "the namespace's Spiderpool defaults",
    );
    const r3 = await b.add(annotated(c, 'n3', { 'ipam.spidernet.io/ippool': '{"ipv4":["v4"]}' }));
    assert.deepEqual(
      r3.ips.map((x) => x.address.includes(':')),
      [false],
      "the pod's own annotation wins over its namespace's",
    );
  });
});

describe('cluster back end: the history stamp', () => {
  it('the per-pod plugin stamps its txns as the node; DEL "del", CNI GC "cni-gc"', async () => {
    const url = await datastore();
    const s = await openStore(url);
    const stamp = async () => {
      const { decodeStamp, stampKey } = await import('../cluster/records/history-stamp.js');
      const e = await s.get(stampKey('n1'));
      assert.ok(e, 'stamps/n1 written');
      return { ...decodeStamp(e.key, e.value), rev: e.rev };
    };
    const c = conf({ datastore: url, cacheDir: null });
    const b = await createClusterBackend(c);
    await b.add(req(c, 'c1'));
    assert.equal((await stamp()).why, undefined);
    await b.del(req(c, 'c1'));
    const d = await stamp();
    assert.equal(d.why, 'del');
    assert.equal(d.rev, await s.revision());
    await b.add(req(c, 'c2'));
    await b.gc(c, []);
    assert.equal((await stamp()).why, 'cni-gc');
  });
});
