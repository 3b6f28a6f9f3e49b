import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PLANTED_BUGS, plantedBugRefusal } from './planted-bug.js';

test('a set PODIPAM_PLANT_BUG is refused without PODIPAM_TEST_HOOKS=1, and when it names no known bug; unset or empty it is fine', () => {
  assert.equal(plantedBugRefusal({}), undefined);
  assert.equal(plantedBugRefusal({ PODIPAM_PLANT_BUG: '' }), undefined);
  assert.match(
    plantedBugRefusal({ PODIPAM_PLANT_BUG: 'assign-skips-block-cas' }) ?? '',
    /PODIPAM_PLANT_BUG="assign-skips-block-cas" is set but PODIPAM_TEST_HOOKS=1 is not/,
  );
  assert.match(
    plantedBugRefusal({ PODIPAM_PLANT_BUG: 'skip-all', PODIPAM_TEST_HOOKS: '1' }) ?? '',
    /PODIPAM_PLANT_BUG "skip-all": not a known planted bug \(assign-skips-block-cas, gate-skips-space-checks, warm-trust-blind\)/,
  );
  for (const name of Object.keys(PLANTED_BUGS)) assert.equal(plantedBugRefusal({ PODIPAM_PLANT_BUG: name, PODIPAM_TEST_HOOKS: '1' }), undefined);
});

const here = fileURLToPath(new URL('.', import.meta.url));

/** Which compares an assignment sends in a fresh process with `env`: the keys, in order. */
function comparedKeys(env: Record<string, string>): string[] {
  const script = `const { plantedCompares } = await import(${JSON.stringify(join(here, '..', 'cluster', 'gate', 'planted-compares.js'))});
const cs = [{ key: 'blocks/a', rev: 1 }, { key: 'handles/h', rev: 0 }, { key: 'blocks/b', rev: 2 }];
process.stdout.write(JSON.stringify(plantedCompares(cs).map((c) => c.key)));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { env: { PATH: process.env.PATH, ...env }, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as string[];
}

test('assign-skips-block-cas drops only the compares on blocks, and only when armed with the flag', () => {
  assert.deepEqual(comparedKeys({}), ['blocks/a', 'handles/h', 'blocks/b']);
  assert.deepEqual(comparedKeys({ PODIPAM_PLANT_BUG: 'assign-skips-block-cas' }), ['blocks/a', 'handles/h', 'blocks/b'], 'never without the flag');
  assert.deepEqual(comparedKeys({ PODIPAM_PLANT_BUG: 'assign-skips-block-cas', PODIPAM_TEST_HOOKS: '1' }), ['handles/h']);
});
