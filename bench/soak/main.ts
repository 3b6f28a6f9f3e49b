/**
 * `npm run soak`: the long run of bench/soak/run-soak.ts, 1,000,000 ADD/DEL calls per phase by
 * default, with its figures and any violation printed; exits 1 on a violation.
 *
 *   PODIPAM_SOAK_OPS=1000000 PODIPAM_SOAK_LANES=16 PODIPAM_SOAK_TARGET=256 PODIPAM_SOAK_SHIM_EVERY=100
 *   PODIPAM_SOAK_SAMPLES=40 PODIPAM_SOAK_PHASES=warm,cluster npm run soak
 */
import { type Phase, runSoak } from './run-soak.js';

const num = (name: string, dflt: number): number => {
  const v = process.env[name];
  if (v === undefined || v === '') return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} ${JSON.stringify(v)}: must be a non-negative integer`);
  return n;
};

const phases = (process.env.PODIPAM_SOAK_PHASES ?? 'warm,cluster').split(',').map((p) => p.trim()) as Phase[];
for (const p of phases) if (p !== 'warm' && p !== 'cluster') throw new Error(`PODIPAM_SOAK_PHASES: ${JSON.stringify(p)} is not warm or cluster`);
const reports = await runSoak({
  ops: num('PODIPAM_SOAK_OPS', 1_000_000),
  lanes: num('PODIPAM_SOAK_LANES', 16),
  target: num('PODIPAM_SOAK_TARGET', 256),
  shimEvery: num('PODIPAM_SOAK_SHIM_EVERY', 100),
  samples: num('PODIPAM_SOAK_SAMPLES', 40),
  phases,
});
console.log(
  JSON.stringify(
    reports.map(({ samples, ...r }) => ({ ...r, first: samples[0], last: samples[samples.length - 1] })),
    null,
    2,
  ),
);
process.exitCode = reports.some((r) => r.violations.length > 0) ? 1 : 0;
