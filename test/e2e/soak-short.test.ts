/**
 * The soak (bench/soak/run-soak.ts) at a size for CI: 5,000 ADD/DEL calls with churn through the
 * agent's warm pool and 5,000 through the agent in cluster mode, both on a real etcd, 1 in 50
 * through the native shim. The agent's RSS, heap and file descriptors, the datastore's blocks
 * and allocations must not grow after warm-up beyond the bounds of run-soak.ts; DEL of every pod
 * leaves no pod record, `ipam check` clean and, with the warm handles released, nothing
 * allocated. The full run is `npm run soak` (BENCHMARKS.md).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runSoak } from '../../bench/soak/run-soak.js';

test(
  'soak, short: 5,000 churned ADD/DEL per phase through the agent (warm pool, cluster mode) on etcd: no growth, no leak',
  { timeout: 300_000 },
  async (t) => {
    const reports = await runSoak({ ops: 5000, lanes: 8, target: 128, shimEvery: 50, samples: 15, log: (l) => t.diagnostic(l) });
    assert.equal(reports.length, 2);
    for (const r of reports) {
      assert.ok(r.ops >= 5000, `${r.phase}: ${r.ops} calls`);
      assert.ok(r.viaShim > 0, `${r.phase}: some calls went through the shim`);
      assert.ok(r.samples.length >= 10, `${r.phase}: sampled ${r.samples.length} times`);
      assert.ok(Math.max(...r.samples.map((s) => s.live)) > 32, `${r.phase}: pods were live at once (churn, not one pod at a time)`);
      assert.deepEqual(r.violations, [], `${r.phase}: ${r.violations.join('; ')}`);
    }
  },
);
