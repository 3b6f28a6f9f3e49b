/**
 * No source file a reader cannot hold: every file under src/ that is not a test has at most
 * MAX_LINES lines. A file past it holds a second concept; split it by concept into small files
 * named after their export. OVER_TODAY names the files allowed over the limit, none past its size
 * today; an entry for a file that is back under the limit (or gone) fails too, so the list
 * only shrinks.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { REPO_ROOT } from './helpers/plugin.js';

const MAX_LINES = 450;

/** Files allowed over MAX_LINES for now, path under src/ → lines: none. */
const OVER_TODAY: Readonly<Record<string, number>> = {};

function walk(dir: string, out: string[]): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (/\.(ts|tsx|js|mjs)$/.test(name) && !/\.test\.(ts|tsx|js|mjs)$/.test(name)) out.push(p);
  }
  return out;
}

/** Lines as an editor counts them: a final newline does not start another line. */
export function lineCount(text: string): number {
  if (text === '') return 0;
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
}

test('lineCount counts lines as an editor does', () => {
  assert.equal(lineCount(''), 0);
  assert.equal(lineCount('a'), 1);
  assert.equal(lineCount('a\n'), 1);
  assert.equal(lineCount('a\nb\n'), 2);
  assert.equal(lineCount('a\n\nb'), 3);
});

test(`no source file under src/ (tests aside) has more than ${MAX_LINES} lines`, () => {
  const srcRoot = join(REPO_ROOT, 'src');
  const files = walk(srcRoot, []);
  assert.ok(files.length > 200, `only ${files.length} source files under src/: wrong root?`);
  const sizes = new Map(files.map((f) => [relative(srcRoot, f).split('\\').join('/'), lineCount(readFileSync(f, 'utf8'))]));
  const over = [...sizes]
    .filter(([f, n]) => n > MAX_LINES && n > (OVER_TODAY[f] ?? 0))
    .map(([f, n]) => `src/${f}: ${n} lines`)
    .sort();
  assert.deepEqual(over, [], `split these by concept (small files named after their export), or they stay over ${MAX_LINES} lines`);
  const settled = Object.keys(OVER_TODAY)
    .filter((f) => (sizes.get(f) ?? 0) <= MAX_LINES)
    .map((f) => `src/${f}: ${sizes.get(f) ?? 'gone'}`);
  assert.deepEqual(settled, [], 'these are no longer over the limit: drop them from OVER_TODAY (test/file-size.test.ts)');
});
