import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CRASH_POINT_NAMES, crashPointRefusal, parseCrashAt } from './crash-point.js';

test('PODIPAM_CRASH_AT parses names and hit counts, and refuses unknown names and bad counts naming the entry', () => {
  assert.deepEqual(
    [...parseCrashAt('local.add.reserved, cluster.gc.released@3,')],
    [
      ['local.add.reserved', 1],
      ['cluster.gc.released', 3],
    ],
  );
  assert.throws(() => parseCrashAt('local.add.reservd'), /PODIPAM_CRASH_AT "local.add.reservd": not <name>\[@<n>\] with a known crash point/);
  assert.throws(() => parseCrashAt('local.add.reserved@0'), /"local.add.reserved@0"/);
  assert.throws(() => parseCrashAt('local.add.reserved@x'), /"local.add.reserved@x"/);
});

test('a set PODIPAM_CRASH_AT is refused without PODIPAM_TEST_HOOKS=1, and when it names no known point', () => {
  assert.equal(crashPointRefusal({}), undefined);
  assert.equal(crashPointRefusal({ PODIPAM_CRASH_AT: '' }), undefined);
  assert.match(crashPointRefusal({ PODIPAM_CRASH_AT: 'local.lock.held' })!, /PODIPAM_TEST_HOOKS=1 is not: crash points are a test-only hook; refusing to run/);
  assert.match(crashPointRefusal({ PODIPAM_CRASH_AT: 'local.lock.held', PODIPAM_TEST_HOOKS: 'yes' })!, /refusing/);
  assert.match(crashPointRefusal({ PODIPAM_CRASH_AT: 'nope', PODIPAM_TEST_HOOKS: '1' })!, /"nope"/);
  assert.equal(crashPointRefusal({ PODIPAM_CRASH_AT: 'local.lock.held@2', PODIPAM_TEST_HOOKS: '1' }), undefined);
});

const here = fileURLToPath(new URL('.', import.meta.url));

function run(env: Record<string, string>): ReturnType<typeof spawnSync> {
  // Three hits of one point, printing after each: the output shows where the process died.
  const script = `const { crashPoint } = await import(${JSON.stringify(join(here, 'crash-point.js'))});
for (let i = 1; i <= 3; i++) { crashPoint('local.lock.held'); process.stdout.write('passed ' + i + '\\n'); }`;
  return spawnSync(process.execPath, ['--input-type=module', '-e', script], { env: { PATH: process.env.PATH, ...env }, encoding: 'utf8' });
}

test('an armed point SIGKILLs the process at its n-th hit; unarmed or without the flag it does nothing', () => {
  const at2 = run({ PODIPAM_CRASH_AT: 'local.lock.held@2', PODIPAM_TEST_HOOKS: '1' });
  assert.equal(at2.signal, 'SIGKILL');
  assert.equal(at2.stdout, 'passed 1\n');
  assert.match(String(at2.stderr), /crash point local.lock.held reached/);
  const other = run({ PODIPAM_CRASH_AT: 'local.gc.removed', PODIPAM_TEST_HOOKS: '1' });
  assert.equal(other.status, 0);
  assert.equal(other.stdout, 'passed 1\npassed 2\npassed 3\n');
  const noFlag = run({ PODIPAM_CRASH_AT: 'local.lock.held' });
  assert.equal(noFlag.status, 0, 'never honoured without the flag');
  assert.equal(noFlag.stdout, 'passed 1\npassed 2\npassed 3\n');
});

test('every listed crash point is called somewhere in src/ (the e2e test proves each is reached)', () => {
  const src = join(here, '..');
  const text: string[] = [];
  const walk = (d: string): void => {
    for (const n of readdirSync(d)) {
      const p = join(d, n);
      if (statSync(p).isDirectory()) walk(p);
      else if (n.endsWith('.js') && !n.endsWith('.test.js') && n !== 'crash-point.js') text.push(readFileSync(p, 'utf8'));
    }
  };
  walk(src);
  const all = text.join('\n');
  for (const name of CRASH_POINT_NAMES) assert.ok(all.includes(`'${name}'`) || all.includes(`"${name}"`), `${name} is listed but never called`);
});
