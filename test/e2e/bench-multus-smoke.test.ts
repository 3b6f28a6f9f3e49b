/**
 * bench/multus.ts at a size for CI: 6 pods × 3 networks on 3 nodes (an agent each) on a 3-member
 * etcd, cluster mode with a pool per network beside host-local, one round. The bench's own checks
 * run (every answer valid and distinct, nothing held after DEL, `ipam check` clean, no host-local
 * address file left); the summary must carry the ratios to host-local, the CPU per attachment by
 * process and (5 transactions per shape) etcd's CPU per transaction by shape — once with every
 * process on every CPU, once with the etcd members on a CPU of their own (the bench reads each
 * process's affinity back from /proc and fails if it did not take). The full run is
 * `node dist/bench/multus.js`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

test('multus bench, short: 6 pods × 3 networks, own pools beside host-local, one round, clean after DEL', { timeout: 360_000 }, async (t) => {
  Object.assign(process.env, {
    PODIPAM_BENCH_MULTUS_PODS: '6',
    PODIPAM_BENCH_MULTUS_NETWORKS: '3',
    PODIPAM_BENCH_MULTUS_IN_FLIGHT: '6',
    PODIPAM_BENCH_MULTUS_RUNS: '1',
    PODIPAM_BENCH_MULTUS_SUBJECTS: 'own,host-local',
    PODIPAM_BENCH_MULTUS_TXN_COST: '5',
  });
  const { run } = await import('../../bench/multus.js');
  const lines = await run();
  for (const l of lines) t.diagnostic(l);
  // One block per CPU layout, each headed by its layout line.
  const starts = lines.flatMap((l, i) => (l.startsWith('layout ') ? [i] : []));
  assert.equal(starts.length, 2, `a block per layout: ${lines.join(' | ')}`);
  assert.match(lines[starts[0]!]!, /^layout together: every process on CPUs 0-\d+$/);
  assert.match(lines[starts[1]!]!, /^layout apart: the node's processes on CPU [-\d]+, the etcd members on CPU \d+$/);
  for (const [k, from] of starts.entries()) {
    const block = lines.slice(from, starts[k + 1] ?? lines.length);
    const del = block.find((l) => l.startsWith('DEL wall / host-local'));
    assert.ok(del, `a DEL ratio line: ${block.join(' | ')}`);
    assert.match(del, /^DEL wall \/ host-local\s+\d+\.\d\dx\s+1\.00x$/);
    assert.ok(
      block.some((l) => /^ADD wall \/ host-local\s+\d+\.\d\dx\s+1\.00x$/.test(l)),
      'an ADD ratio line',
    );
    assert.ok(
      block.some((l) => /^ADD CPU\/attachment, all\s+\d+\.\d\d ms\s+\d+\.\d\d ms$/.test(l)),
      'a CPU per attachment line',
    );
    const costs = block.filter((l) => /^txn cost: .* etcd \d+\.\d\d ms\/txn, client \d+\.\d\d ms\/txn, wall \d+\.\d\d ms$/.test(l));
    assert.equal(costs.length, 8, `two rounds of four txn shapes: ${block.join(' | ')}`);
  }
  // The bench gives this process its CPUs back.
  assert.match(readFileSync('/proc/self/status', 'utf8'), new RegExp(`^Cpus_allowed_list:\\s*0-${availableParallelism() - 1}$`, 'm'));
});
