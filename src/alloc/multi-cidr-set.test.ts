import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatPrefix, parsePrefix, type Prefix } from '../ip/index.js';
import { MultiCidrSet } from './multi-cidr-set.js';

const p = (s: string): Prefix => parsePrefix(s);
const text = (x: Prefix | undefined): string | undefined => (x ? formatPrefix(x) : undefined);

test('multi cidr set fills its cluster CIDRs in order', () => {
  const set = new MultiCidrSet(4, 24, [p('10.0.0.0/23'), p('10.9.0.0/24')]);
  const got = [1, 2, 3, 4].map(() => text(set.allocateNext()));
  assert.deepEqual(got, ['10.0.0.0/24', '10.0.1.0/24', '10.9.0.0/24', undefined]);
  set.release(p('10.0.1.0/24'));
  assert.equal(text(set.allocateNext()), '10.0.1.0/24');
});

test('multi cidr set: a v6 /32 with /64 nodes exhausted, then grown by a second cluster CIDR', () => {
  const set = new MultiCidrSet(6, 64, [p('fd00::/32')]);
  // Everything used but two blocks, as if 2^32 − 2 nodes held a CIDR.
  set.occupy(p('fd00::/32'));
  set.release(p('fd00:0:1234:5678::/64'));
  set.release(p('fd00:0:ffff:ffff::/64'));
  assert.equal(set.size - set.used, 2n);
  assert.equal(text(set.allocateNext()), 'fd00:0:1234:5678::/64');
  assert.equal(text(set.allocateNext()), 'fd00:0:ffff:ffff::/64');
  assert.equal(set.allocateNext(), undefined);
  set.add(p('fd01::/32'));
  assert.equal(text(set.allocateNext()), 'fd01::/64');
  assert.equal(text(set.allocateNext()), 'fd01:0:0:1::/64');
  assert.equal(set.used, (1n << 32n) + 2n);
});

test('multi cidr set rejects overlapping or foreign cluster CIDRs, naming both', () => {
  const set = new MultiCidrSet(4, 24, [p('10.0.0.0/16')]);
  assert.throws(() => set.add(p('10.0.128.0/17')), /cluster CIDR 10.0.128.0\/17: it overlaps cluster CIDR 10.0.0.0\/16/);
  assert.throws(() => set.add(p('fd00::/48')), /IPv4 node-CIDR set: it is IPv6/);
  assert.throws(() => set.add(p('10.1.0.0/25')), /'nodeLen' must be an integer from 25 to 32: current value is 24/);
  assert.deepEqual(set.clusters.map(formatPrefix), ['10.0.0.0/16']);
});

test('multi cidr set applies exclusions to cluster CIDRs added later; occupy outside returns false', () => {
  const set = new MultiCidrSet(4, 24, [p('10.0.0.0/24')]);
  set.exclude(p('10.1.0.0/25'));
  set.add(p('10.1.0.0/23'));
  assert.equal(text(set.allocateNext()), '10.0.0.0/24');
  assert.equal(text(set.allocateNext()), '10.1.1.0/24');
  assert.equal(set.allocateNext(), undefined);
  assert.equal(set.occupy(p('192.168.0.0/24')), false);
  assert.equal(set.used, 3n);
});
