import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chownSync, closeSync, mkdirSync, readdirSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { makeTempDir } from '../../test/helpers/tmp.js';
import { STALE_AFTER_MS, WARM_UP_DIR_PREFIX, WARM_UP_LOCK, holdWarmUpLock, sweepStaleWarmUps } from './stale-warm-ups.js';

const dir = makeTempDir('stale-warm-ups');
after(() => dir.remove());

/** A warm-up directory `name` in `tmp`, untouched for `ageMs`, with its lock file unless `lock` is false. */
function warmUpDir(tmp: string, name: string, ageMs: number, lock = true): string {
  const path = join(tmp, name);
  mkdirSync(join(path, 'data'), { recursive: true });
  writeFileSync(join(path, 'datastore-0.db'), 'x');
  if (lock) writeFileSync(join(path, WARM_UP_LOCK), '');
  const t = (Date.now() - ageMs) / 1000;
  utimesSync(path, t, t);
  return path;
}

test('removes the directories of warm-ups that are gone (lock free, untouched for 10 minutes), and only those', () => {
  const tmp = join(dir.path, 'a');
  mkdirSync(tmp);
  const old = STALE_AFTER_MS + 60_000;
  warmUpDir(tmp, `${WARM_UP_DIR_PREFIX}deadxx`, old); // its lock free: removed
  warmUpDir(tmp, `${WARM_UP_DIR_PREFIX}nolock`, old, false); // killed before its lock, or an older agent's: removed
  warmUpDir(tmp, `${WARM_UP_DIR_PREFIX}youngx`, 60_000); // touched a minute ago: kept
  // A running warm-up's (in a container every agent is pid 1: the lock decides, not the pid).
  const live = warmUpDir(tmp, `${WARM_UP_DIR_PREFIX}livexx`, old);
  const fd = holdWarmUpLock(live);
  const t = (Date.now() - old) / 1000;
  utimesSync(live, t, t);
  warmUpDir(tmp, `other-deadxx`, old); // not a warm-up's: kept
  writeFileSync(join(tmp, `${WARM_UP_DIR_PREFIX}file`), 'not a directory');
  // A link named like one, to a dead warm-up's directory elsewhere: neither followed nor removed.
  const elsewhere = warmUpDir(dir.path, 'elsewhere', old);
  symlinkSync(elsewhere, join(tmp, `${WARM_UP_DIR_PREFIX}linkxx`));
  // Another user's: kept.
  chownSync(warmUpDir(tmp, `${WARM_UP_DIR_PREFIX}otheru`, old), 12345, 12345);
  utimesSync(join(tmp, `${WARM_UP_DIR_PREFIX}otheru`), t, t);
  try {
    const swept = sweepStaleWarmUps(tmp);
    assert.deepEqual(swept.sort(), [`${WARM_UP_DIR_PREFIX}deadxx`, `${WARM_UP_DIR_PREFIX}nolock`]);
    assert.deepEqual(
      readdirSync(tmp).sort(),
      [
        `${WARM_UP_DIR_PREFIX}file`,
        `${WARM_UP_DIR_PREFIX}linkxx`,
        `${WARM_UP_DIR_PREFIX}livexx`,
        `${WARM_UP_DIR_PREFIX}otheru`,
        `${WARM_UP_DIR_PREFIX}youngx`,
        'other-deadxx',
      ].sort(),
    );
    assert.deepEqual(readdirSync(elsewhere).sort(), ['data', 'datastore-0.db', WARM_UP_LOCK].sort(), "the link's target is untouched");
  } finally {
    closeSync(fd);
  }
  // Its warm-up gone (the lock let go with it), the directory goes at the next start.
  assert.deepEqual(sweepStaleWarmUps(tmp), [`${WARM_UP_DIR_PREFIX}livexx`]);
});

test("a lock that is a FIFO or a link is no running warm-up's: removed, without waiting on the FIFO", () => {
  const tmp = join(dir.path, 'c');
  mkdirSync(tmp);
  const old = STALE_AFTER_MS + 60_000;
  const fifo = warmUpDir(tmp, `${WARM_UP_DIR_PREFIX}fifoxx`, old, false);
  execFileSync('mkfifo', [join(fifo, WARM_UP_LOCK)]);
  const link = warmUpDir(tmp, `${WARM_UP_DIR_PREFIX}linklk`, old, false);
  symlinkSync('/etc/hostname', join(link, WARM_UP_LOCK));
  for (const d of [fifo, link]) {
    const t = (Date.now() - old) / 1000;
    utimesSync(d, t, t);
  }
  assert.deepEqual(sweepStaleWarmUps(tmp).sort(), [`${WARM_UP_DIR_PREFIX}fifoxx`, `${WARM_UP_DIR_PREFIX}linklk`]);
});

test('removes at most 32 a start, and nothing from a temporary directory it cannot read', () => {
  const tmp = join(dir.path, 'b');
  mkdirSync(tmp);
  for (let i = 0; i < 40; i++) warmUpDir(tmp, `${WARM_UP_DIR_PREFIX}${String(i).padStart(6, '0')}`, STALE_AFTER_MS + 1000);
  assert.equal(sweepStaleWarmUps(tmp).length, 32);
  assert.equal(readdirSync(tmp).length, 8);
  assert.equal(sweepStaleWarmUps(tmp).length, 8, 'the rest at the next start');
  assert.deepEqual(sweepStaleWarmUps(join(dir.path, 'absent')), []);
});
