import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatPrefix, parsePrefix, type Prefix } from '../ip/index.js';
import { NodeCidrAllocator } from './node-cidr-allocator.js';

const p = (s: string): Prefix => parsePrefix(s);

test('node cidr allocator gives a dual-stack node one block per family, in cluster-CIDR order', () => {
  const a = new NodeCidrAllocator({ clusterCidrs: [p('fd00::/48'), p('10.0.0.0/16')], nodeMaskSize: { 4: 24, 6: 64 } });
  assert.deepEqual(a.families, [6, 4]);
  const r = a.proposeMissing([]);
  assert.ok(r.ok);
  assert.deepEqual(r.podCIDRs.map(formatPrefix), ['fd00::/64', '10.0.0.0/24']);
  // A node that already has its v6 block only gets a v4 one.
  const r2 = a.proposeMissing([p('fd00:0:0:7::/64')]);
  assert.ok(r2.ok);
  assert.deepEqual(r2.added.map(formatPrefix), ['10.0.1.0/24']);
  assert.deepEqual(r2.podCIDRs.map(formatPrefix), ['fd00:0:0:7::/64', '10.0.1.0/24']);
});

test('node cidr allocator is all or nothing when one family is exhausted', () => {
  const a = new NodeCidrAllocator({ clusterCidrs: [p('10.0.0.0/24'), p('fd00::/64')], nodeMaskSize: { 4: 24, 6: 64 } });
  assert.ok(a.proposeMissing([]).ok);
  const before = a.usage();
  const r = a.proposeMissing([]);
  assert.equal(r.ok, false);
  assert.equal(r.ok === false && r.family, 4);
  assert.deepEqual(a.usage(), before);
  a.addClusterCidr(p('10.0.1.0/24'));
  const r3 = a.proposeMissing([]);
  assert.equal(r3.ok, false, 'the v6 /64 holds one node block only');
  assert.equal(r3.ok === false && r3.family, 6);
  assert.equal(a.isUsed(p('10.0.1.0/24')), false);
});

test('node cidr allocator excludes the service CIDR and rejects a missing node mask', () => {
  const a = new NodeCidrAllocator({ clusterCidrs: [p('10.96.0.0/22')], nodeMaskSize: { 4: 24 }, excluded: [p('10.96.0.0/24'), p('fd00::/108')] });
  const r = a.proposeMissing([]);
  assert.ok(r.ok);
  assert.deepEqual(r.podCIDRs.map(formatPrefix), ['10.96.1.0/24']);
  assert.throws(() => new NodeCidrAllocator({ clusterCidrs: [p('fd00::/48')], nodeMaskSize: { 4: 24 } }), /fd00::\/48: no IPv6 node mask size/);
  assert.throws(() => new NodeCidrAllocator({ clusterCidrs: [], nodeMaskSize: {} }), /without a cluster CIDR/);
});
