import { test } from 'node:test';
import assert from 'node:assert/strict';
import { curveTable, etcdGoEnv, etcdPerPod, mergeShards, parseEtcdCounters, type Result, shareOf, simProcs, slowRequests, type Sample } from './warm-scale.js';

const sample = (pods: number, s: number, cpuS: number, etcdCpuS: number): Sample => ({
  pods,
  s,
  rssMiB: '200.0',
  etcdRssMiB: '900.0',
  heapMiB: '20.0',
  cpuS,
  etcdCpuS,
  etcdDbMiB: '10.0',
});

test('warm-scale curve: a row per tenth with CPU per pod, samples taken out of order, last/first ratio', () => {
  // 1,000 pods a tenth: 1,000/s then 500/s; the process 0.2 s then 0.4 s, etcd 0.3 then 0.9 s
  const rows = curveTable({ rss: [sample(0, 0, 0, 0), sample(2000, 3, 0.6, 1.2), sample(1000, 1, 0.2, 0.3)] });
  assert.equal(rows[2], '  | 1000 | 1.0 | 1000 | 200 | 300 | 200.0 | 900.0 | 10.0 | - | - | - | - |');
  assert.equal(rows[3], '  | 2000 | 3.0 | 500 | 400 | 900 | 200.0 | 900.0 | 10.0 | - | - | - | - |');
  assert.equal(rows[4], '  last tenth / first tenth: 0.500 (1000 → 500 pods/s)');
});

test("warm-scale etcd figures: a member's /metrics page read, per pod over the run, compaction time per tenth", () => {
  const page = (puts: number, bytes: number, keys: number, compactMs: number): string =>
    [
      '# HELP etcd_debugging_mvcc_put_total Total number of puts seen by this member.',
      `etcd_debugging_mvcc_put_total ${puts}`,
      `etcd_debugging_mvcc_total_put_size_in_bytes ${bytes.toExponential()}`,
      `etcd_debugging_mvcc_keys_total ${keys}`,
      'etcd_debugging_mvcc_txn_total 10',
      `etcd_mvcc_db_total_size_in_bytes ${keys * 1000}`,
      `etcd_mvcc_db_total_size_in_use_in_bytes ${keys * 900}`,
      'etcd_debugging_mvcc_db_compaction_total_duration_milliseconds_count 2',
      `etcd_debugging_mvcc_db_compaction_total_duration_milliseconds_sum ${compactMs}`,
      'etcd_debugging_mvcc_db_compaction_total_duration_milliseconds_bucket{le="100"} 1',
    ].join('\n');
  const a = parseEtcdCounters(page(100, 1e5, 50, 0));
  assert.deepEqual(
    slowRequests([
      '{"level":"warn","msg":"apply request took too long","took":"150.5ms","prefix":"read-only range ","request":"key:\\"/podipam/blocks/10.0.0.0-26\\" range_end:\\"/podipam/blocks0\\" "}',
      '{"level":"warn","msg":"apply request took too long","took":"1.5s","prefix":"read-only range ","request":"key:\\"/podipam/blocks/x\\" "}',
      '{"level":"warn","msg":"apply request took too long","took":"200ms","prefix":"","request":"header:<ID:1 > txn:<compare:<> >"}',
      '{"level":"info","msg":"elected leader"}',
    ]),
    ['read-only range /podipam/blocks: 2 × 825 ms', 'request: 1 × 200 ms'],
  );
  assert.deepEqual([a.puts, a.putBytes, a.keys, a.compactions, a.deletes], [100, 1e5, 50, 2, 0], 'a missing counter reads 0');
  const b = parseEtcdCounters(page(2100, 1.1e6, 1050, 1500));
  const at = (pods: number, s: number, etcd: typeof a): Sample => ({ ...sample(pods, s, 0, 0), etcd });
  assert.match(curveTable({ rss: [at(0, 0, a), at(1000, 2, b)] })[2]!, /\| 1050 \| 1\.5 \| 0\.00 \| 0 \|$/);
  const lines = etcdPerPod({ etcdAtStart: a, rss: [at(1000, 2, b)] });
  assert.match(
    lines[0]!,
    /^ {2}etcd per pod \(member 0, 1000 pods\): 2\.00 keys put, 1000 bytes put, 0\.00 deletes, 0\.000 txns; live 1\.00 keys, db 1000 bytes \(in use 900\)$/,
  );
  assert.deepEqual(etcdPerPod({ rss: [at(1000, 2, b)] }), ['  etcd per pod: no /metrics figures']);
});

test("warm-scale etcd GOGC knob: 400 unless set, Go's default on request, anything else refused by name", (t) => {
  const knob = 'PODIPAM_BENCH_WARM_ETCD_GOGC';
  const before = process.env[knob];
  t.after(() => (before === undefined ? delete process.env[knob] : (process.env[knob] = before)));
  delete process.env[knob];
  assert.deepEqual(etcdGoEnv(), { GOGC: '400' });
  process.env[knob] = 'default';
  assert.deepEqual(etcdGoEnv(), {});
  process.env[knob] = 'off';
  assert.deepEqual(etcdGoEnv(), { GOGC: 'off' });
  for (const bad of ['0', '-1', '4e2', '']) {
    process.env[knob] = bad;
    assert.throws(() => etcdGoEnv(), new RegExp(`^Error: PODIPAM_BENCH_WARM_ETCD_GOGC=${bad}: a percentage`));
  }
});

test('warm-scale shards: counts and CPU summed, the run as long as the last process, the curve at tenths of all the pods', () => {
  const part = (over: Partial<Result>, rss: Sample[]): Result => ({
    nodes: 10,
    pods: 100,
    seconds: 10,
    cpuSeconds: 4,
    roundTrips: 100,
    hits: 490,
    misses: 10,
    refillTxns: 30,
    writeTxns: 20,
    rss,
    peakRssMiB: '100.0',
    heapAfterGcMiB: '20.0',
    orphaned: 0,
    held: 64,
    ends: [10],
    retries: 0,
    refillFailures: 0,
    ...over,
  });
  // a: 10 pods/s, done at 10 s; b: 5 pods/s, done at 20 s (samples out of order: sorted by time).
  // CPU: a 0.1 s a pod, b 0.2 s; the members' CPU on a's line: 0.05 s a pod.
  const a = part({ seconds: 10, etcdAtStart: parseEtcdCounters('etcd_debugging_mvcc_put_total 7') }, [
    sample(10, 1, 1, 0.5),
    sample(100, 10, 10, 5),
    sample(50, 5, 5, 2.5),
  ]);
  const b = part({ seconds: 20, cpuSeconds: 5, held: 60, retries: 2, ends: [20] }, [sample(10, 2, 2, 0.5), sample(50, 10, 10, 2.5), sample(100, 20, 20, 5)]);
  const m = mergeShards([a, b]);
  assert.deepEqual(
    [m.nodes, m.pods, m.seconds, m.cpuSeconds, m.roundTrips, m.hits, m.held, m.ends.length, m.ends, m.retries, m.peakRssMiB],
    [20, 200, 20, 9, 200, 980, 124, 2, [10, 20], 2, '200.0'],
  );
  assert.equal(m.etcdAtStart?.puts, 7, "the first process's etcd counters at the start");
  // Together 15 pods/s until a is done at 10 s (150 pods), then b's 5 pods/s: 160 at 12 s, 180 at 16 s, 200 at 20 s.
  // (Their first nodes, 20 pods, are a tenth already: no sample of their own.)
  assert.deepEqual(
    m.rss.map((x) => [x.pods, x.s]),
    [
      [20, 1.333],
      [40, 2.667],
      [60, 4],
      [80, 5.333],
      [100, 6.667],
      [120, 8],
      [140, 9.333],
      [160, 12],
      [180, 16],
      [200, 20],
    ],
  );
  const at16 = m.rss.find((x) => x.pods === 180)!;
  assert.ok(Math.abs(at16.cpuS - (100 * 0.1 + 80 * 0.2)) < 1e-9, `CPU of both at 16 s: ${at16.cpuS}`);
  assert.equal(at16.etcdCpuS, 5, "the members' CPU on the first process's line, its last sample's after it");
  assert.equal(at16.rssMiB, '400.0', "RSS summed from each process's nearest sample");
  // The last tenth is b's alone: 20 pods in 4 s, not 50 pods (b's last tenth) in the 10 s after a's last sample.
  assert.match(curveTable(m).at(-1)!, /last tenth \/ first tenth: 0\.333 \(15 → 5 pods\/s\)/);
  // First nodes done before the first tenth: the curve starts there (4 pods: a's 2 at 0.2 s, b's 2 at 0.4 s).
  const early = mergeShards([
    { ...a, rss: [...a.rss, sample(2, 0.2, 0.2, 0.1)] },
    { ...b, rss: [sample(2, 0.4, 0.4, 0.1), ...b.rss] },
  ]);
  assert.deepEqual(
    early.rss.slice(0, 2).map((x) => x.pods),
    [4, 20],
  );
  // One process: its result as it is.
  assert.equal(mergeShards([a]), a);
  // A process with no samples: no curve.
  assert.deepEqual(mergeShards([a, part({}, [])]).rss, []);
});

test('warm-scale shares: node n in process n mod count, every node in exactly one', () => {
  for (const [n, count] of [
    [13, 2],
    [12, 2],
    [128, 3],
    [1, 2],
    [5, 16],
  ] as const) {
    const shares = Array.from({ length: count }, (_, i) => shareOf(n, i, count));
    assert.equal(
      shares.reduce((x, y) => x + y, 0),
      n,
      `${n} over ${count}: ${shares.join(' ')}`,
    );
    shares.forEach((k, i) => assert.equal(k, Array.from({ length: n }, (_, j) => j).filter((j) => j % count === i).length));
  }
});

test('warm-scale processes knob: 2 unless set, 1 to 16, anything else refused by name', (t) => {
  const knob = 'PODIPAM_BENCH_WARM_PROCS';
  const before = process.env[knob];
  t.after(() => (before === undefined ? delete process.env[knob] : (process.env[knob] = before)));
  delete process.env[knob];
  assert.equal(simProcs(), 2);
  process.env[knob] = '1';
  assert.equal(simProcs(), 1);
  process.env[knob] = '16';
  assert.equal(simProcs(), 16);
  for (const bad of ['0', '17', '2.5', 'two', '']) {
    process.env[knob] = bad;
    assert.throws(() => simProcs(), new RegExp(`^Error: PODIPAM_BENCH_WARM_PROCS=${bad}: a number of processes from 1 to 16`));
  }
});
