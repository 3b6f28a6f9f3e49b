import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fullInText, trendText } from './pool-trends.js';

test('pool list -o wide: TREND and FULL-IN cells for each forecast state', () => {
  assert.equal(trendText({ state: 'filling', ratePerHour: 12.345, secondsToFull: 5400, fullAt: 1 }), '+12.3/h');
  assert.equal(fullInText({ state: 'filling', ratePerHour: 12.345, secondsToFull: 5400, fullAt: 1 }), '1h30m');
  assert.equal(trendText({ state: 'not-filling', ratePerHour: -3, secondsToFull: null, fullAt: null }), '-3/h');
  assert.equal(trendText({ state: 'not-filling', ratePerHour: 0.01, secondsToFull: null, fullAt: null }), '0/h');
  assert.equal(fullInText({ state: 'not-filling', ratePerHour: 0, secondsToFull: null, fullAt: null }), 'not filling');
  assert.equal(fullInText({ state: 'full', ratePerHour: 0, secondsToFull: 0, fullAt: 1 }), 'full');
  assert.deepEqual(
    [
      trendText({ state: 'unknown', ratePerHour: 0, secondsToFull: null, fullAt: null }),
      fullInText({ state: 'unknown', ratePerHour: 0, secondsToFull: null, fullAt: null }),
    ],
    ['?', 'unknown'],
  );
});
