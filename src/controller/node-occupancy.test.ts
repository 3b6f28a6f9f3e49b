import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatPrefix, parsePrefix } from '../ip/index.js';
import { NodeOccupancy } from './node-occupancy.js';
import type { NodeRecord } from '../model/node-record.js';
import { linesLog } from '../../test/helpers/lines-log.js';
import { silentLog } from '../log/logger.js';

const config = { clusterCidrs: [parsePrefix('10.0.0.0/22')], nodeMaskSize: { 4: 24 } };
const rec = (name: string, podCIDRs: string[] = []): NodeRecord => ({ name, labels: {}, podCIDRs, createdAt: 'x' });

test('occupancy follows records: newer revisions only, changed CIDRs freed, vanished nodes freed', () => {
  const log: string[] = [];
  const o = new NodeOccupancy(config, linesLog(log));
  assert.equal(o.observe('a', 5, rec('a', ['10.0.1.0/24'])), false);
  assert.equal(o.observe('a', 4, rec('a', [])), false, 'an older read is ignored');
  assert.equal(o.observe('b', 6, rec('b')), true);
  o.observe('a', 7, rec('a', ['10.0.2.0/24']));
  assert.deepEqual(o.usage()[0], { family: 4, size: 4n, used: 1n });
  assert.deepEqual(o.vanish('a'), ['10.0.2.0/24']);
  assert.equal(o.usage()[0]?.used, 0n);
  o.observe('c', 8, rec('c', ['192.168.0.0/24', 'junk']));
  assert.ok(log.some((l) => l.includes('192.168.0.0/24 outside the cluster CIDRs 10.0.0.0/22')));
  assert.ok(log.some((l) => l.includes('skipping pod CIDR "junk" of node c')));
});

test('occupancy proposals stay used while in flight, through a rebuild, and are settled by outcome', () => {
  const o = new NodeOccupancy(config, silentLog);
  o.observe('a', 1, rec('a'));
  o.observe('b', 2, rec('b'));
  const pa = o.propose('a');
  assert.ok(pa?.ok);
  assert.deepEqual(pa.added.map(formatPrefix), ['10.0.0.0/24']);
  o.rebuild([]);
  const pb = o.propose('b');
  assert.ok(pb?.ok);
  assert.deepEqual(pb.added.map(formatPrefix), ['10.0.1.0/24'], "a's proposal survived the rebuild");
  // a lost its CIDR to a node of another controller: it stays used; b's write failed: freed.
  o.settle(pa.added, new Map([['10.0.0.0/24', 'other']]));
  o.settle(pb.added);
  assert.equal(o.usage()[0]?.used, 1n);
  assert.equal(o.releaseUnheld('10.0.0.0/24'), false, 'held by "other"');
  o.rebuild(['10.0.3.0/24']);
  assert.equal(o.usage()[0]?.used, 0n + 1n, 'only the claim remains after a rebuild');
});
