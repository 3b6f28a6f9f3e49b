import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CniError } from '../cni/errors.js';
import type { NetConf } from '../cni/types.js';
import { parseCniArgs } from '../cni/cni-args.js';
import { formatAddr } from '../ip/index.js';
import { formatRangeSet } from '../local/range-allocator.js';
import { LOCK_TIMEOUT_ENV, loadLocalConfig } from './local-conf.js';
import { configVersion, decodeConfig, toNetConf } from '../cni/net-conf.js';

function conf(ipam: Record<string, unknown>, extra: Record<string, unknown> = {}, cniVersion = '1.0.0'): NetConf {
  const raw = { cniVersion, name: 'net', ipam: { type: 'podipam', ...ipam }, ...extra };
  return { cniVersion, name: 'net', ipam: raw.ipam, raw, runtimeConfig: extra.runtimeConfig as never, args: extra.args as never };
}

async function fails(c: NetConf, code: number, msg: string | RegExp, args = '') {
  await assert.rejects(loadLocalConfig(c, parseCniArgs(args)), (e: unknown) => {
    assert.ok(e instanceof CniError, String(e));
    assert.equal(e.code, code, e.msg);
    if (typeof msg === 'string') assert.equal(e.msg, msg);
    else assert.match(e.msg, msg);
    return true;
  });
}

const sets = async (c: NetConf) => (await loadLocalConfig(c)).rangeSets.map(formatRangeSet);

test('range defaults: start network+1, end broadcast-1 (IPv4) or all-ones (IPv6), gateway network+1', async () => {
  const c = await loadLocalConfig(conf({ ranges: [[{ subnet: '10.1.0.0/24' }], [{ subnet: 'fd00:10:244:1::/64' }]] }));
  assert.deepEqual(c.rangeSets.map(formatRangeSet), ['10.1.0.1-10.1.0.254', 'fd00:10:244:1::1-fd00:10:244:1:ffff:ffff:ffff:ffff']);
  assert.equal(formatAddr(c.rangeSets[0]![0]!.gateway), '10.1.0.1');
  assert.equal(c.dataDir, '/var/lib/cni/networks');
  assert.equal(c.dir, '/var/lib/cni/networks/net');
});

test('range set order: runtimeConfig.ipRanges, then the legacy range, then ranges (reference case 32)', async () => {
  const c = conf(
    { subnet: '10.61.0.0/24', rangeStart: '10.61.0.5', gateway: '10.61.0.254', ranges: [[{ subnet: '10.62.0.0/24' }]] },
    { runtimeConfig: { ipRanges: [[{ subnet: '10.60.0.0/24' }]] } },
  );
  assert.deepEqual(await sets(c), ['10.60.0.1-10.60.0.254', '10.61.0.5-10.61.0.254', '10.62.0.1-10.62.0.254']);
  // A legacy rangeStart without subnet is ignored, as host-local does.
  assert.deepEqual(await sets(conf({ rangeStart: '10.0.0.9', ranges: [[{ subnet: '10.62.0.0/24' }]] })), ['10.62.0.1-10.62.0.254']);
});

test('host-local range errors, same texts (reference cases 22, 23, 29)', async () => {
  await fails(conf({ ranges: [[{ subnet: '10.9.0.0/31' }]] }), 7, 'invalid range set 0: Network 10.9.0.0/31 too small to allocate from');
  await fails(conf({ ranges: [[{ subnet: 'fd00::/127' }]] }), 7, 'invalid range set 0: Network fd00::/127 too small to allocate from');
  await fails(
    conf({ ranges: [[{ subnet: '10.9.0.5/24' }]] }),
    7,
    'invalid range set 0: Network has host bits set. For a subnet mask of length 24 the network address is 10.9.0.0',
  );
  await fails(conf({ ranges: [[{ subnet: '10.9.0.0/24' }, { subnet: 'fd00::/64' }]] }), 7, 'invalid range set 0: mixed address families');
  await fails(conf({ ranges: [[{ subnet: '10.9.0.0/24' }], [{ subnet: '10.9.0.0/25' }]] }), 7, 'range set 0 overlaps with 1');
  await fails(
    conf({ ranges: [[{ subnet: '10.9.0.0/24' }, { subnet: '10.9.0.0/25' }]] }),
    7,
    'invalid range set 0: subnets 10.9.0.1-10.9.0.254 and 10.9.0.1-10.9.0.126 overlap',
  );
  await fails(conf({ ranges: [] }), 7, 'no IP ranges specified');
  await fails(conf({}), 7, 'no IP ranges specified');
  await fails(conf({ ranges: [[]] }), 7, 'invalid range set 0: empty range set');
  await fails(
    conf({ ranges: [[{ subnet: '10.0.0.0/24', rangeStart: '10.0.1.1' }]] }),
    7,
    'invalid range set 0: RangeStart 10.0.1.1 not in network 10.0.0.0/24',
  );
  await fails(conf({ ranges: [[{ subnet: '10.0.0.0/24', rangeEnd: '10.0.0.0' }]] }), 7, 'invalid range set 0: RangeEnd 10.0.0.0 not in network 10.0.0.0/24');
  await fails(
    conf({ ranges: [[{ subnet: '10.0.0.0/24', rangeStart: '10.0.0.20', rangeEnd: '10.0.0.10' }]] }),
    7,
    'invalid range set 0: RangeStart 10.0.0.20 not in network 10.0.0.0/24',
  );
  await fails(
    conf({ ranges: [[{ subnet: '10.0.0.0/24', rangeStart: '10.0.0.255' }]] }),
    7,
    'invalid range set 0: RangeStart 10.0.0.255 is after RangeEnd 10.0.0.254',
  );
  await fails(
    conf({ ranges: [[{ subnet: '10.0.0.0/24' }], [{ subnet: '10.1.0.0/24' }]] }, {}, '0.2.0'),
    7,
    'CNI version 0.2.0 does not support more than 1 address per family',
  );
});

test('ill-typed values name the field and the value', async () => {
  await fails(conf({ ranges: [[{ subnet: 'foo' }]] }), 7, 'ipam.ranges[0][0].subnet: invalid CIDR address "foo"');
  await fails(conf({ ranges: [[{ subnet: 5 }]] }), 7, 'ipam.ranges[0][0].subnet: must be a CIDR string, got 5');
  await fails(conf({ ranges: [[{}]] }), 7, 'ipam.ranges[0][0].subnet: missing');
  await fails(conf({ ranges: [{ subnet: '10.0.0.0/24' }] }), 7, /^ipam.ranges\[0\]: must be an array of ranges/);
  await fails(conf({ ranges: 'x' }), 7, 'ipam.ranges: must be an array, got string "x"');
  await fails(conf({ ranges: [[{ subnet: '10.0.0.0/24', rangeStart: 'bar' }]] }), 7, 'ipam.ranges[0][0].rangeStart: invalid IP address "bar"');
  await fails(
    conf({ ranges: [[{ subnet: '10.0.0.0/24', gateway: 'fd00::1' }]] }),
    7,
    'ipam.ranges[0][0].gateway: fd00::1 is not an IPv4 address like subnet 10.0.0.0/24',
  );
  await fails(conf({ dataDir: 5, ranges: [[{ subnet: '10.0.0.0/24' }]] }), 7, 'ipam.dataDir: must be a string, got number 5');
  await fails(conf({ dataDir: 'rel/dir', ranges: [[{ subnet: '10.0.0.0/24' }]] }), 7, 'ipam.dataDir: "rel/dir" must be an absolute path');
  await fails(conf({ dataDir: '../x', ranges: [[{ subnet: '10.0.0.0/24' }]] }), 7, 'ipam.dataDir: "../x" must be an absolute path');
  await fails(conf({ routes: [{ gw: '10.0.0.1' }], ranges: [[{ subnet: '10.0.0.0/24' }]] }), 7, 'ipam.routes[0].dst: missing');
  await fails(
    conf({ routes: [{ dst: '0.0.0.0/0', mtu: 'x' }], ranges: [[{ subnet: '10.0.0.0/24' }]] }),
    7,
    'ipam.routes[0].mtu: must be an integer, got string "x"',
  );
  await fails(
    conf({ ranges: [[{ subnet: '10.0.0.0/24' }]] }, { runtimeConfig: { ipRanges: {} } }),
    7,
    'runtimeConfig.ipRanges: must be an array, got object {}',
  );
});

test('"" and null read as absent, keys match case-insensitively (as Go decodes host-local\'s structs)', async () => {
  assert.deepEqual(await sets(conf({ ranges: [[{ Subnet: '10.0.0.0/24', rangeStart: '', RANGEEND: '10.0.0.9', gateway: null }]] })), ['10.0.0.1-10.0.0.9']);
  assert.equal((await loadLocalConfig(conf({ dataDir: '', ranges: [[{ subnet: '10.0.0.0/24' }]] }))).dataDir, '/var/lib/cni/networks');
  assert.equal((await loadLocalConfig(conf({ dataDir: '/tmp/a/../b/', ranges: [[{ subnet: '10.0.0.0/24' }]] }))).dir, '/tmp/b/net');
});

test('routes are normalised as host-local re-prints them', async () => {
  const c = await loadLocalConfig(
    conf({
      ranges: [[{ subnet: '10.0.0.0/24' }]],
      routes: [{ dst: '0.0.0.0/0' }, { dst: '10.1.2.3/8', gw: '10.0.0.1' }, { dst: '0:0::0/0', gw: 'FD00::1', mtu: 1400, foo: 1 }],
    }),
  );
  assert.deepEqual(c.routes, [{ dst: '0.0.0.0/0' }, { dst: '10.1.2.3/8', gw: '10.0.0.1' }, { dst: '::/0', gw: 'fd00::1', mtu: 1400 }]);
});

test('requested addresses: CNI_ARGS IP, args.cni.ips, runtimeConfig.ips, canonical and de-duplicated', async () => {
  const c = await loadLocalConfig(
    conf(
      { ranges: [[{ subnet: '10.0.0.0/24' }]] },
      { args: { cni: { ips: ['10.0.0.7/24', 'FD00::0005'] } }, runtimeConfig: { ips: ['10.0.0.7', '10.0.0.8/24'] } },
    ),
    parseCniArgs('IgnoreUnknown=1;K8S_POD_NAME=x;IP=10.0.0.6'),
  );
  assert.deepEqual(c.requested.map(formatAddr), ['10.0.0.6', '10.0.0.7', 'fd00::5', '10.0.0.8']);
  await fails(conf({ ranges: [[{ subnet: '10.0.0.0/24' }]] }), 4, 'ARGS: unknown args ["K8S_POD_NAME=foo"]', 'K8S_POD_NAME=foo;IP=10.0.0.5');
  await fails(conf({ ranges: [[{ subnet: '10.0.0.0/24' }]] }), 4, 'ARGS: unknown args ["ip=10.0.0.5"]', 'ip=10.0.0.5');
  await fails(conf({ ranges: [[{ subnet: '10.0.0.0/24' }]] }), 4, 'ARGS: error parsing value of pair "IP=zzz": invalid IP address zzz', 'IP=zzz');
  await fails(conf({ ranges: [[{ subnet: '10.0.0.0/24' }]] }, { runtimeConfig: { ips: ['zzz'] } }), 7, 'runtimeConfig.ips[0]: invalid IP address "zzz"');
  await fails(conf({ ranges: [[{ subnet: '10.0.0.0/24' }]] }, { args: { cni: { ips: 'zzz' } } }), 7, 'args.cni.ips: must be an array, got string "zzz"');
  await fails(conf({ ranges: [[{ subnet: '10.0.0.0/24' }]] }, { args: { cni: { ips: [5] } } }), 7, 'args.cni.ips[0]: must be an IP address string, got 5');
  assert.deepEqual((await loadLocalConfig(conf({ ranges: [[{ subnet: '10.0.0.0/24' }]] }), parseCniArgs('IP='))).requested, []);
});

test('usePodCidr without datastore and nodeName is rejected with a clear message', async () => {
  await fails(conf({ ranges: [[{ subnet: 'usePodCidr' }]] }), 7, 'usePodCidr needs datastore and nodeName');
  await fails(conf({ subnet: 'usePodCidr' }), 7, 'usePodCidr needs datastore and nodeName');
  await fails(conf({ ranges: [[{ subnet: 'usePodCidr' }]], datastore: 'bogus:/x.db', nodeName: 'n1' }), 7, /ipam\.datastore/);
});

/** A config as the plugin's edge decodes stdin: with its text as `source`. */
function decoded(c: Record<string, unknown>): NetConf {
  const text = JSON.stringify(c);
  const raw = decodeConfig(text);
  return toNetConf(raw, configVersion(raw), text);
}

const base = { cniVersion: '1.0.0', name: 'cached', ipam: { type: 'podipam', dataDir: '/tmp/podipam-cache-test', ranges: [[{ subnet: '10.7.0.0/24' }]] } };

test('config cache: the same text (and CNI_ARGS) gives the same decoded config, frozen', async () => {
  const a = await loadLocalConfig(decoded(base), parseCniArgs('K8S_POD_NAME=a;IgnoreUnknown=1'));
  const b = await loadLocalConfig(decoded(base), parseCniArgs('K8S_POD_NAME=a;IgnoreUnknown=1'));
  assert.equal(a, b, 'decoded once');
  assert.ok(Object.isFrozen(a) && Object.isFrozen(a.rangeSets) && Object.isFrozen(a.rangeSets[0]![0]));
  assert.notEqual(await loadLocalConfig(conf(base.ipam)), await loadLocalConfig(conf(base.ipam)), 'a config without its text is decoded every time');
});

test('config cache: a changed config, CNI_ARGS or lock timeout is never served stale', async () => {
  const first = await loadLocalConfig(decoded(base));
  assert.deepEqual(first.rangeSets.map(formatRangeSet), ['10.7.0.1-10.7.0.254']);
  const other = await loadLocalConfig(decoded({ ...base, ipam: { ...base.ipam, ranges: [[{ subnet: '10.8.0.0/24' }]] } }));
  assert.deepEqual(other.rangeSets.map(formatRangeSet), ['10.8.0.1-10.8.0.254']);
  assert.equal((await loadLocalConfig(decoded({ ...base, name: 'cached2' }))).dir, '/tmp/podipam-cache-test/cached2');
  assert.equal((await loadLocalConfig(decoded({ ...base, ipam: { ...base.ipam, dataDir: '/tmp/other' } }))).dir, '/tmp/other/cached');
  const spaced = JSON.stringify(base, null, 1); // the same config in other bytes: decoded again, equal
  const raw = decodeConfig(spaced);
  assert.deepEqual(await loadLocalConfig(toNetConf(raw, configVersion(raw), spaced)), first);
  const withIp = await loadLocalConfig(decoded(base), parseCniArgs('IP=10.7.0.9'));
  assert.deepEqual(withIp.requested.map(formatAddr), ['10.7.0.9']);
  assert.deepEqual((await loadLocalConfig(decoded(base), parseCniArgs('IP=10.7.0.10'))).requested.map(formatAddr), ['10.7.0.10']);
  await fails(decoded(base), 4, /unknown args/i, 'FOO=1');
  const was = process.env[LOCK_TIMEOUT_ENV];
  process.env[LOCK_TIMEOUT_ENV] = '1234';
  try {
    assert.equal((await loadLocalConfig(decoded(base))).lockTimeoutMs, 1234);
  } finally {
    if (was === undefined) delete process.env[LOCK_TIMEOUT_ENV];
    else process.env[LOCK_TIMEOUT_ENV] = was;
  }
  assert.equal(await loadLocalConfig(decoded(base)), first, 'the first entry is still served for its own key');
});

test("config cache: different pods' calls share one decoded config; what CNI_ARGS decide is still decoded apart", async () => {
  const pod = (n: number, more = ''): ReturnType<typeof parseCniArgs> =>
    parseCniArgs(`IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=p${n};K8S_POD_INFRA_CONTAINER_ID=c${n}${more}`);
  const first = await loadLocalConfig(decoded(base), pod(1));
  assert.equal(await loadLocalConfig(decoded(base), pod(2)), first, "another pod's call (as containerd sends it): the same decoded config");
  // The same args without IgnoreUnknown are refused, whatever was decoded with it.
  await fails(decoded(base), 4, /unknown args \["K8S_POD_NAME=p3"\]/, 'K8S_POD_NAME=p3');
  const ip = await loadLocalConfig(decoded(base), pod(4, ';IP=10.7.0.44'));
  assert.deepEqual(ip.requested.map(formatAddr), ['10.7.0.44'], 'IP= is part of the key');
  assert.deepEqual((await loadLocalConfig(decoded(base), pod(5, ';IP=10.7.0.45'))).requested.map(formatAddr), ['10.7.0.45']);
  assert.deepEqual((await loadLocalConfig(decoded(base), pod(6))).requested, []);
});

test('config cache: a text with a \\u escape (which could spell usePodCidr) is decoded every time', async () => {
  const text = JSON.stringify(base).replace('"cached"', '"cach\\u0065d"');
  const raw = decodeConfig(text);
  assert.equal(raw.name, 'cached');
  const once = await loadLocalConfig(toNetConf(raw, configVersion(raw), text));
  assert.notEqual(await loadLocalConfig(toNetConf(raw, configVersion(raw), text)), once);
});
