import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WorkQueue } from './work-queue.js';

test('work queue runs each key once at a time, at most `workers` at once, deduplicating', async () => {
  const seen: string[] = [];
  let active = 0;
  let peak = 0;
  const q = new WorkQueue({
    workers: 3,
    process: async (k) => {
      active++;
      peak = Math.max(peak, active);
      seen.push(k);
      await new Promise((r) => setTimeout(r, 5));
      active--;
    },
  });
  for (const k of ['a', 'b', 'a', 'c', 'd', 'e', 'b']) q.add(k);
  q.start();
  await q.idle();
  assert.deepEqual(seen, ['a', 'b', 'c', 'd', 'e']);
  assert.equal(peak, 3);
  // Added again while in flight: processed once more after.
  const again = new WorkQueue({
    process: async (k) => {
      seen.push(k);
      if (seen.length === 6) again.add(k);
    },
  });
  again.start();
  again.add('x');
  await again.idle();
  assert.deepEqual(seen.slice(5), ['x', 'x']);
});

test('work queue retries with exponential back-off, then gives up', async () => {
  const times: number[] = [];
  const gaveUp: [string, number][] = [];
  const q = new WorkQueue({
    maxRetries: 3,
    baseDelayMs: 10,
    process: async () => {
      times.push(performance.now());
      throw new Error('boom');
    },
    onGiveUp: (k, _e, n) => gaveUp.push([k, n]),
  });
  q.start();
  q.add('k');
  await q.idle();
  assert.equal(times.length, 4);
  assert.deepEqual(gaveUp, [['k', 4]]);
  const gaps = times.slice(1).map((t, i) => t - (times[i] as number));
  assert.ok(gaps[0]! >= 9 && gaps[1]! >= 19 && gaps[2]! >= 39, `back-off gaps ${gaps.map(Math.round).join(',')}`);
  assert.throws(() => new WorkQueue({ workers: 0, process: async () => {} }), /'workers' must be an integer ≥ 1: current value is 0/);
});

test('work queue stop cancels pending retries and waits for keys in flight', async () => {
  let finished = 0;
  const q = new WorkQueue({
    baseDelayMs: 10_000,
    process: async (k) => {
      if (k === 'fail') throw new Error('x');
      await new Promise((r) => setTimeout(r, 20));
      finished++;
    },
  });
  q.start();
  q.add('slow');
  q.add('fail');
  await new Promise((r) => setTimeout(r, 5));
  await q.stop();
  assert.equal(finished, 1);
  assert.equal(q.pending, 0);
});
