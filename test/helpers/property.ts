/**
 * The harness of the model-based property tests (`src/**\/*.property.test.ts`, fast-check).
 * Each property has an environment prefix `<ENV>`: `<ENV>_SEED` and `<ENV>_PATH` replay a run
 * (the seed is printed as a test diagnostic on every run), and a failure ends with the line
 *   Replay: <ENV>_SEED=<seed> <ENV>_PATH=<path> node scripts/test.mjs <file>
 * The number of runs comes from `propertyRuns(<RUNS_ENV>)`: `<RUNS_ENV>_RUNS`, else
 * PODIPAM_PROPERTY_RUNS (every property at once), else 500 — the suite's short run, a fresh seed
 * each time; a long session sets PODIPAM_PROPERTY_RUNS=20000 (docs/testing.md, long runs).
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';

/** `<env>_RUNS` from the environment, else PODIPAM_PROPERTY_RUNS, else 500. */
export function propertyRuns(env: string): number {
  return Number(process.env[`${env}_RUNS`] ?? process.env.PODIPAM_PROPERTY_RUNS ?? 500);
}

export interface PropertyOptions {
  /** Prefix of the `_SEED` / `_PATH` variables and of the replay line. */
  readonly env: string;
  /** The file filter of the replay line (`node scripts/test.mjs <file>`). */
  readonly file: string;
  /** What one run is, in the closing diagnostic (`N <what> in M ms`); default 'sequences'. */
  readonly what?: string;
  readonly runs: number;
}

/** Runs `prop` with the seed and path from `<env>_SEED` and `<env>_PATH` when set; fails with the replay line. */
export function runProperty<Ts extends unknown[]>(t: { diagnostic(m: string): void }, o: PropertyOptions, prop: fc.IProperty<Ts>): void {
  const { env } = o;
  const seed = process.env[`${env}_SEED`] === undefined ? (Date.now() ^ (Math.random() * 2 ** 31)) | 0 : Number(process.env[`${env}_SEED`]);
  const path = process.env[`${env}_PATH`];
  t.diagnostic(`fast-check seed ${seed}`);
  const started = performance.now();
  const details = fc.check(prop, { numRuns: o.runs, seed, ...(path === undefined ? {} : { path, endOnFailure: true }) });
  t.diagnostic(`${details.numRuns} ${o.what ?? 'sequences'} in ${Math.round(performance.now() - started)} ms`);
  if (details.failed) {
    assert.fail(
      `${fc.defaultReportMessage(details)}\n` + `Replay: ${env}_SEED=${details.seed} ${env}_PATH=${details.counterexamplePath} node scripts/test.mjs ${o.file}`,
    );
  }
}
