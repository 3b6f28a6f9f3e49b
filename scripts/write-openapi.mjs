// Writes docs/openapi.json from the built route table (npm run docs:openapi, after npm run build).
// src/server/api/openapi.test.ts fails while the file differs from what serve answers.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const { openApiText } = await import(new URL('../dist/src/server/api/api-router.js', import.meta.url).href);
writeFileSync(`${root}docs/openapi.json`, openApiText());
console.log('wrote docs/openapi.json');
