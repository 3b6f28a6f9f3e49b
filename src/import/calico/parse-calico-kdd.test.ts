import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CALICO_SCENARIO_EXPECTED, calicoKddList, calicoScenario, containerId } from '../../../test/helpers/calico-fixture.js';
import { CalicoSourceError, parseCalicoKdd, readCalicoKdd } from './parse-calico-kdd.js';

test('KDD List: pools, blocks with their nodes, pod and tunnel holders, dual-stack pods under one handle', () => {
  const plan = parseCalicoKdd(calicoKddList(calicoScenario()), 'calico.json');
  assert.equal(plan.source, 'calico-kdd');
  assert.deepEqual(plan.conflicts, []);
  assert.deepEqual(plan.pools, [
    {
      name: 'default-ipv4-ippool',
      cidr: '10.244.0.0/16',
      blockSize: 26,
      nodeSelector: 'all()',
      disabled: false,
      source: 'ippools.crd.projectcalico.org default-ipv4-ippool',
    },
    {
      name: 'default-ipv6-ippool',
      cidr: 'fd00:10:244::/64',
      blockSize: 122,
      nodeSelector: 'all()',
      disabled: false,
      source: 'ippools.crd.projectcalico.org default-ipv6-ippool',
    },
  ]);
  assert.deepEqual(plan.blocks, CALICO_SCENARIO_EXPECTED.blocks);
  assert.deepEqual(
    plan.addresses.map((a) => [a.ip, a.block, a.holder.kind, a.holder.handle, a.holder.node, a.holder.namespace, a.holder.pod]),
    CALICO_SCENARIO_EXPECTED.addresses,
  );
  const web = plan.addresses.filter((a) => a.holder.pod === 'web-1');
  assert.deepEqual(
    web.map((a) => a.ip),
    ['10.244.0.1', 'fd00:10:244::1'],
  );
  assert.deepEqual(web[0]!.holder, {
    kind: 'pod',
    handle: `k8s-pod-network:${containerId(1)}:eth0`,
    node: 'node-a',
    network: 'k8s-pod-network',
    containerId: containerId(1),
    ifname: 'eth0',
    namespace: 'default',
    pod: 'web-1',
    sourceHandle: `k8s-pod-network.${containerId(1)}`,
  });
  assert.deepEqual(web[1]!.holder, web[0]!.holder);
  assert.deepEqual(plan.addresses.find((a) => a.ip === '10.244.0.0')!.holder, {
    kind: 'node',
    handle: 'calico-tunnel@node-a:ipip',
    node: 'node-a',
    sourceHandle: 'ipip-tunnel-addr-node-a',
  });
});

test('KDD List: the same List always gives the same plan', () => {
  const text = calicoKddList(calicoScenario());
  assert.deepEqual(parseCalicoKdd(text, 'a'), parseCalicoKdd(text, 'a'));
});

test('KDD List: an allocation pointing outside the attributes, one without a handle, an unknown item and a broken record are conflicts; the rest is planned', () => {
  const list = JSON.parse(calicoKddList(calicoScenario({ withMalformed: true }))) as { items: unknown[] };
  list.items.push({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: {} });
  list.items.push({
    apiVersion: 'crd.projectcalico.org/v1',
    kind: 'IPAMBlock',
    metadata: { name: '10-244-9-0-26' },
    spec: { cidr: '10.244.9.0/26', affinity: 'host:node-a', allocations: 'nope', attributes: [] },
  });
  list.items.push({
    apiVersion: 'crd.projectcalico.org/v1',
    kind: 'BlockAffinity',
    metadata: { name: 'node-a-10-244-9-0-26' },
    spec: { cidr: '10.244.9.3/26', node: 'node-a', state: 'confirmed' },
  });
  const plan = parseCalicoKdd(JSON.stringify(list), 'calico.json');
  assert.deepEqual(
    plan.conflicts.map((c) => [c.kind, c.subject]),
    [
      ['invalid', '10.244.0.73'],
      ['invalid', '10.244.0.74'],
      ['invalid', 'blockaffinities.crd.projectcalico.org node-a-10-244-9-0-26'],
      ['invalid', 'ipamblocks.crd.projectcalico.org 10-244-9-0-26'],
      ['invalid', `items[${list.items.length - 3}]`],
    ],
  );
  assert.match(plan.conflicts[0]!.detail, /allocations\[9\] points at attributes\[42\], but the block has 5 attribute\(s\)/);
  assert.match(plan.conflicts[1]!.detail, /attributes\[4\] has no handle_id/);
  assert.match(plan.conflicts[2]!.detail, /spec\.cidr "10\.244\.9\.3\/26": .*host bits/);
  assert.match(plan.conflicts[3]!.detail, /spec\.allocations is "nope", not an array/);
  assert.match(plan.conflicts[4]!.detail, /kind "ConfigMap"/);
  // Everything else is planned as without the malformed records.
  assert.deepEqual(
    plan.addresses.map((a) => [a.ip, a.block, a.holder.kind, a.holder.handle, a.holder.node, a.holder.namespace, a.holder.pod]),
    CALICO_SCENARIO_EXPECTED.addresses,
  );
});

test('KDD: a pendingDeletion affinity leaves its block unaffine, a pending one keeps the node, an empty block is not carried, a deleted block with addresses is a conflict', () => {
  const text = calicoKddList({
    pools: [{ name: 'p', cidr: '10.1.0.0/24', blockSize: 26, nodeSelector: '' }],
    blocks: [
      {
        cidr: '10.1.0.0/26',
        node: 'n1',
        affinityState: 'pendingDeletion',
        allocs: [{ ordinal: 5, handle: 'k8s-pod-network.c1', namespace: 'a', pod: 'b', node: 'n1' }],
      },
      {
        cidr: '10.1.0.64/26',
        node: 'n2',
        affinityState: 'pending',
        allocs: [{ ordinal: 2, handle: 'k8s-pod-network.c3', namespace: 'a', pod: 'd', node: 'n2' }],
      },
      { cidr: '10.1.0.192/26', node: 'n3', allocs: [] },
      { cidr: '10.1.0.128/26', node: null, deleted: true, allocs: [{ ordinal: 1, handle: 'k8s-pod-network.c2', namespace: 'a', pod: 'c', node: 'n1' }] },
    ],
  });
  const plan = parseCalicoKdd(text, 'x');
  assert.deepEqual(plan.blocks, [
    { cidr: '10.1.0.0/26', pool: 'p', affinity: null },
    { cidr: '10.1.0.64/26', pool: 'p', affinity: 'n2' },
  ]);
  assert.deepEqual(
    plan.addresses.map((a) => [a.ip, a.holder.handle, a.holder.node]),
    [
      ['10.1.0.5', 'k8s-pod-network:c1:eth0', 'n1'],
      ['10.1.0.66', 'k8s-pod-network:c3:eth0', 'n2'],
    ],
  );
  assert.deepEqual(
    plan.conflicts.map((c) => [c.kind, c.subject]),
    [['invalid', 'ipamblocks.crd.projectcalico.org 10-1-0-128-26']],
  );
  assert.match(plan.conflicts[0]!.detail, /marked deleted but still holds 1 address/);
});

test('KDD: --network and --ifname shape the handle; a handle of another network is a conflict naming it', () => {
  const text = calicoKddList({
    pools: [{ name: 'p', cidr: '10.1.0.0/24', blockSize: 26, nodeSelector: 'all()' }],
    blocks: [
      {
        cidr: '10.1.0.0/26',
        node: 'n1',
        allocs: [
          { ordinal: 2, handle: 'net.v2.c1', namespace: 'a', pod: 'b', node: 'n1' },
          { ordinal: 3, handle: 'k8s-pod-network.c2', namespace: 'a', pod: 'c', node: 'n1' },
          { ordinal: 4, handle: 'my-handle', node: 'n1' },
        ],
      },
    ],
  });
  const plan = parseCalicoKdd(text, 'x', { networks: ['net', 'net.v2'], ifname: 'net1' });
  assert.deepEqual(
    plan.addresses.map((a) => [a.ip, a.holder.handle, a.holder.network, a.holder.containerId]),
    [['10.1.0.2', 'net.v2:c1:net1', 'net.v2', 'c1']],
  );
  assert.deepEqual(
    plan.conflicts.map((c) => c.subject),
    ['10.1.0.3', '10.1.0.4'],
  );
  assert.match(plan.conflicts[0]!.detail, /"k8s-pod-network\.c2" is neither <network>\.<containerID> for network "net\.v2" or "net"/);
});

test('KDD: a text that is not a List is refused naming the input', () => {
  assert.throws(
    () => readCalicoKdd('{"kind":"IPPool"}', 'pools.json'),
    (e: unknown) => e instanceof CalicoSourceError && /pools\.json is not a Kubernetes List/.test(e.message),
  );
  assert.throws(
    () => readCalicoKdd('not json', 'stdin'),
    (e: unknown) => e instanceof CalicoSourceError && /stdin is not JSON/.test(e.message),
  );
});

test('KDD: projectcalico.org/v3 objects are read as the CRDs', () => {
  const list = JSON.parse(calicoKddList(calicoScenario())) as { items: { apiVersion: string }[] };
  for (const item of list.items) item.apiVersion = 'projectcalico.org/v3';
  const plan = parseCalicoKdd(JSON.stringify(list), 'x');
  assert.deepEqual(plan.conflicts, []);
  assert.equal(plan.pools[0]!.source, 'ippools.projectcalico.org default-ipv4-ippool');
  assert.equal(plan.addresses.length, CALICO_SCENARIO_EXPECTED.addresses.length);
});
