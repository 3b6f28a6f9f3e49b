import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseAddr } from './addr.js';
import {
  formatPrefix,
  parseCidr,
  parsePrefix,
  prefixContains,
  prefixContainsPrefix,
  prefixLast,
  prefixOverlaps,
  prefixSize,
  subPrefix,
  subPrefixIndex,
} from './prefix.js';

test('parseCidr keeps host bits; IPv4-mapped CIDRs become IPv4 with the length minus 96', () => {
  assert.deepEqual(parseCidr('10.1.2.3/8'), { addr: parseAddr('10.1.2.3'), len: 8 });
  assert.deepEqual(parseCidr('::ffff:10.0.0.0/104'), { addr: parseAddr('10.0.0.0'), len: 8 });
  for (const bad of ['10.0.0.0', '10.0.0.0/33', '10.0.0.0/-1', '10.0.0.0/08', 'x/8', '::/129', '10.0.0.0/']) {
    assert.throws(() => parseCidr(bad), TypeError, bad);
  }
});

test("parsePrefix rejects host bits with host-local's text unless not strict", () => {
  assert.throws(() => parsePrefix('10.9.0.5/24'), /Network has host bits set. For a subnet mask of length 24 the network address is 10.9.0.0/);
  assert.equal(formatPrefix(parsePrefix('10.9.0.5/24', { strict: false })), '10.9.0.0/24');
  assert.equal(formatPrefix(parsePrefix('FD00::/64')), 'fd00::/64');
});

test('prefix arithmetic: size, last, containment, overlap, sub-prefixes', () => {
  const p = parsePrefix('10.0.0.0/24');
  assert.equal(prefixSize(p), 256n);
  assert.deepEqual(prefixLast(p), parseAddr('10.0.0.255'));
  assert.ok(prefixContains(p, parseAddr('10.0.0.77')));
  assert.ok(!prefixContains(p, parseAddr('10.0.1.0')));
  assert.ok(!prefixContains(p, parseAddr('::')));
  assert.ok(prefixContainsPrefix(p, parsePrefix('10.0.0.128/25')));
  assert.ok(prefixOverlaps(parsePrefix('10.0.0.128/25'), p));
  assert.ok(!prefixOverlaps(parsePrefix('10.0.1.0/24'), p));
  assert.equal(formatPrefix(subPrefix(p, 26, 3n)), '10.0.0.192/26');
  assert.equal(subPrefixIndex(p, 26, parseAddr('10.0.0.200')), 3n);
  assert.throws(() => subPrefix(p, 26, 4n), RangeError);
  assert.equal(prefixSize(parsePrefix('fd00::/64')), 1n << 64n);
});
