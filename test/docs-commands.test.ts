/**
 * Every CLI command is explained on a task page: each leaf command of `buildProgram()` (e.g.
 * `podipam ipam reserve`) must appear in README.md or a hand-written page of docs/ as `podipam
 * <path>` — the words of the path in order, its options or arguments may follow. The generated
 * reference (docs/cli.md) does not count: a command added without a word in the task pages fails
 * here, naming it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { buildProgram } from '../src/cli/index.js';
import { REPO_ROOT } from './helpers/plugin.js';

function leaves(c: Command, path: string[] = []): string[][] {
  const subs = c.commands.filter((s) => !(s as unknown as { _hidden?: boolean })._hidden);
  if (subs.length === 0) return [path];
  return subs.flatMap((s) => leaves(s, [...path, s.name()]));
}

const GENERATED = new Set(['cli.md', 'http-api.md', 'metrics.md']);

test('the task pages name every CLI command (podipam <command> [<subcommand>])', () => {
  const docs = join(REPO_ROOT, 'docs');
  const pages = readdirSync(docs).filter((f) => f.endsWith('.md') && !GENERATED.has(f));
  assert.ok(pages.length > 10, `only ${pages.length} pages in docs/`);
  const readme = [join(REPO_ROOT, 'README.md'), ...pages.map((f) => join(docs, f))].map((f) => readFileSync(f, 'utf8')).join('\n');
  const all = leaves(buildProgram());
  assert.ok(all.length > 20, `only ${all.length} commands found: is buildProgram() the whole CLI?`);
  const missing = all
    .map((p) => `podipam ${p.join(' ')}`)
    .filter((cmd) => !new RegExp(`${cmd.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&')}(?![\\w-])`).test(readme));
  assert.deepEqual(missing, [], `commands no task page names (README.md, docs/*.md): ${missing.join(', ')}`);
});
