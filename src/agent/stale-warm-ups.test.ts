import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { makeTempDir } from '../../test/helpers/tmp.js';
import { STALE_AFTER_MS, WARM_UP_DIR_PREFIX, sweepStaleWarmUps } from './stale-warm-ups.js';

const dir = makeTempDir('stale-warm-ups');
after(() => dir.remove());

/** A pid no process has: one above the kernel's largest. */
const deadPid = Number(readFileSync('/proc/sys/kernel/pid_max', 'utf8').trim()) + 1;

function warmUpDir(tmp: string, name: string, ageMs: number): void {
  const path = join(tmp, name);
  mkdirSync(join(path, 'data'), { recursive: true });
  writeFileSync(join(path, 'datastore-0.db'), 'x');
  const t = (Date.now() - ageMs) / 1000;
  utimesSync(path, t, t);
}

test('removes the warm-up directories of agents that are gone, and only those', () => {
  const tmp = join(dir.path, 'a');
  mkdirSync(tmp);
  const old = STALE_AFTER_MS + 60_000;
  warmUpDir(tmp, `${WARM_UP_DIR_PREFIX}${deadPid}-aaaaaa`, old); // gone: removed
  warmUpDir(tmp, `${WARM_UP_DIR_PREFIX}${deadPid}-young`, 60_000); // gone, but touched a minute ago: kept
  warmUpDir(tmp, `${WARM_UP_DIR_PREFIX}${process.pid}-livexx`, old); // its agent runs: kept
  warmUpDir(tmp, `${WARM_UP_DIR_PREFIX}1-initxx`, old); // pid 1 runs: kept
  warmUpDir(tmp, `${WARM_UP_DIR_PREFIX}nopid1`, old); // a name of the old form (no pid): kept
  warmUpDir(tmp, `other-${deadPid}-aaaaaa`, old); // not a warm-up's: kept
  writeFileSync(join(tmp, `${WARM_UP_DIR_PREFIX}${deadPid}-file`), 'not a directory');
  const swept = sweepStaleWarmUps(tmp);
  assert.deepEqual(swept, [`${WARM_UP_DIR_PREFIX}${deadPid}-aaaaaa`]);
  assert.deepEqual(
    readdirSync(tmp).sort(),
    [
      `${WARM_UP_DIR_PREFIX}${deadPid}-file`,
      `${WARM_UP_DIR_PREFIX}${deadPid}-young`,
      `${WARM_UP_DIR_PREFIX}1-initxx`,
      `${WARM_UP_DIR_PREFIX}nopid1`,
      `${WARM_UP_DIR_PREFIX}${process.pid}-livexx`,
      `other-${deadPid}-aaaaaa`,
    ].sort(),
  );
});

test('removes at most 32 a start, and nothing from a temporary directory it cannot read', () => {
  const tmp = join(dir.path, 'b');
  mkdirSync(tmp);
  for (let i = 0; i < 40; i++) warmUpDir(tmp, `${WARM_UP_DIR_PREFIX}${deadPid}-${String(i).padStart(6, '0')}`, STALE_AFTER_MS + 1000);
  assert.equal(sweepStaleWarmUps(tmp).length, 32);
  assert.equal(readdirSync(tmp).length, 8);
  assert.equal(sweepStaleWarmUps(tmp).length, 8, 'the rest at the next start');
  assert.deepEqual(sweepStaleWarmUps(join(dir.path, 'absent')), []);
});
