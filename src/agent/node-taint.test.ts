import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Taint, decideTaints, desiredTaints, exhaustedInTaints, nextExhausted } from './node-taint.js';

const now = new Date('2026-12-02T03:00:00.123Z');
const h = (v4: number, v6?: number): { family: 4 | 6; headroom: number }[] => [
  { family: 4, headroom: v4 },
  ...(v6 !== undefined ? [{ family: 6 as const, headroom: v6 }] : []),
];
const other: Taint = { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule', timeAdded: '2026-01-01T00:00:00Z' };
const dedicated: Taint = { key: 'dedicated', value: 'gpu', effect: 'NoExecute' };

test('the taint is set when a family reaches 0, with the value naming it, other taints kept in place', () => {
  const d = decideTaints([other, dedicated], h(0, 5), 4, now);
  assert.deepEqual([...d.exhausted], [4]);
  assert.deepEqual(d.taints, [other, dedicated, { key: 'podipam.io/ip-exhausted', value: 'ipv4', effect: 'NoSchedule', timeAdded: '2026-12-02T03:00:00Z' }]);
  // both families: one taint (one per key and effect is all the API server allows)
  const both = decideTaints(d.taints, h(0, 0), 4, now);
  assert.deepEqual(both.taints, [
    other,
    dedicated,
    { key: 'podipam.io/ip-exhausted', value: 'ipv4-ipv6', effect: 'NoSchedule', timeAdded: '2026-12-02T03:00:00Z' },
  ]);
  assert.deepEqual([...exhaustedInTaints(both.taints)].sort(), [4, 6]);
  // nothing to change: no write
  assert.equal(decideTaints(both.taints, h(0, 0), 4, now).taints, undefined);
  assert.equal(decideTaints([other], h(5), 4, now).taints, undefined);
  assert.equal(decideTaints([], [], 4, now).taints, undefined);
});

test('hysteresis: an exhausted family stays so below the threshold and clears at it; never flaps around 0', () => {
  let taints: Taint[] = [other];
  const seen: boolean[] = [];
  for (const v of [3, 0, 1, 2, 0, 1, 3, 4, 3, 1]) {
    const d = decideTaints(taints, h(v), 4, now);
    if (d.taints) taints = d.taints;
    seen.push(exhaustedInTaints(taints).has(4));
  }
  assert.deepEqual(seen, [false, true, true, true, true, true, true, false, false, false]);
  assert.deepEqual(taints, [other], 'cleared: only the other taint is left');
  // clearAt 1: back as soon as one address is free (still no flapping at 0 itself)
  assert.deepEqual([...nextExhausted(new Set([4]), h(1), 1)], []);
  assert.deepEqual([...nextExhausted(new Set([4]), h(0), 1)], [4]);
});

test('one family clears while the other stays; a family without a pool any more is not exhausted', () => {
  const start: Taint[] = [{ key: 'podipam.io/ip-exhausted', value: 'ipv4-ipv6', effect: 'NoSchedule' }, dedicated];
  const d = decideTaints(start, h(10, 2), 4, now);
  assert.deepEqual(d.taints, [{ key: 'podipam.io/ip-exhausted', value: 'ipv6', effect: 'NoSchedule', timeAdded: '2026-12-02T03:00:00Z' }, dedicated]);
  assert.deepEqual(decideTaints(start, h(2), 4, now).taints, [
    { key: 'podipam.io/ip-exhausted', value: 'ipv4', effect: 'NoSchedule', timeAdded: '2026-12-02T03:00:00Z' },
    dedicated,
  ]);
});

test("only podipam's taint is touched: the same key with another effect is someone else's; duplicates of ours are merged", () => {
  const noExec: Taint = { key: 'podipam.io/ip-exhausted', value: 'manual', effect: 'NoExecute' };
  assert.deepEqual(desiredTaints([noExec], new Set(), now), undefined);
  assert.deepEqual(desiredTaints([noExec], new Set([6]), now), [
    noExec,
    { key: 'podipam.io/ip-exhausted', value: 'ipv6', effect: 'NoSchedule', timeAdded: '2026-12-02T03:00:00Z' },
  ]);
  const dup: Taint[] = [
    { key: 'podipam.io/ip-exhausted', value: 'ipv4', effect: 'NoSchedule' },
    other,
    { key: 'podipam.io/ip-exhausted', value: 'ipv4', effect: 'NoSchedule' },
  ];
  assert.deepEqual(desiredTaints(dup, new Set([4]), now), [
    { key: 'podipam.io/ip-exhausted', value: 'ipv4', effect: 'NoSchedule', timeAdded: '2026-12-02T03:00:00Z' },
    other,
  ]);
  // a value podipam does not know (set by hand) names no family: cleared when nothing is exhausted
  assert.deepEqual(desiredTaints([{ key: 'podipam.io/ip-exhausted', value: 'x', effect: 'NoSchedule' }], new Set(), now), []);
});
