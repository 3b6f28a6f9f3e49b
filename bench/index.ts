/**
 * The `npm run bench` driver: runs every benchmark module of bench/ in sequence — `local` first,
 * then the others by name — and prints a summary at the end.
 *
 * A benchmark module is any bench/<name>.ts (compiled to dist/bench/<name>.js) exporting
 * `run(): Promise<void | readonly string[]>`; it prints its own table as it goes and may return
 * summary lines. Adding a benchmark = adding such a file; nothing to register here.
 *
 *   node dist/bench/index.js [name…]   only the named modules (e.g. `local controller`)
 */
import { readdirSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { basename, dirname, join } from 'node:path';

/** What a benchmark module exports. */
export interface BenchModule {
  run(): Promise<void | readonly string[]>;
}

const HERE = dirname(fileURLToPath(import.meta.url));
const FIRST = ['local'];

function modules(only: readonly string[]): string[] {
  const names = readdirSync(HERE)
    .filter((f) => f.endsWith('.js') && f !== 'index.js' && !f.endsWith('.test.js'))
    .map((f) => basename(f, '.js'))
    .filter((n) => only.length === 0 || only.includes(n));
  const rank = (n: string) => (FIRST.includes(n) ? FIRST.indexOf(n) : FIRST.length);
  return names.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

async function main(): Promise<number> {
  const only = process.argv.slice(2);
  const names = modules(only);
  if (names.length === 0) {
    console.error(`no benchmark modules${only.length ? ` named ${only.join(', ')}` : ''} in ${HERE}`);
    return 1;
  }
  const summary: string[] = [];
  let failed = 0;
  for (const name of names) {
    console.log(`\n=== ${name} ===`);
    const t0 = performance.now();
    try {
      const mod = (await import(pathToFileURL(join(HERE, `${name}.js`)).href)) as Partial<BenchModule>;
      if (typeof mod.run !== 'function') {
        summary.push(`${name}: skipped (no exported run())`);
        continue;
      }
      const lines = (await mod.run()) ?? [];
      summary.push(`${name} (${((performance.now() - t0) / 1000).toFixed(1)} s)`, ...lines.map((l) => `  ${l}`));
    } catch (e) {
      failed++;
      summary.push(`${name}: FAILED: ${(e as Error).message}`);
      console.error(`${name} failed:`, e);
    }
  }
  console.log(`\n=== summary (${process.arch}, ${process.version}) ===`);
  for (const l of summary) console.log(l);
  return failed ? 1 : 0;
}

process.exitCode = await main();
