import { test } from 'node:test';
import assert from 'node:assert/strict';
import { curveTable, etcdGoEnv, etcdPerPod, mergeShards, parseEtcdCounters, type Result, simProcs, slowRequests, type Sample } from './warm-scale.js';

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

test('warm-scale shards: counts and CPU summed, the run as long as the last process, sample k at the later of the two', () => {
  const part = (over: Partial<Result>, rss: Sample[]): Result => ({
    nodes: 10,
    pods: 500,
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
    procs: 1,
    retries: 0,
    refillFailures: 0,
    ...over,
  });
  const a = part({ seconds: 10, etcdAtStart: parseEtcdCounters('etcd_debugging_mvcc_put_total 7') }, [
    sample(50, 0.5, 0.1, 0.05),
    sample(250, 5, 2, 1),
    sample(500, 10, 4, 2),
  ]);
  const b = part({ seconds: 12, cpuSeconds: 5, held: 60, retries: 2 }, [sample(50, 0.6, 0.1, 0.06), sample(250, 6, 2.5, 1.2), sample(500, 12, 5, 2.4)]);
  const m = mergeShards([a, b]);
  assert.deepEqual(
    [m.nodes, m.pods, m.seconds, m.cpuSeconds, m.roundTrips, m.hits, m.held, m.procs, m.retries, m.peakRssMiB],
    [20, 1000, 12, 9, 200, 980, 124, 2, 2, '200.0'],
  );
  assert.equal(m.etcdAtStart?.puts, 7, "the first process's etcd counters at the start");
  assert.deepEqual(
    m.rss.map((x) => [x.pods, x.s, x.cpuS, x.etcdCpuS, x.rssMiB]),
    [
      [100, 0.6, 0.2, 0.06, '400.0'],
      [500, 6, 4.5, 1.2, '400.0'],
      [1000, 12, 9, 2.4, '400.0'],
    ],
  );
  // One process: its result as it is.
  assert.equal(mergeShards([a]), a);
  // Unequal sample counts: the common prefix.
  assert.equal(mergeShards([a, part({}, [sample(50, 0.5, 0.1, 0.05)])]).rss.length, 1);
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
