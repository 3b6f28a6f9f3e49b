import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { pause } from './pause.js';

test('pause: waits, returns at once on abort, leaves no abort listener behind', async () => {
  const ac = new AbortController();
  const t0 = Date.now();
  for (let i = 0; i < 20; i++) await pause(1, ac.signal);
  assert.equal(getEventListeners(ac.signal, 'abort').length, 0, 'a listener per round would leak');
  const slow = pause(10_000, ac.signal);
  ac.abort();
  await slow;
  assert.ok(Date.now() - t0 < 5_000);
  await pause(10_000, ac.signal); // already aborted: at once
});
