/**
 * The disk probe of bench/cri.ts (bench/native/fsync-probe.c, built here with the machine's C
 * compiler): it samples only while resumed, at about its interval, and says so when it has
 * nothing to report or was given a bad interval.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startFsyncProbe } from './fsync-probe.js';

test('fsync probe: samples while resumed, none while paused, figures in order; never resumed: an error, not zeros', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'podipam-fsync-probe-'));
  try {
    const probe = await startFsyncProbe(dir, 50);
    await sleep(400); // paused from the start: nothing sampled
    probe.sample(true);
    await sleep(500); // ~10 samples at 50 ms plus the fsyncs' own time
    probe.sample(false);
    await sleep(600); // paused again: nothing more
    const f = await probe.stop();
    assert.ok(f.n >= 2 && f.n <= 11, `${f.n} samples in 500 ms at 50 ms`);
    assert.ok(f.p50 <= f.p90 && f.p90 <= f.p99 && f.p99 <= f.max, JSON.stringify(f));
    const idle = await startFsyncProbe(dir, 50);
    await sleep(200);
    await assert.rejects(idle.stop(), /no samples/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('fsync probe: an interval out of range is refused by name; kill() ends a running probe', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'podipam-fsync-probe-'));
  try {
    await assert.rejects(startFsyncProbe(dir, 0), /interval must be an integer 1-10000 ms, got 0/);
    const probe = await startFsyncProbe(dir, 20);
    probe.sample(true);
    probe.kill();
    await assert.rejects(probe.stop(), /fsync probe (ended before it was stopped|failed)/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
