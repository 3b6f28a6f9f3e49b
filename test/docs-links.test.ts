/**
 * The documentation holds together: every relative link in README.md, the top-level pages and
 * docs/**\/*.md names a file or folder that exists, and every `#anchor` one of its headings (or
 * `<a id>`); every fenced block whose info string is `sh runnable` runs, with `podipam` on PATH
 * (this checkout's bin/podipam), in a scratch directory that is also $HOME and $TMPDIR, and
 * exits 0. Mark only safe, fast commands runnable: no root, no network beyond loopback.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import { anchorsOf, linksOf, splitFences } from './helpers/markdown.js';
import { PODIPAM_BIN, REPO_ROOT } from './helpers/plugin.js';

const TOP_PAGES = ['README.md', 'ARCHITECTURE.md', 'HACKING.md', 'SECURITY.md', 'BENCHMARKS.md', 'bench/HISTORY.md'];

function markdownUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return markdownUnder(p);
    return e.name.endsWith('.md') ? [p] : [];
  });
}

function pages(): string[] {
  return [...TOP_PAGES.map((p) => join(REPO_ROOT, p)).filter((p) => existsSync(p)), ...markdownUnder(join(REPO_ROOT, 'docs'))];
}

/** The broken links of one page: `file:line: target (why)`. */
function brokenLinks(file: string): string[] {
  const read = (f: string): string => readFileSync(f, 'utf8');
  const problems: string[] = [];
  const text = read(file);
  const where = (line: number): string => `${relative(REPO_ROOT, file)}:${line}`;
  for (const { target, line } of linksOf(text)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:, …
    const [path = '', anchor] = target.split('#', 2);
    const dest = path === '' ? file : resolve(dirname(file), decodeURIComponent(path));
    if (!existsSync(dest)) {
      problems.push(`${where(line)}: ${target} (no such file)`);
      continue;
    }
    if (!dest.startsWith(REPO_ROOT)) problems.push(`${where(line)}: ${target} (outside the repository)`);
    if (anchor !== undefined && anchor !== '' && dest.endsWith('.md') && statSync(dest).isFile()) {
      if (!anchorsOf(read(dest)).has(anchor)) problems.push(`${where(line)}: ${target} (no heading #${anchor} in ${relative(REPO_ROOT, dest)})`);
    }
  }
  return problems;
}

test('docs links: a broken file, a broken anchor and a good link are told apart', () => {
  const dir = mkdtempSync(join(REPO_ROOT, '.docs-links-'));
  try {
    const page = join(dir, 'a.md');
    writeFileSync(
      page,
      '# A page\n\n## Two words\n\n[ok](#two-words) [bad](#three) [gone](missing.md) `[code](missing.md)`\n\n```\n[fenced](missing.md)\n```\n',
    );
    const found = brokenLinks(page);
    assert.equal(found.length, 2, found.join('\n'));
    assert.match(found[0] ?? '', /#three \(no heading/);
    assert.match(found[1] ?? '', /missing\.md \(no such file\)/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('docs links: every relative link and anchor in README.md, the top-level pages and docs/ resolves', () => {
  const all = pages();
  assert.ok(all.length > 20, `only ${all.length} pages found`);
  const problems = all.flatMap((f) => brokenLinks(f));
  assert.deepEqual(problems, [], `broken links:\n${problems.join('\n')}`);
});

test('docs index: every page of docs/ has its row in docs/README.md', () => {
  const docs = join(REPO_ROOT, 'docs');
  const index = readFileSync(join(docs, 'README.md'), 'utf8');
  const listed = new Set(linksOf(index).map((l) => l.target.split('#')[0]));
  const unlisted = readdirSync(docs).filter((f) => f.endsWith('.md') && f !== 'README.md' && !listed.has(f));
  assert.deepEqual(unlisted, [], 'add a row for each of these pages to the Tasks or Reference table of docs/README.md');
});

test('docs links: no page refers to a folder outside the repository', () => {
  const outside = pages()
    .filter((f) => /\.\.\/shared\b|\/work\//.test(readFileSync(f, 'utf8')))
    .map((f) => relative(REPO_ROOT, f));
  assert.deepEqual(outside, []);
});

test('docs commands: every fenced block marked `sh runnable` runs and exits 0', { timeout: 180_000 }, async () => {
  const blocks = pages().flatMap((f) =>
    splitFences(readFileSync(f, 'utf8'))
      .fences.filter((b) => /^(sh|bash|console)\s+runnable\b/.test(b.info))
      .map((b) => ({ ...b, file: relative(REPO_ROOT, f) })),
  );
  assert.ok(blocks.length > 0, 'no runnable block: README.md shows one');
  const failures: string[] = [];
  for (const b of blocks) {
    const scratch = mkdtempSync(join(tmpdir(), 'podipam-docs-'));
    try {
      mkdirSync(join(scratch, 'bin'));
      symlinkSync(PODIPAM_BIN, join(scratch, 'bin', 'podipam'));
      const env: NodeJS.ProcessEnv = {
        PATH: `${join(scratch, 'bin')}:${process.env['PATH'] ?? '/usr/bin:/bin'}`,
        HOME: scratch,
        TMPDIR: scratch,
        LANG: 'C.UTF-8',
      };
      await promisify(execFile)('bash', ['--norc', '--noprofile', '-euo', 'pipefail', '-c', b.body], {
        cwd: scratch,
        env,
        timeout: 60_000,
        maxBuffer: 16 << 20,
      }).catch((e: Error & { stderr?: string; code?: unknown }) => {
        failures.push(`${b.file}:${b.line}: exit ${String(e.code)}: ${(e.stderr ?? e.message).trim().split('\n').slice(-5).join(' | ')}`);
      });
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }
  assert.deepEqual(failures, [], `runnable blocks that failed:\n${failures.join('\n')}`);
});
