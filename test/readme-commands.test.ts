/**
 * Every CLI command is in the README: each leaf command of `buildProgram()` (e.g. `podipam ipam
 * reserve`) must appear there as `podipam <path>` — the words of the path in order, its options
 * or arguments may follow. A command added without a word in the README fails here, naming it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { buildProgram } from '../src/cli/index.js';
import { REPO_ROOT } from './helpers/plugin.js';

function leaves(c: Command, path: string[] = []): string[][] {
  const subs = c.commands.filter((s) => !(s as unknown as { _hidden?: boolean })._hidden);
  if (subs.length === 0) return [path];
  return subs.flatMap((s) => leaves(s, [...path, s.name()]));
}

test('README names every CLI command (podipam <command> [<subcommand>])', () => {
  const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
  const all = leaves(buildProgram());
  assert.ok(all.length > 20, `only ${all.length} commands found: is buildProgram() the whole CLI?`);
  const missing = all.map((p) => `podipam ${p.join(' ')}`).filter((cmd) => !new RegExp(`${cmd.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&')}(?![\\w-])`).test(readme));
  assert.deepEqual(missing, [], `commands the README never names: ${missing.join(', ')}`);
});
