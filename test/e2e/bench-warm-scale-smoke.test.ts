/**
 * A short run of bench/warm-scale.ts (13 nodes × 10 dual-stack pods, 5 in flight, 2 simulating
 * processes on a 3-member etcd: shares of 7 and 6 nodes, 3 and 2 in flight): the processes start together, their results merge into one run,
 * and the datastore holds one pod record per pod and every address the nodes' warm handles held
 * (else the run throws). Figures are not judged here (the machine is shared); the million is
 * `PODIPAM_BENCH_WARM_NODES=20000 PODIPAM_BENCH_WARM_PODS=50 node dist/bench/index.js warm-scale`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';

test('bench, warm-scale smoke: two simulating processes, one merged run, the datastore checked', { timeout: 240_000 }, async (t) => {
  process.env.PODIPAM_BENCH_WARM_NODES = '13';
  process.env.PODIPAM_BENCH_WARM_PODS = '10';
  process.env.PODIPAM_BENCH_WARM_IN_FLIGHT = '5';
  process.env.PODIPAM_BENCH_WARM_PROCS = '2';
  const { run } = await import('../../bench/warm-scale.js');
  const lines = await run();
  for (const l of lines) t.diagnostic(l);
  const head = lines.find((l) => l.startsWith('warm-scale etcd x3'));
  assert.match(
    head ?? '',
    /^warm-scale etcd x3 13x10 = 130 pods: \d+\.\d s, \d+ pods\/s .*CPU of the simulating processes \(2, done after \d+\.\d, \d+\.\d s\) \d+\.\d s$/,
    lines.join('\n'),
  );
  const trips = lines.find((l) => l.includes('round trips per pod'));
  assert.match(trips ?? '', /refill txns \d+ \(0 failed\).*pool hit rate \d+\.\d%/);
  // The merged curve: a row at each tenth of all the pods after the first (the first nodes of
  // both, 20 pods, are more than a tenth here: the curve starts at 13).
  const rows = lines.filter((l) => /^ {2}\| \d+ \|/.test(l));
  assert.deepEqual(
    rows.map((r) => Number(/^ {2}\| (\d+) \|/.exec(r)![1])),
    Array.from({ length: 9 }, (_, k) => 13 * (k + 2)),
    lines.join('\n'),
  );
});
