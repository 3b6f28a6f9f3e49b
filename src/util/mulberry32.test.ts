import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mulberry32 } from './mulberry32.js';

test('mulberry32 replays the same sequence for a seed, in [0, 1), and differs across seeds', () => {
  const a = mulberry32(42);
  const b = mulberry32(42);
  const xs = Array.from({ length: 1000 }, () => a());
  assert.deepEqual(
    xs,
    Array.from({ length: 1000 }, () => b()),
  );
  assert.ok(xs.every((x) => x >= 0 && x < 1));
  assert.notDeepEqual(xs.slice(0, 10), Array.from({ length: 10 }, mulberry32(43)));
  // Roughly uniform: each tenth gets 5-15% of the draws.
  const buckets = new Array<number>(10).fill(0);
  for (const x of xs) buckets[Math.floor(x * 10)]!++;
  assert.ok(
    buckets.every((n) => n > 50 && n < 150),
    String(buckets),
  );
});
