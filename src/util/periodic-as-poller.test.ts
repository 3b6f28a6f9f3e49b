import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Periodic } from './periodic.js';
import { linesLog } from '../../test/helpers/lines-log.js';

// What the node-CIDR controller's resync loop (once controller/poller.ts) relies on.
test('Periodic as a poller: ticks one at a time, logs a repeated failure once and its recovery, stops cleanly', async () => {
  const log: string[] = [];
  let ticks = 0;
  let active = 0;
  let overlap = false;
  const p = new Periodic({
    name: 'node poll',
    intervalMs: 1,
    log: linesLog(log),
    task: async () => {
      overlap ||= active > 0;
      active++;
      ticks++;
      await new Promise((r) => setTimeout(r, 3));
      active--;
      if (ticks >= 2 && ticks <= 4) throw new Error('datastore down');
    },
  });
  p.start();
  for (let i = 0; i < 2000 && ticks < 6; i++) await new Promise((r) => setTimeout(r, 5));
  await p.stop();
  const after = ticks;
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(ticks, after, 'no tick after stop');
  assert.ok(ticks >= 6);
  assert.equal(overlap, false);
  assert.deepEqual(log, ['node poll failed (retrying every 1 ms): datastore down', 'node poll recovered']);
  assert.throws(() => new Periodic({ name: 'node poll', intervalMs: -1, task: async () => {} }), /intervalMs must be a number ≥ 0, got -1/);
});
