/**
 * ARCHITECTURE.md cannot drift from the tree: its "Layout of `src/`" table lists exactly the
 * folders and top-level source files of src/ (a new folder without a row, or a row for a folder
 * that is gone, fails here, naming it), and every `src/…` path the page names exists.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './helpers/plugin.js';

const PAGE = join(REPO_ROOT, 'ARCHITECTURE.md');
const SRC = join(REPO_ROOT, 'src');

/** The names in the first column of the table under the layout heading (`cluster/`, `main.ts`). */
function layoutRows(text: string): string[] {
  const start = text.indexOf('\n## Layout of `src/`');
  assert.ok(start >= 0, 'ARCHITECTURE.md has no "## Layout of `src/`" section');
  const section = text.slice(start + 1).split(/\n## /)[0] ?? '';
  const names: string[] = [];
  for (const line of section.split('\n')) {
    const first = /^\|([^|]*)\|/.exec(line)?.[1] ?? '';
    for (const m of first.matchAll(/`([^`]+)`/g)) names.push(m[1] ?? '');
  }
  return names;
}

function tree(): string[] {
  return readdirSync(SRC, { withFileTypes: true })
    .filter((e) => e.isDirectory() || (e.name.endsWith('.ts') && !e.name.endsWith('.test.ts')))
    .map((e) => (e.isDirectory() ? `${e.name}/` : e.name))
    .sort();
}

test('ARCHITECTURE.md: the layout table lists exactly the folders and top-level files of src/', () => {
  const listed = layoutRows(readFileSync(PAGE, 'utf8'));
  const actual = tree();
  assert.ok(actual.length > 10, `src/ holds only ${actual.length} entries`);
  const duplicated = listed.filter((n, i) => listed.indexOf(n) !== i);
  const unlisted = actual.filter((n) => !listed.includes(n));
  const gone = listed.filter((n) => !actual.includes(n));
  assert.deepEqual({ unlisted, gone, duplicated }, { unlisted: [], gone: [], duplicated: [] }, 'update the table in ARCHITECTURE.md');
});

test('ARCHITECTURE.md: the layout check tells a missing row and a stale row apart', () => {
  const page = '# x\n\n## Layout of `src/`\n\n| folder | what |\n|---|---|\n| `ip/` | a |\n| `gone/` | b |\n\n## Next\n\n| `later/` | c |\n';
  assert.deepEqual(layoutRows(page), ['ip/', 'gone/']);
});

test('ARCHITECTURE.md: every src/ path it names exists', () => {
  const text = readFileSync(PAGE, 'utf8');
  const paths = [...new Set([...text.matchAll(/\bsrc\/[\w./-]*[\w/-]/g)].map((m) => m[0]))];
  assert.ok(paths.length > 30, `only ${paths.length} src/ paths named`);
  const missing = paths.filter((p) => !existsSync(join(REPO_ROOT, p)));
  assert.deepEqual(missing, [], 'ARCHITECTURE.md names files that do not exist');
});
