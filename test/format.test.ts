/**
 * `npm test` checks formatting: Prettier (.prettierrc, .prettierignore) over the tree, as
 * `npm run format:check` does. A file Prettier would change fails the test, naming the file;
 * `npm run format` fixes it. The cache (.prettiercache, gitignored, keyed by each file's content,
 * Prettier's version and options) skips files already seen formatted: a run after a small change
 * takes seconds, not a minute; a clean clone has none and checks every file.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './helpers/plugin.js';

test('prettier finds every file formatted', () => {
  const bin = join(REPO_ROOT, 'node_modules', '.bin', 'prettier');
  assert.ok(existsSync(bin), `no ${bin}: run npm ci (prettier is a dev dependency)`);
  const r = spawnSync(bin, ['--check', '--log-level', 'warn', '--cache', '--cache-location', '.prettiercache', '--cache-strategy', 'content', '.'], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  assert.equal(r.error, undefined, `prettier did not run: ${String(r.error)}`);
  assert.equal(r.status, 0, `files not formatted (npm run format fixes them):\n${r.stdout}${r.stderr}`);
});
