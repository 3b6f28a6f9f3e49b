/**
 * The operator schedule's checks can fail: with the write gate's checks switched off (the
 * test-only planted bug 'gate-skips-space-checks', src/util/planted-bug.ts) the schedule of
 * test/suites/operator-schedule.ts finds pools or blocks that overlap within a few seeded runs —
 * and with the gate on, the same seeds pass (operator-actions-random.test.ts runs them at random).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeTempDir } from '../helpers/tmp.js';

const here = fileURLToPath(new URL('.', import.meta.url));

/** Runs schedules of seeds 1..`seeds` (60 steps each) in a fresh process with `env`; what the first violation said, or 'none'. */
function firstViolation(dir: string, tag: string, seeds: number, env: Record<string, string>): string {
  const script = `const { openStore } = await import(${JSON.stringify(join(here, '..', '..', 'src', 'store', 'index.js'))});
const { runOperatorSchedule } = await import(${JSON.stringify(join(here, '..', 'suites', 'operator-schedule.js'))});
for (let seed = 1; seed <= ${seeds}; seed++) {
  const s = await openStore('sqlite:' + ${JSON.stringify(dir)} + '/' + ${JSON.stringify(tag)} + seed + '.db');
  try { await runOperatorSchedule(s, { seed, steps: 60, lose: 0.1 }); }
  catch (e) { process.stdout.write(e.message.split('\\n')[0]); process.exit(0); }
  finally { await s.close(); }
}
process.stdout.write('none');`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { env: { PATH: process.env.PATH, ...env }, encoding: 'utf8', timeout: 240_000 });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

test('with the write gate switched off the operator schedule finds overlapping pools or blocks; with it on, the same seeds pass', { timeout: 300_000 }, () => {
  const tmp = makeTempDir('operator-planted');
  try {
    const planted = firstViolation(tmp.path, 'planted', 5, { PODIPAM_PLANT_BUG: 'gate-skips-space-checks', PODIPAM_TEST_HOOKS: '1' });
    assert.match(planted, /(pools|blocks) \S+ and \S+ overlap: seed \d+/);
    const gated = firstViolation(tmp.path, 'gated', 3, {});
    assert.equal(gated, 'none');
  } finally {
    tmp.remove();
  }
});
