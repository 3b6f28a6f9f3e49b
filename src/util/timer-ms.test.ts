import { test } from 'node:test';
import assert from 'node:assert/strict';
import { timerMs } from './timer-ms.js';

test('timerMs: whole milliseconds from 1 to 2^31 - 1, rounded up', () => {
  assert.equal(timerMs(0), 1);
  assert.equal(timerMs(0.4), 1);
  assert.equal(timerMs(-5), 1);
  assert.equal(timerMs(Number.NaN), 1);
  assert.equal(timerMs(1), 1);
  assert.equal(timerMs(1.4), 2);
  assert.equal(timerMs(1.6), 2);
  assert.equal(timerMs(250), 250);
  assert.equal(timerMs(2 ** 40), 2 ** 31 - 1);
  assert.equal(timerMs(Number.POSITIVE_INFINITY), 2 ** 31 - 1);
});
