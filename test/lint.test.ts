/**
 * `npm test` lints: ESLint with typescript-eslint's type-aware rules (eslint.config.js) over
 * src/, test/, bench/ and scripts/, as `npm run lint` does. Errors fail the test with ESLint's
 * report; warnings (the rules the config marks TODO) are left to `npm run lint`. The cache
 * (.eslintcache, gitignored) makes a run after a small change take seconds, not a minute.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './helpers/plugin.js';

test('eslint reports no errors', () => {
  const bin = join(REPO_ROOT, 'node_modules', '.bin', 'eslint');
  assert.ok(existsSync(bin), `no ${bin}: run npm ci (eslint is a dev dependency)`);
  const r = spawnSync(bin, ['--quiet', '--cache', '--cache-location', '.eslintcache', '.'], { cwd: REPO_ROOT, encoding: 'utf8', maxBuffer: 64 << 20 });
  assert.equal(r.error, undefined, `eslint did not run: ${String(r.error)}`);
  assert.equal(r.status, 0, `eslint found errors (npm run lint shows them all):\n${r.stdout}${r.stderr}`);
});
