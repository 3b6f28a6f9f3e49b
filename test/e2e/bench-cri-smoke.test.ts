/**
 * bench/cri.ts at a size for CI: 4 sandboxes at once, one round per subject (host-local, the
 * agent in local mode, in cluster mode, with a warm pool) under the real containerd and runc. Every
 * sandbox must start and stop (the bench throws otherwise); the summary must carry each
 * subject's RunPodSandbox p50/p99, podipam's over host-local's, and the agents' ADD p99, with the
 * agents at real-time priority 1 as shipped, and the disk's fsync figures sampled while the
 * cluster agent's sandboxes start (bench/lib/fsync-probe.test.ts checks the sampling itself).
 * The full run is `node dist/bench/index.js cri`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';

test(
  "cri bench, short: 4 sandboxes at once per subject through containerd, p50/p99, the agents' ADD p99 and the disk's fsync printed",
  { timeout: 240_000 },
  async (t) => {
    Object.assign(process.env, { PODIPAM_BENCH_CRI_PODS: '4', PODIPAM_BENCH_CRI_ROUNDS: '1', PODIPAM_BENCH_CRI_FSYNC_PROBE_MS: '50' });
    const { run } = await import('../../bench/cri.js');
    const lines = await run();
    for (const l of lines) t.diagnostic(l);
    assert.equal(lines.length, 6, lines.join(' | '));
    // The agents run as the DaemonSet and the unit run them: real-time, checked in their log by the bench.
    assert.equal(lines[4], 'cri agents at --realtime-priority 1');
    assert.match(lines[0]!, /^cri host-local +RunPodSandbox p50 [\d.]+ ms p90 [\d.]+ ms p99 [\d.]+ ms$/);
    assert.deepEqual(
      lines.slice(1, 4).map((l) => /^cri (agent \w+) /.exec(l)?.[1]),
      ['agent local', 'agent cluster', 'agent warm'],
    );
    for (const l of lines.slice(1, 4))
      assert.match(
        l,
        /RunPodSandbox p50 [\d.]+ ms p90 [\d.]+ ms p99 [\d.]+ ms \([\d.]+x \/ [\d.]+x host-local\); agent ADD p50 [\d.]+ ms p99 [\d.]+ ms \(n 4\)$/,
      );
    const disk =
      /^cri disk fsync beside the datastore while the cluster agent's sandboxes start \(every 50 ms\): p50 [\d.]+ ms p90 [\d.]+ ms p99 [\d.]+ ms max [\d.]+ ms \(n (\d+)\)$/.exec(
        lines[5]!,
      );
    assert.ok(disk, lines[5]);
    assert.ok(Number(disk[1]) >= 1, lines[5]);
  },
);
