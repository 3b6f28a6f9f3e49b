// Writes docs/cli.md (from the command definitions) and docs/http-api.md (from docs/openapi.json)
// (npm run docs:cli, after npm run build). test/docs-reference.test.ts fails while either is stale.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const { buildProgram } = await import(new URL('../dist/src/cli/index.js', import.meta.url).href);
const { cliReference } = await import(new URL('../dist/src/cli/cli-reference.js', import.meta.url).href);
const { openApiMarkdown } = await import(new URL('../dist/src/server/api/openapi-markdown.js', import.meta.url).href);
writeFileSync(`${root}docs/cli.md`, cliReference(buildProgram()));
writeFileSync(`${root}docs/http-api.md`, openApiMarkdown(JSON.parse(readFileSync(`${root}docs/openapi.json`, 'utf8'))));
console.log('wrote docs/cli.md, docs/http-api.md');
