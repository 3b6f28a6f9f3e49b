import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CALICO_SCENARIO_EXPECTED, calicoEtcdPairs, calicoKddList, calicoScenario } from '../../../test/helpers/calico-fixture.js';
import { parseCalicoEtcd } from './parse-calico-etcd.js';
import { parseCalicoKdd } from './parse-calico-kdd.js';

test('etcd v3 keys: the same plan as the KDD List of the same state, but for the source', () => {
  const s = calicoScenario({ withMalformed: true });
  const etcd = parseCalicoEtcd(calicoEtcdPairs(s));
  const kdd = parseCalicoKdd(calicoKddList(s), 'x');
  assert.equal(etcd.source, 'calico-etcd');
  assert.deepEqual(etcd.blocks, CALICO_SCENARIO_EXPECTED.blocks);
  assert.deepEqual(
    etcd.addresses.map((a) => [a.ip, a.block, a.holder.kind, a.holder.handle, a.holder.node, a.holder.namespace, a.holder.pod]),
    CALICO_SCENARIO_EXPECTED.addresses,
  );
  assert.deepEqual(etcd.addresses, kdd.addresses);
  assert.deepEqual(
    etcd.conflicts.map((c) => [c.kind, c.subject]),
    [
      ['invalid', '10.244.0.73'],
      ['invalid', '10.244.0.74'],
    ],
  );
  assert.deepEqual(
    etcd.pools.map((p) => p.source),
    ['/calico/resources/v3/projectcalico.org/ippools/default-ipv4-ippool', '/calico/resources/v3/projectcalico.org/ippools/default-ipv6-ippool'],
  );
});

test('etcd: another prefix; keys outside it are not read; an empty affinity value is confirmed', () => {
  const s = calicoScenario();
  const pairs = [
    ...calicoEtcdPairs(s, '/cluster2/calico'),
    ...calicoEtcdPairs({ pools: s.pools, blocks: [{ cidr: '10.244.3.0/26', node: 'x', allocs: [] }] }, '/calico'),
  ];
  const i = pairs.findIndex((p) => p.key === '/cluster2/calico/ipam/v2/host/node-a/ipv4/block/10.244.0.0-26');
  pairs[i] = { key: pairs[i]!.key, value: '' };
  const plan = parseCalicoEtcd(pairs, '/cluster2/calico/');
  assert.deepEqual(plan.blocks, CALICO_SCENARIO_EXPECTED.blocks);
  assert.deepEqual(plan.conflicts, []);
});

test('etcd: malformed keys and values are conflicts naming the key', () => {
  const pairs = [
    ...calicoEtcdPairs(calicoScenario()),
    { key: '/calico/ipam/v2/assignment/ipv4/block/10.244.5.0-26', value: '{"cidr":"10.244.6.0/26","affinity":null,"allocations":[],"attributes":[]}' },
    { key: '/calico/ipam/v2/assignment/ipv4/block/not-a-cidr', value: '{}' },
    { key: '/calico/ipam/v2/handle/k8s-pod-network.abc', value: '{"block":' },
    { key: '/calico/ipam/v2/host/node-a/ipv4/block/10.244.0.0-26/extra', value: '' },
    { key: '/calico/ipam/v2/host/node-a/ipv4/block/10.244.7.0-26', value: '{"state":"claimed"}' },
    { key: '/calico/resources/v3/projectcalico.org/ippools/broken', value: '{"kind":"IPPool","spec":{"cidr":"10.300.0.0/16"}}' },
  ];
  const plan = parseCalicoEtcd(pairs);
  assert.deepEqual(
    plan.conflicts.map((c) => c.subject),
    [
      '/calico/ipam/v2/assignment/ipv4/block/10.244.5.0-26',
      '/calico/ipam/v2/assignment/ipv4/block/not-a-cidr',
      '/calico/ipam/v2/handle/k8s-pod-network.abc',
      '/calico/ipam/v2/host/node-a/ipv4/block/10.244.0.0-26/extra',
      '/calico/ipam/v2/host/node-a/ipv4/block/10.244.7.0-26',
      '/calico/resources/v3/projectcalico.org/ippools/broken',
    ],
  );
  assert.match(plan.conflicts[0]!.detail, /cidr 10\.244\.6\.0\/26 does not match the key/);
  assert.match(plan.conflicts[2]!.detail, /the value is not JSON/);
  assert.match(plan.conflicts[4]!.detail, /state is "claimed"/);
  assert.match(plan.conflicts[5]!.detail, /spec\.cidr "10\.300\.0\.0\/16"/);
  assert.deepEqual(plan.blocks, CALICO_SCENARIO_EXPECTED.blocks);
});
