// Writes docs/metrics.md from the built registries (npm run docs:metrics, after npm run build).
// test/e2e/metrics-reference.test.ts fails while the file differs or /metrics exports otherwise.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const { metricsDocText } = await import(new URL('../dist/src/cli/metrics-doc.js', import.meta.url).href);
writeFileSync(`${root}docs/metrics.md`, metricsDocText());
console.log('wrote docs/metrics.md');
