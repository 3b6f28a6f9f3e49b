import { test } from 'node:test';
import assert from 'node:assert/strict';
import { forecastUsage, leastSquaresSlope } from './forecast-usage.js';
import type { UsageSample } from './usage-series.js';

const HOUR = 3_600_000;
const line = (n: number, stepMs: number, from: number, per: number): UsageSample[] =>
  Array.from({ length: n }, (_, i) => ({ at: 1_700_000_000_000 + i * stepMs, used: from + i * per }));

test('forecastUsage: a steady fill of 10 addresses an hour with 50 left is full in 5 hours', () => {
  const s = line(61, HOUR / 10, 100, 1); // 6 h, one address every 6 minutes
  const now = s[s.length - 1]?.at ?? 0;
  const f = forecastUsage(s, { capacity: 210, allocated: 160, now });
  assert.equal(f.state, 'filling');
  assert.ok(Math.abs(f.ratePerHour - 10) < 1e-9, String(f.ratePerHour));
  assert.ok(Math.abs((f.secondsToFull ?? 0) - 5 * 3600) < 1e-6, String(f.secondsToFull));
  assert.equal(f.fullAt, now + 5 * HOUR);
});

test('forecastUsage: a quiet pool and a draining one are not filling', () => {
  const quiet = line(30, 60_000, 40, 0);
  assert.deepEqual(forecastUsage(quiet, { capacity: 100, allocated: 40, now: 0 }), { state: 'not-filling', ratePerHour: 0, secondsToFull: null, fullAt: null });
  const draining = forecastUsage(line(30, 60_000, 90, -1), { capacity: 100, allocated: 61, now: 0 });
  assert.equal(draining.state, 'not-filling');
  assert.ok(draining.ratePerHour < 0);
});

test('forecastUsage: a pool that fills and drains again within the window is not filling', () => {
  const up = line(30, 60_000, 0, 2);
  const down = line(31, 60_000, 58, -2).map((x) => ({ at: x.at + 30 * 60_000, used: x.used }));
  const f = forecastUsage([...up, ...down], { capacity: 64, allocated: 0, now: 0 });
  assert.equal(f.state, 'not-filling');
});

test('forecastUsage: filling only beyond the horizon counts as not filling (a large IPv6 pool)', () => {
  const s = line(10, HOUR, 0, 1);
  assert.equal(forecastUsage(s, { capacity: 2 ** 64, allocated: 9, now: 0 }).state, 'not-filling');
  assert.equal(forecastUsage(s, { capacity: 100, allocated: 9, now: 0, horizonMs: 10 * HOUR }).state, 'not-filling');
  assert.equal(forecastUsage(s, { capacity: 100, allocated: 9, now: 0, horizonMs: 100 * HOUR }).state, 'filling');
});

test('forecastUsage: full now is full whatever the trend; too little history is unknown', () => {
  assert.deepEqual(forecastUsage(line(5, 60_000, 10, -1), { capacity: 10, allocated: 10, now: 7 }).secondsToFull, 0);
  assert.equal(forecastUsage(line(5, 60_000, 10, -1), { capacity: 10, allocated: 10, now: 7 }).state, 'full');
  assert.equal(forecastUsage([], { capacity: 10, allocated: 1, now: 0 }).state, 'unknown');
  assert.equal(forecastUsage(line(2, 500, 0, 1), { capacity: 10, allocated: 1, now: 0 }).state, 'unknown', 'half a second is no trend');
});

test('leastSquaresSlope: fits the line through noisy samples at epoch times without losing precision', () => {
  const s = line(100, 1000, 5, 0.5).map((x, i) => ({ at: x.at, used: x.used + (i % 2 === 0 ? 1 : -1) }));
  const slope = leastSquaresSlope(s) ?? NaN;
  assert.ok(Math.abs(slope * 1000 - 0.5) < 0.01, String(slope));
  assert.equal(
    leastSquaresSlope([
      { at: 5, used: 1 },
      { at: 5, used: 2 },
    ]),
    undefined,
  );
});
