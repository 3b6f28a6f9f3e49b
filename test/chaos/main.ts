/**
 * `npm run chaos -- [--minutes N] [--seed S]`: the partition rig (chaos-rig.ts) on a long
 * seeded schedule (default 30 minutes, a random seed), then its report: faults injected by
 * kind, calls checked, violations with their traces. Exit 1 on any violation, with the seed to
 * replay it (`--seed S`).
 *
 * `npm run chaos -- --operator [--minutes N] [--seed S] [--steps K]`: operator actions
 * interleaved with pods, answers lost after commit (test/suites/operator-schedule.ts), schedules
 * of K steps (default 200) one after another on SQLite and on a 3-member etcd until N minutes
 * (default 10) have passed; exit 1 with the seed at the first violation.
 */
import { parseArgs } from 'node:util';
import { runChaos } from './chaos-rig.js';
import { runOperatorChaos } from './operator-chaos.js';

const { values } = parseArgs({
  options: { minutes: { type: 'string' }, seed: { type: 'string' }, operator: { type: 'boolean' }, steps: { type: 'string', default: '200' } },
});
const minutes = Number(values.minutes ?? (values.operator ? '10' : '30'));
if (!Number.isFinite(minutes) || minutes <= 0 || minutes > 24 * 60) {
  console.error(`--minutes ${JSON.stringify(values.minutes)}: must be a number of minutes from 0 to 1440`);
  process.exit(2);
}
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
if (!Number.isInteger(seed) || seed < 0) {
  console.error(`--seed ${JSON.stringify(values.seed)}: must be a non-negative integer`);
  process.exit(2);
}
if (values.operator) {
  const steps = Number(values.steps);
  if (!Number.isInteger(steps) || steps < 1 || steps > 100_000) {
    console.error(`--steps ${JSON.stringify(values.steps)}: must be an integer from 1 to 100000`);
    process.exit(2);
  }
  process.exit(await runOperatorChaos({ seed, minutes, steps }));
}
console.log(`chaos: seed ${seed}, ${minutes} min of faults (replay: npm run chaos -- --minutes ${minutes} --seed ${seed})`);
const r = await runChaos({ seed, scheduleMs: minutes * 60_000, log: (l) => console.log(`${new Date().toISOString()} ${l}`) });
console.log(
  JSON.stringify(
    {
      seed: r.seed,
      minutes: +(r.ms / 60_000).toFixed(1),
      faults: r.faults,
      calls: r.report.calls,
      holds: r.report.holds,
      addresses: r.report.addresses,
      violations: r.report.violations.length,
      unexpectedExits: r.unexpectedExits.length,
      undrained: r.undrained,
    },
    null,
    2,
  ),
);
console.log('failed calls, most frequent first:');
for (const f of r.failures.slice(0, 12)) console.log(`  ${f.count} × ${f.what}`);
for (const v of r.violations) console.log(v);
for (const x of r.unexpectedExits) console.log(x);
if (r.violations.length > 0 || r.unexpectedExits.length > 0) {
  console.log(`FAILED: seed ${seed} (replay: npm run chaos -- --minutes ${minutes} --seed ${seed})`);
  process.exit(1);
}
