import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { makeTempDir } from '../../test/helpers/tmp.js';
import type { HistoryBatch, HistoryDb } from './history-db.js';
import { formatSpan, parseWindow, poolForecasts } from './pool-forecasts.js';
import { openHistoryDb } from './sqlite-history-db.js';

const MIN = 60_000;
const T0 = 1_800_000_000_000;
let rev = 0;
const at = (m: number): number => T0 + m * MIN;
function apply(db: HistoryDb, b: Partial<HistoryBatch>, t: number): void {
  db.apply({ ends: b.ends ?? [], starts: b.starts ?? [], ...(b.gaps ? { gaps: b.gaps } : {}), position: { source: 'memory:', revision: ++rev, at: t } });
}

function withDb(fn: (db: HistoryDb) => void): void {
  const dir = makeTempDir('forecast');
  const db = openHistoryDb(join(dir.path, 'history.db'));
  try {
    fn(db);
  } finally {
    db.close();
    dir.remove();
  }
}

test('poolForecasts: a pool filled one address a minute from the real history file, a quiet one, and one the history never saw', () => {
  withDb((db) => {
    apply(
      db,
      { gaps: [{ from: 0, until: at(-100), cause: 'history began' }], starts: [{ address: '10.1.0.1', handle: 'q', pool: 'quiet', from: { at: at(-200) } }] },
      at(-100),
    );
    // 'fill': 120 pods, one a minute over the last two hours; 10 of them released a minute after their start, before the last hour.
    for (let i = 0; i < 120; i++) {
      apply(db, { starts: [{ address: `10.0.${i >> 8}.${i & 255}`, handle: `h${i}`, pool: 'fill', from: { at: at(-120 + i) } }] }, at(-120 + i));
    }
    for (let i = 0; i < 10; i++)
      apply(db, { ends: [{ address: `10.0.0.${i * 5}`, handle: `h${i * 5}`, until: { at: at(-119 + i * 5) }, why: 'del' }] }, at(-119 + i * 10));
    const now = at(0);
    const [fill, quiet, none] = poolForecasts(
      db,
      [
        { name: 'fill', capacity: 200, allocated: 110 },
        { name: 'quiet', capacity: 10, allocated: 1 },
        { name: 'none', capacity: 10, allocated: 0 },
      ],
      { now, windowMs: 60 * MIN, points: 60 },
    );
    assert.ok(fill && quiet && none);
    // The last hour: 60 samples a minute apart plus its start; the 60 starts of the hour and no end.
    assert.equal(fill.series.length, 61);
    assert.deepEqual(fill.series[0], { at: at(-60), used: 51 }); // 61 started by then (from inclusive), 10 ended
    assert.deepEqual(fill.series[60], { at: now, used: 110 });
    assert.equal(fill.forecast.state, 'filling');
    assert.ok(Math.abs(fill.forecast.ratePerHour - 60) < 1, String(fill.forecast.ratePerHour));
    assert.ok(Math.abs((fill.forecast.secondsToFull ?? 0) - 90 * 60) < 90, String(fill.forecast.secondsToFull)); // 90 left at 1/min
    assert.equal(fill.method.since, at(-60));
    assert.match(fill.method.text, /least-squares slope .* 61 samples over the last 1h; time to full/);
    assert.deepEqual(quiet.forecast, { state: 'not-filling', ratePerHour: 0, secondsToFull: null, fullAt: null });
    assert.ok(quiet.series.every((s) => s.used === 1));
    assert.ok(none.series.every((s) => s.used === 0));
  });
});

test('poolForecasts: the window starts after the latest gap inside it (the history knows nothing before)', () => {
  withDb((db) => {
    apply(db, { gaps: [{ from: 0, until: at(-10), cause: 'history began' }] }, at(-10));
    for (let i = 0; i < 10; i++) apply(db, { starts: [{ address: `10.0.0.${i}`, handle: `h${i}`, pool: 'p', from: { at: at(-9 + i) } }] }, at(-9 + i));
    const [p] = poolForecasts(db, [{ name: 'p', capacity: 40, allocated: 10 }], { now: at(0), windowMs: 360 * MIN });
    assert.ok(p);
    assert.equal(p.method.since, at(-10));
    assert.equal(p.method.windowMs, 360 * MIN);
    assert.match(p.method.text, /over the last 10m \(of 6h asked: history knows no more\)/);
    assert.equal(p.forecast.state, 'filling');
    assert.ok(Math.abs((p.forecast.secondsToFull ?? 0) - 30 * 60) < 0.15 * 30 * 60, String(p.forecast.secondsToFull));
    // A history that began just now: no trend yet.
    const [q] = poolForecasts(db, [{ name: 'p', capacity: 40, allocated: 10 }], { now: at(-10) });
    assert.equal(q?.forecast.state, 'unknown');
  });
});

test('poolForecasts: the shortest window (10 s) of a burst at 4 pods a second is sampled on the same grid and fits 4/s', () => {
  withDb((db) => {
    const now = at(0);
    apply(db, { gaps: [{ from: 0, until: now - 60_000, cause: 'history began' }] }, now - 60_000);
    for (let i = 0; i < 60; i++) {
      const t = now - 15_000 + i * 250;
      apply(db, { starts: [{ address: `10.2.0.${i}`, handle: `b${i}`, pool: 'burst', from: { at: t } }] }, t);
    }
    const [b] = poolForecasts(db, [{ name: 'burst', capacity: 100, allocated: 60 }], { now, windowMs: parseWindow('window', '10s') });
    assert.ok(b);
    // 10 s is no whole number of 60 ms steps: 59 steps of 167 ms, the window's start rounded up to the grid.
    assert.equal(b.method.stepMs, 167);
    assert.equal(b.series.length, 60);
    assert.equal(b.method.since, now - 59 * 167);
    assert.equal(b.forecast.state, 'filling');
    assert.ok(Math.abs(b.forecast.ratePerHour - 4 * 3600) < 0.02 * 4 * 3600, String(b.forecast.ratePerHour));
    assert.ok(Math.abs((b.forecast.secondsToFull ?? 0) - 10) < 0.5, String(b.forecast.secondsToFull)); // 40 left at 4/s
    assert.match(b.method.text, /60 samples over the last 10s; time to full/); // not "of 10s asked: history knows no more"
  });
});

test('parseWindow and formatSpan: the window names its parameter and bounds', () => {
  assert.equal(parseWindow('window', '6h'), 6 * 3_600_000);
  assert.equal(parseWindow('window', '90m'), 90 * MIN);
  assert.equal(parseWindow('window', '10s'), 10_000);
  assert.equal(parseWindow('window', '30s'), 30_000);
  assert.throws(() => parseWindow('window', '9s'), /window must be a duration from 10s to 30d such as 30m, 6h or 7d: got "9s"/);
  assert.throws(() => parseWindow('--window', '6 hours'), /--window must be a duration/);
  assert.throws(() => parseWindow('window', '31d'), /got "31d"/);
  assert.equal(formatSpan(90 * MIN), '1h30m');
  assert.equal(formatSpan(6 * 3_600_000), '6h');
  assert.equal(formatSpan(1500), '2s');
});
