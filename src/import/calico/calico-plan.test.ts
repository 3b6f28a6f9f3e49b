import { test } from 'node:test';
import assert from 'node:assert/strict';
import { calicoKddList, type FxAlloc, type FxScenario } from '../../../test/helpers/calico-fixture.js';
import { cniHandleId } from '../../model/handle-id.js';
import { isWarmHandle } from '../../model/reserved-network.js';
import { type CalicoPlanOptions, planCalicoImport, tunnelHandle } from './calico-plan.js';
import { readCalicoKdd } from './parse-calico-kdd.js';

const plan = (s: FxScenario, o?: CalicoPlanOptions) => planCalicoImport('calico-kdd', readCalicoKdd(calicoKddList(s), 'x'), o);
const a = (ordinal: number, id: string, node: string): FxAlloc => ({ ordinal, handle: `k8s-pod-network.${id}`, namespace: 'ns', pod: id, node });

const FOUR_NODES: FxScenario = {
  pools: [{ name: 'calico-v4', cidr: '10.8.0.0/24', blockSize: 26, nodeSelector: 'all()' }],
  blocks: [
    { cidr: '10.8.0.0/26', node: 'n1', allocs: [a(3, 'c1', 'n1'), a(20, 'c2', 'n1')] },
    { cidr: '10.8.0.64/26', node: 'n1', allocs: [a(1, 'c3', 'n1')] },
    { cidr: '10.8.0.128/26', node: 'n2', allocs: [a(2, 'c4', 'n2')] },
    { cidr: '10.8.0.192/26', node: 'n3', allocs: [] },
  ],
};

test('the imported pool takes the Calico pool as it is; a block size of 0 is Calico default /26', () => {
  const p = plan({ ...FOUR_NODES, pools: [{ ...FOUR_NODES.pools[0]!, blockSize: 0 }] });
  assert.deepEqual(
    p.pools.map((x) => [x.name, x.cidr, x.blockSize, x.nodeSelector]),
    [['calico-v4', '10.8.0.0/24', 26, 'all()']],
  );
  // n3's block is empty: not carried over.
  assert.deepEqual(
    p.blocks.map((b) => [b.cidr, b.affinity]),
    [
      ['10.8.0.0/26', 'n1'],
      ['10.8.0.64/26', 'n1'],
      ['10.8.0.128/26', 'n2'],
    ],
  );
  assert.deepEqual(p.conflicts, []);
});

test('--pool-map onto an existing pool of smaller blocks: each Calico block splits, every part keeps its node', () => {
  const p = plan(FOUR_NODES, { poolMap: new Map([['calico-v4', 'pods']]), existingPools: [{ name: 'pods', cidr: '10.8.0.0/16', blockSize: 28 }] });
  assert.deepEqual(p.pools, []);
  assert.deepEqual(p.blocks, [
    { cidr: '10.8.0.0/28', pool: 'pods', affinity: 'n1' },
    { cidr: '10.8.0.16/28', pool: 'pods', affinity: 'n1' },
    { cidr: '10.8.0.64/28', pool: 'pods', affinity: 'n1' },
    { cidr: '10.8.0.128/28', pool: 'pods', affinity: 'n2' },
  ]);
  assert.deepEqual(
    p.addresses.map((x) => [x.ip, x.pool, x.block]),
    [
      ['10.8.0.3', 'pods', '10.8.0.0/28'],
      ['10.8.0.20', 'pods', '10.8.0.16/28'],
      ['10.8.0.65', 'pods', '10.8.0.64/28'],
      ['10.8.0.130', 'pods', '10.8.0.128/28'],
    ],
  );
});

test("--pool-map onto a pool of larger blocks: a block gathering one node's Calico blocks keeps it, one gathering addresses of two nodes' is unaffine", () => {
  const options = { poolMap: new Map([['calico-v4', 'wide']]), existingPools: [{ name: 'wide', cidr: '10.8.0.0/20', blockSize: 25 }] };
  // n3's Calico block is empty: it is not carried, so 10.8.0.128/25 holds only n2's addresses.
  assert.deepEqual(plan(FOUR_NODES, options).blocks, [
    { cidr: '10.8.0.0/25', pool: 'wide', affinity: 'n1' },
    { cidr: '10.8.0.128/25', pool: 'wide', affinity: 'n2' },
  ]);
  const busy = { ...FOUR_NODES, blocks: [...FOUR_NODES.blocks.slice(0, 3), { cidr: '10.8.0.192/26', node: 'n3', allocs: [a(9, 'c9', 'n3')] }] };
  const p = plan(busy, options);
  assert.deepEqual(p.blocks, [
    { cidr: '10.8.0.0/25', pool: 'wide', affinity: 'n1' },
    { cidr: '10.8.0.128/25', pool: 'wide', affinity: null },
  ]);
  assert.deepEqual(p.conflicts, []);
  assert.deepEqual(
    p.addresses.map((x) => [x.ip, x.block, x.holder.node]),
    [
      ['10.8.0.3', '10.8.0.0/25', 'n1'],
      ['10.8.0.20', '10.8.0.0/25', 'n1'],
      ['10.8.0.65', '10.8.0.0/25', 'n1'],
      ['10.8.0.130', '10.8.0.128/25', 'n2'],
      ['10.8.0.201', '10.8.0.128/25', 'n3'],
    ],
  );
});

test('--pool-map to a new name renames the pool; onto a pool that does not contain it is a pool-overlap conflict counting its addresses', () => {
  const renamed = plan(FOUR_NODES, { poolMap: new Map([['calico-v4', 'podnet']]) });
  assert.deepEqual(
    renamed.pools.map((x) => [x.name, x.cidr, x.source]),
    [['podnet', '10.8.0.0/24', 'ippools.crd.projectcalico.org calico-v4']],
  );
  assert.ok(renamed.addresses.every((x) => x.pool === 'podnet'));
  const outside = plan(FOUR_NODES, { poolMap: new Map([['calico-v4', 'other']]), existingPools: [{ name: 'other', cidr: '10.9.0.0/16', blockSize: 26 }] });
  assert.deepEqual(outside.addresses, []);
  assert.deepEqual(
    outside.conflicts.map((c) => [c.kind, c.subject]),
    [['pool-overlap', 'pool calico-v4']],
  );
  assert.match(outside.conflicts[0]!.detail, /10\.8\.0\.0\/24 is not inside podipam pool other \(10\.9\.0\.0\/16\).*its 4 allocated address/);
});

test('an existing podipam pool of the same CIDR is used as it is: its name and its block size', () => {
  const p = plan(FOUR_NODES, { existingPools: [{ name: 'already', cidr: '10.8.0.0/24', blockSize: 27 }] });
  assert.deepEqual(p.pools, []);
  assert.deepEqual(
    p.blocks.map((b) => [b.cidr, b.pool, b.affinity]),
    [
      ['10.8.0.0/27', 'already', 'n1'],
      ['10.8.0.64/27', 'already', 'n1'],
      ['10.8.0.128/27', 'already', 'n2'],
    ],
  );
});

test('node selectors: Calico == / != conjunctions are translated; others are a conflict and the pool is left out', () => {
  const sel = (nodeSelector: string) => plan({ ...FOUR_NODES, pools: [{ ...FOUR_NODES.pools[0]!, nodeSelector }] });
  assert.equal(sel('zone == \'a\' && kubernetes.io/os != "windows"').pools[0]!.nodeSelector, 'zone=a,kubernetes.io/os!=windows');
  const bad = sel("has(edge) || zone in {'a'}");
  assert.deepEqual(bad.pools, []);
  assert.deepEqual(bad.addresses, []);
  assert.deepEqual(
    bad.conflicts.map((c) => [c.kind, c.subject]),
    [['invalid', 'pool calico-v4']],
  );
  assert.match(bad.conflicts[0]!.detail, /nodeSelector "has\(edge\) \|\| zone in \{'a'\}": term .* is not label == 'value'/);
});

test('a Calico block size podipam refuses is a block-size conflict; two Calico pools onto one new name collide', () => {
  const small = plan({
    pools: [{ name: 'p32', cidr: '10.7.0.0/24', blockSize: 32, nodeSelector: '' }],
    blocks: [{ cidr: '10.7.0.5/32', node: 'n1', allocs: [a(0, 'c9', 'n1')] }],
  });
  assert.deepEqual(
    small.conflicts.map((c) => [c.kind, c.subject]),
    [['block-size', 'pool p32']],
  );
  const two = plan(
    { pools: [...FOUR_NODES.pools, { name: 'b', cidr: '10.9.0.0/24', blockSize: 26, nodeSelector: '' }], blocks: [] },
    { poolMap: new Map([['b', 'calico-v4']]) },
  );
  assert.deepEqual(
    two.conflicts.map((c) => [c.kind, c.subject]),
    [['pool-overlap', 'pool calico-v4']],
  );
});

test('an address outside every Calico pool, and one Calico handle for two pods, are invalid conflicts', () => {
  const p = plan({
    pools: FOUR_NODES.pools,
    blocks: [
      { cidr: '10.99.0.0/26', node: 'n1', allocs: [a(4, 'c1', 'n1')] },
      { cidr: '10.8.0.0/26', node: 'n1', allocs: [a(4, 'same', 'n1'), { ...a(5, 'same', 'n1'), pod: 'other' }] },
    ],
  });
  assert.deepEqual(
    p.conflicts.map((c) => [c.kind, c.subject]),
    [
      ['invalid', '10.8.0.5'],
      ['invalid', '10.99.0.4'],
    ],
  );
  assert.deepEqual(
    p.addresses.map((x) => x.ip),
    ['10.8.0.4'],
  );
});

test('tunnel handles can be no pod handle and are not warm handles', () => {
  const t = tunnelHandle('node-a.example.com', 'vxlan-v6');
  assert.equal(t, 'calico-tunnel@node-a.example.com:vxlan-v6');
  assert.equal(isWarmHandle(t), false);
  for (const [net, id, ifn] of [
    ['calico-tunnel@node-a.example.com', 'vxlan-v6', 'x'],
    ['calico-tunnel', 'node-a.example.com', 'vxlan-v6'],
    ['a@b', 'c@d', 'e@f'],
  ] as const) {
    const h = cniHandleId(net, id, ifn);
    assert.ok(!h.includes('@'), h);
    assert.notEqual(h, t);
  }
});
