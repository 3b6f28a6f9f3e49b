/**
 * The generated reference pages are current: docs/cli.md is what the command definitions give
 * (`cliReference(buildProgram())`) and docs/http-api.md what docs/openapi.json gives
 * (`openApiMarkdown`); `npm run docs:cli` rewrites both. Every command has its section.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildProgram } from '../src/cli/index.js';
import { cliReference } from '../src/cli/cli-reference.js';
import { openApiMarkdown } from '../src/server/api/openapi-markdown.js';
import { REPO_ROOT } from './helpers/plugin.js';

test('docs/cli.md is generated from the command definitions (npm run docs:cli)', () => {
  const page = cliReference(buildProgram());
  assert.equal(readFileSync(join(REPO_ROOT, 'docs', 'cli.md'), 'utf8'), page, 'docs/cli.md is stale: run npm run docs:cli');
  for (const heading of ['## podipam pool create', '## podipam ipam history', '## podipam agent status', '## podipam datastore restore']) {
    assert.ok(page.includes(`\n${heading}\n`), `no section ${heading}`);
  }
  assert.match(page, /\| `--cidr <cidr>` \| the pool CIDR/);
});

test('docs/http-api.md is generated from docs/openapi.json (npm run docs:cli)', () => {
  const doc = JSON.parse(readFileSync(join(REPO_ROOT, 'docs', 'openapi.json'), 'utf8')) as Record<string, unknown>;
  const page = openApiMarkdown(doc);
  assert.equal(readFileSync(join(REPO_ROOT, 'docs', 'http-api.md'), 'utf8'), page, 'docs/http-api.md is stale: run npm run docs:cli');
  const routes = Object.entries(doc['paths'] as Record<string, Record<string, unknown>>).flatMap(([p, ops]) =>
    Object.keys(ops).map((m) => `### ${m.toUpperCase()} ${p}`),
  );
  assert.ok(routes.length > 30);
  const missing = routes.filter((r) => !page.includes(`\n${r}\n`));
  assert.deepEqual(missing, []);
});
