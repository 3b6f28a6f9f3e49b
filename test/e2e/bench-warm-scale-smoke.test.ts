/**
 * A short run of bench/warm-scale.ts (12 nodes × 10 dual-stack pods, 4 in flight, 2 simulating
 * processes on a 3-member etcd): the processes start together, their results merge into one run,
 * and the datastore holds one pod record per pod and every address the nodes' warm handles held
 * (else the run throws). Figures are not judged here (the machine is shared); the million is
 * `PODIPAM_BENCH_WARM_NODES=20000 PODIPAM_BENCH_WARM_PODS=50 node dist/bench/index.js warm-scale`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';

test('bench, warm-scale smoke: two simulating processes, one merged run, the datastore checked', { timeout: 240_000 }, async (t) => {
  process.env.PODIPAM_BENCH_WARM_NODES = '12';
  process.env.PODIPAM_BENCH_WARM_PODS = '10';
  process.env.PODIPAM_BENCH_WARM_IN_FLIGHT = '4';
  process.env.PODIPAM_BENCH_WARM_PROCS = '2';
  const { run } = await import('../../bench/warm-scale.js');
  const lines = await run();
  for (const l of lines) t.diagnostic(l);
  const head = lines.find((l) => l.startsWith('warm-scale etcd x3'));
  assert.match(head ?? '', /^warm-scale etcd x3 12x10 = 120 pods: \d+\.\d s, \d+ pods\/s .*CPU of the simulating processes \(2\) \d+\.\d s$/, lines.join('\n'));
  const trips = lines.find((l) => l.includes('round trips per pod'));
  assert.match(trips ?? '', /refill txns \d+ \(0 failed\).*pool hit rate \d+\.\d%/);
  // Each process samples after its first node and at each tenth of its share; the rows are the merged samples after the first.
  const rows = lines.filter((l) => /^ {2}\| \d+ \|/.test(l));
  assert.ok(rows.length >= 2, `curve rows: ${lines.join('\n')}`);
  assert.match(rows[rows.length - 1]!, /^ {2}\| 120 \|/, 'the last row has every pod of both processes');
});
