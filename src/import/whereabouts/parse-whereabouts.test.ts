import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseWhereabouts, WhereaboutsFormatError } from './parse-whereabouts.js';
import { normalizedIp, normalizedRange, poolNamePrefix, reservationIp } from './whereabouts-names.js';
import { formatAddr, parseAddr } from '../../ip/index.js';
import { whereaboutsList } from '../../../test/helpers/whereabouts-fixture.js';

const API = 'whereabouts.cni.cncf.io/v1alpha1';

test('Whereabouts names: ranges and IPs as its Kubernetes back end writes them', () => {
  assert.equal(normalizedRange('10.0.0.0/24'), '10.0.0.0-24');
  assert.equal(normalizedRange('fd00::40/120'), 'fd00--40-120');
  assert.equal(normalizedIp(parseAddr('fd00::5')), 'fd00--5');
  assert.equal(normalizedIp(parseAddr('fd00::')), 'fd00--0');
  assert.equal(poolNamePrefix('10.0.0.0-24', '10.0.0.0/24'), '');
  assert.equal(poolNamePrefix('macvlan-10.0.0.0-24', '10.0.0.0/24'), 'macvlan');
  assert.equal(poolNamePrefix('renamed', '10.0.0.0/24'), undefined);
  assert.equal(formatAddr(reservationIp('fd00--5', [])!), 'fd00::5');
  assert.equal(formatAddr(reservationIp('abc-fd00--5', ['abc'])!), 'fd00::5');
  assert.equal(formatAddr(reservationIp('net1-10.0.0.9', ['net1'])!), '10.0.0.9');
  assert.equal(reservationIp('net2-10.0.0.9', ['net1']), undefined);
});

test('a literal IPPool: offsets count from the range, ifname defaults to eth0, podref splits', () => {
  const doc = {
    apiVersion: 'v1',
    kind: 'List',
    items: [
      {
        apiVersion: API,
        kind: 'IPPool',
        metadata: { name: 'net1-10.0.0.0-24', namespace: 'kube-system' },
        spec: { range: '10.0.0.0/24', allocations: { '5': { id: 'aaa', podref: 'default/web' }, '255': { id: 'bbb', podref: 'prod/db-0', ifname: 'net1' } } },
      },
      {
        apiVersion: API,
        kind: 'IPPool',
        metadata: { name: 'net1-fd00--40-120' },
        spec: { range: 'fd00::40/120', allocations: { '5': { id: 'aaa', podref: 'default/web', ifname: 'eth0' } } },
      },
    ],
  };
  const plan = parseWhereabouts(doc);
  assert.equal(plan.source, 'whereabouts');
  assert.deepEqual(plan.conflicts, []);
  // fd00::40/120 is not canonical: the pool is fd00::/120, and the offsets count from fd00::40 as Whereabouts does.
  assert.deepEqual(
    plan.pools.map((p) => [p.name, p.cidr, p.blockSize]),
    [
      ['net1-10.0.0.0-24', '10.0.0.0/24', 26],
      ['net1-fd00--40-120', 'fd00::/120', 122],
    ],
  );
  assert.deepEqual(
    plan.addresses.map((a) => [a.ip, a.block, a.holder.handle, a.holder.namespace, a.holder.pod]),
    [
      ['10.0.0.255', '10.0.0.192/26', 'net1:bbb:net1', 'prod', 'db-0'],
      ['10.0.0.5', '10.0.0.0/26', 'net1:aaa:eth0', 'default', 'web'],
      ['fd00::45', 'fd00::40/122', 'net1:aaa:eth0', 'default', 'web'],
    ],
  );
  assert.ok(plan.addresses.every((a) => a.holder.node === undefined && a.holder.kind === 'pod'));
  assert.ok(plan.blocks.every((b) => b.affinity === null));
});

test('dual-stack pods are one handle; --network overrides; reservations cross-check', () => {
  const pods = [
    { containerId: 'c1', podref: 'default/web-0', ifname: 'net1', ips: ['10.50.0.2', 'fd50::2'] },
    { containerId: 'c2', podref: 'prod/db-0', ips: ['10.50.0.70'] },
  ];
  const doc = whereaboutsList(
    [
      { range: '10.50.0.0/24', networkName: 'wbnet' },
      { range: 'fd50::/120', networkName: 'wbnet' },
    ],
    pods,
    [{ name: 'wbnet-10.50.0.9', spec: { containerid: 'c9', podref: 'default/ghost' } }],
  );
  const plan = parseWhereabouts(doc, { network: 'macvlan-conf', blockSize: { 4: 28 } });
  assert.deepEqual(
    plan.pools.map((p) => p.blockSize),
    [28, 122],
  );
  const handles = new Set(plan.addresses.filter((a) => a.holder.pod === 'web-0').map((a) => a.holder.handle));
  assert.deepEqual([...handles], ['macvlan-conf:c1:net1']);
  assert.equal(plan.addresses.find((a) => a.ip === '10.50.0.70')?.holder.handle, 'macvlan-conf:c2:eth0');
  // The reservation that no allocation lists is a conflict on its IP.
  assert.deepEqual(
    plan.conflicts.map((c) => [c.kind, c.subject]),
    [['invalid', '10.50.0.9']],
  );

  // A reservation naming another container for an allocated IP.
  const clash = whereaboutsList([{ range: '10.50.0.0/24' }], pods.slice(1), [{ name: '10.50.0.70', spec: { containerid: 'other', podref: 'prod/db-0' } }]);
  const p2 = parseWhereabouts(clash, { network: 'n' });
  assert.deepEqual(
    p2.conflicts.map((c) => [c.kind, c.subject]),
    [['invalid', '10.50.0.70']],
  );
  assert.match(p2.conflicts[0]!.detail, /container other/);
});

test('--pool maps ranges onto existing pools; without --network a pool needs a network-name prefix', () => {
  const doc = whereaboutsList([{ range: '10.50.0.0/24' }], [{ containerId: 'c1', podref: 'a/b', ips: ['10.50.0.3'] }]);
  assert.throws(
    () => parseWhereabouts(doc),
    (e: Error) => e instanceof WhereaboutsFormatError && /IPPool 10\.50\.0\.0-24 .*give --network/.test(e.message),
  );
  const plan = parseWhereabouts(doc, { network: 'n', pools: [{ from: '10.50.0.0/24', to: 'existing' }] });
  assert.deepEqual(plan.pools, []);
  assert.equal(plan.addresses[0]?.pool, 'existing');
});

test('malformed documents and records: errors name the item and field; bad records are conflicts', () => {
  const bad = (doc: unknown, re: RegExp): void =>
    assert.throws(
      () => parseWhereabouts(doc, { network: 'n' }),
      (e: Error) => e instanceof WhereaboutsFormatError && re.test(e.message),
      re.source,
    );
  bad([], /the document is \[\], not an object/);
  bad({ kind: 'List' }, /neither a List/);
  bad({ items: [{ apiVersion: 'v1', kind: 'IPPool', metadata: { name: 'x' }, spec: {} }] }, /items\[0\] \(IPPool x\): apiVersion "v1"/);
  bad({ items: [{ apiVersion: API, kind: 'NodeSlicePool', metadata: { name: 'x' }, spec: {} }] }, /kind "NodeSlicePool"/);
  bad({ items: [{ apiVersion: API, kind: 'IPPool', metadata: { name: 'x' }, spec: { range: '10.0.0.0' } }] }, /spec\.range "10\.0\.0\.0"/);
  bad(
    { items: [{ apiVersion: API, kind: 'IPPool', metadata: { name: 'x' }, spec: { range: '10.0.0.0/24', allocations: { '1': { podref: 'a/b' } } } }] },
    /allocations\["1"\]\.id is missing/,
  );
  const plan = parseWhereabouts(
    {
      items: [
        {
          apiVersion: API,
          kind: 'IPPool',
          metadata: { name: 'x' },
          spec: {
            range: '10.0.0.0/24',
            allocations: { '300': { id: 'a', podref: 'a/b' }, '07': { id: 'b', podref: 'a/b' }, '8': { id: 'c', podref: 'nopod' } },
          },
        },
      ],
    },
    { network: 'n' },
  );
  assert.deepEqual(
    plan.conflicts.map((c) => [c.kind, c.subject]),
    [
      ['invalid', '10.0.0.8'],
      ['invalid', 'x/300'],
      ['invalid', 'x/07'],
    ],
  );
  assert.deepEqual(plan.addresses, []);
});

test('one container and interface with two addresses of one family: every one is a conflict naming the container and all of them', () => {
  const pods = [
    // A leak: c1's eth0 holds two IPv4 addresses (one in each of two ranges), and one IPv6.
    { containerId: 'c1', podref: 'default/web-0', ips: ['10.50.0.2', '10.51.0.9', 'fd50::2'] },
    // The same container on another interface, and a dual-stack pod: no conflict.
    { containerId: 'c1', podref: 'default/web-0', ifname: 'net1', ips: ['10.50.0.3'] },
    { containerId: 'c2', podref: 'default/db-0', ips: ['10.50.0.4', 'fd50::4'] },
  ];
  const doc = whereaboutsList([{ range: '10.50.0.0/24' }, { range: '10.51.0.0/24' }, { range: 'fd50::/120' }], pods);
  const plan = parseWhereabouts(doc, { network: 'n' });
  assert.deepEqual(
    plan.conflicts.map((c) => [c.kind, c.subject]),
    [
      ['invalid', '10.50.0.2'],
      ['invalid', '10.51.0.9'],
    ],
  );
  for (const c of plan.conflicts) {
    assert.equal(
      c.detail,
      'container "c1" interface "eth0" has 2 IPv4 allocations, 10.50.0.2 (IPPool 10.50.0.0-24), 10.51.0.9 (IPPool 10.51.0.0-24): podipam holds one address per family for an attachment, and which one the pod uses is unknown (the others leaked); free the stale allocation in Whereabouts and export again',
    );
  }
  // Two allocations with one container id inside one range (the usual leak), same verdict.
  const one = parseWhereabouts(
    whereaboutsList([{ range: '10.50.0.0/24' }], [{ containerId: 'c7', podref: 'a/b', ifname: 'net2', ips: ['10.50.0.7', '10.50.0.70'] }]),
    { network: 'n' },
  );
  assert.deepEqual(
    one.conflicts.map((c) => c.subject),
    ['10.50.0.7', '10.50.0.70'],
  );
  assert.match(one.conflicts[0]!.detail, /^container "c7" interface "net2" has 2 IPv4 allocations, 10\.50\.0\.7 .*, 10\.50\.0\.70 /);
});

test('an ifname that is no Linux interface name is a conflict on its address naming the field and the value', () => {
  const allocations: Record<string, unknown> = {
    '1': { id: 'a', podref: 'a/b', ifname: 'net/1' },
    '2': { id: 'b', podref: 'a/b', ifname: 'x'.repeat(16) },
    '3': { id: 'c', podref: 'a/b', ifname: '..' },
    '4': { id: 'd', podref: 'a/b', ifname: 'eth 0' },
    '5': { id: 'e', podref: 'a/b', ifname: 'vlan:5' },
    '6': { id: 'f', podref: 'a/b', ifname: 'eth0.100' },
  };
  const plan = parseWhereabouts(
    { items: [{ apiVersion: API, kind: 'IPPool', metadata: { name: 'x' }, spec: { range: '10.0.0.0/24', allocations } }] },
    { network: 'n' },
  );
  assert.deepEqual(
    plan.addresses.map((a) => [a.ip, a.holder.ifname]),
    [['10.0.0.6', 'eth0.100']],
  );
  assert.deepEqual(
    plan.conflicts.map((c) => [c.subject, c.detail]),
    [
      [
        '10.0.0.1',
        'items[0] (IPPool x).spec.allocations["1"].ifname "net/1" contains "/", ":" or whitespace: not an interface name (1-15 bytes, no "/", ":" or whitespace, not "." or "..")',
      ],
      [
        '10.0.0.2',
        `items[0] (IPPool x).spec.allocations["2"].ifname "${'x'.repeat(16)}" is longer than 15 bytes: not an interface name (1-15 bytes, no "/", ":" or whitespace, not "." or "..")`,
      ],
      [
        '10.0.0.3',
        'items[0] (IPPool x).spec.allocations["3"].ifname ".." is "." or "..": not an interface name (1-15 bytes, no "/", ":" or whitespace, not "." or "..")',
      ],
      [
        '10.0.0.4',
        'items[0] (IPPool x).spec.allocations["4"].ifname "eth 0" contains "/", ":" or whitespace: not an interface name (1-15 bytes, no "/", ":" or whitespace, not "." or "..")',
      ],
      [
        '10.0.0.5',
        'items[0] (IPPool x).spec.allocations["5"].ifname "vlan:5" contains "/", ":" or whitespace: not an interface name (1-15 bytes, no "/", ":" or whitespace, not "." or "..")',
      ],
    ],
  );
});
