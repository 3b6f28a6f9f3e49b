import { test } from 'node:test';
import assert from 'node:assert/strict';
import { curveTable, type Sample } from './warm-scale.js';

const sample = (pods: number, s: number, cpuS: number, etcdCpuS: number): Sample => ({
  pods,
  s,
  rssMiB: '200.0',
  heapMiB: '20.0',
  cpuS,
  etcdCpuS,
  etcdDbMiB: '10.0',
});

test('warm-scale curve: a row per tenth with CPU per pod, samples taken out of order, last/first ratio', () => {
  // 1,000 pods a tenth: 1,000/s then 500/s; the process 0.2 s then 0.4 s, etcd 0.3 then 0.9 s
  const rows = curveTable({ rss: [sample(0, 0, 0, 0), sample(2000, 3, 0.6, 1.2), sample(1000, 1, 0.2, 0.3)] });
  assert.equal(rows[2], '  | 1000 | 1.0 | 1000 | 200 | 300 | 200.0 | 10.0 |');
  assert.equal(rows[3], '  | 2000 | 3.0 | 500 | 400 | 900 | 200.0 | 10.0 |');
  assert.equal(rows[4], '  last tenth / first tenth: 0.500 (1000 → 500 pods/s)');
});
