/**
 * The product under dist/src carries no test code: no compiled module other than a
 * `*.test.js` file imports node:test or node:assert (shared suites and helpers live under
 * test/), so nothing a user runs can depend on the test runner.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './helpers/plugin.js';

function walk(dir: string, out: string[]): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (name.endsWith('.js')) out.push(p);
  }
  return out;
}

test('no module under dist/src but a *.test.js imports node:test or node:assert', () => {
  const files = walk(join(REPO_ROOT, 'dist', 'src'), []);
  assert.ok(files.length > 50, `dist/src has only ${files.length} modules: was it built?`);
  const offenders = files
    .filter((f) => !f.endsWith('.test.js'))
    .filter((f) => /(?:from\s*|import\s*\(\s*)['"]node:(?:test|assert)(?:\/strict)?['"]/.test(readFileSync(f, 'utf8')));
  assert.deepEqual(
    offenders.map((f) => f.slice(REPO_ROOT.length)),
    [],
  );
});
