import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseAddr } from './addr.js';
import { parsePrefix } from './prefix.js';
import { IpRangeSet, formatRange, rangeContains, rangeFromPrefix, rangeOf, rangeSize, rangesOverlap, rangeAddrs } from './range.js';

const r = (a: string, b: string) => rangeOf(parseAddr(a), parseAddr(b));

test('rangeOf refuses mixed families and reversed bounds', () => {
  assert.throws(() => rangeOf(parseAddr('10.0.0.1'), parseAddr('::1')), TypeError);
  assert.throws(() => r('10.0.0.2', '10.0.0.1'), RangeError);
  assert.equal(formatRange(r('10.0.0.1', '10.0.0.9')), '10.0.0.1-10.0.0.9');
});

test('ranges: contains, overlap, size, from a prefix, enumeration', () => {
  const x = r('10.0.0.10', '10.0.0.12');
  assert.ok(rangeContains(x, parseAddr('10.0.0.12')));
  assert.ok(!rangeContains(x, parseAddr('10.0.0.13')));
  assert.ok(rangesOverlap(x, r('10.0.0.12', '10.0.0.20')));
  assert.ok(!rangesOverlap(x, r('10.0.0.13', '10.0.0.20')));
  assert.equal(rangeSize(x), 3n);
  assert.equal(formatRange(rangeFromPrefix(parsePrefix('fd00::/126'))), 'fd00::-fd00::3');
  assert.equal([...rangeAddrs(x)].length, 3);
});

test('IpRangeSet merges overlapping and adjacent ranges per family and answers membership', () => {
  const s = new IpRangeSet([r('10.0.0.5', '10.0.0.9'), r('10.0.0.1', '10.0.0.4'), r('::1', '::2'), r('10.0.0.8', '10.0.0.20')]);
  assert.deepEqual(s.ranges.map(formatRange), ['10.0.0.1-10.0.0.20', '::1-::2']);
  assert.ok(s.contains(parseAddr('10.0.0.15')));
  assert.ok(!s.contains(parseAddr('10.0.0.21')));
  assert.ok(s.contains(parseAddr('::2')));
  assert.equal(s.size(), 22n);
  assert.ok(s.overlaps(r('10.0.0.20', '10.0.0.30')));
  assert.equal(s.add(r('10.0.0.21', '10.0.0.21')).ranges.length, 2);
});
