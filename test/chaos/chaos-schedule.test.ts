import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FAULT_KINDS, faultSchedule } from './chaos-schedule.js';

const spec = { seed: 42, totalMs: 600_000, faultMs: [2000, 3000], settleMs: [800, 1500], members: 3, nodes: 3 } as const;

test('the first faults of a schedule are every kind once; a long one adds random kinds after them', () => {
  const s = faultSchedule(spec);
  assert.ok(s.length > FAULT_KINDS.length, `${s.length} faults`);
  assert.deepEqual(
    s
      .slice(0, FAULT_KINDS.length)
      .map((f) => f.kind)
      .sort(),
    [...FAULT_KINDS].sort(),
  );
  assert.deepEqual(faultSchedule(spec), s, 'the same seed, the same schedule');
});

test('maxFaults caps the schedule however long it is: every kind once and no more', () => {
  const s = faultSchedule({ ...spec, maxFaults: FAULT_KINDS.length });
  assert.equal(s.length, FAULT_KINDS.length);
  assert.deepEqual(s.map((f) => f.kind).sort(), [...FAULT_KINDS].sort());
  assert.equal(faultSchedule({ ...spec, totalMs: 10_000, maxFaults: FAULT_KINDS.length }).length < FAULT_KINDS.length, true, 'the length still bounds it');
});
