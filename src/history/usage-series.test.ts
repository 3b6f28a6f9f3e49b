import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gridStep, usageSeries } from './usage-series.js';

test("usageSeries: walks back from the open count through each step's starts and ends", () => {
  // since 1000, step 100, 4 points: samples at 1000, 1100, …, 1400. Now 5 held.
  // Step 1 (1000, 1100]: 2 starts; step 3: 1 start, 1 end; step 4: 2 starts.
  const s = usageSeries(
    {
      open: 5,
      starts: new Map([
        [1, 2],
        [3, 1],
        [4, 2],
      ]),
      ends: new Map([[3, 1]]),
    },
    1000,
    100,
    4,
  );
  assert.deepEqual(s, [
    { at: 1000, used: 1 },
    { at: 1100, used: 3 },
    { at: 1200, used: 3 },
    { at: 1300, used: 3 },
    { at: 1400, used: 5 },
  ]);
});

test('usageSeries: changes past the grid (a writer clock ahead) are not yet held at its end', () => {
  const s = usageSeries(
    {
      open: 3,
      starts: new Map([
        [2, 1],
        [5, 1],
      ]),
      ends: new Map([[6, 1]]),
    },
    0,
    10,
    2,
  );
  assert.deepEqual(
    s.map((x) => x.used),
    [2, 2, 3],
  );
});

test('gridStep: a change exactly on a sample counts at that sample (from inclusive)', () => {
  assert.equal(gridStep(1100, 1000, 100), 1);
  assert.equal(gridStep(1101, 1000, 100), 2);
  assert.equal(gridStep(1001, 1000, 100), 1);
});

test('usageSeries: a step or point count that is not a positive integer is refused, naming it', () => {
  const c = { open: 0, starts: new Map(), ends: new Map() };
  assert.throws(() => usageSeries(c, 0, 0, 3), /step must be a positive integer of milliseconds: got 0/);
  assert.throws(() => usageSeries(c, 0, 10, 0.5), /points must be a positive integer: got 0.5/);
});
