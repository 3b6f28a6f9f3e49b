/**
 * A short run of bench/agent.ts's lean-driver comparison (8 pairs, a 16-pod burst, the same pairs
 * again after 16 more as the "settled" rows): the
 * physical floor (bench/native/cni-floor.c), the native shim + agent and host-local in one run,
 * each ADD/DEL row with both overheads above the floor and both ratios, and the agent's
 * footprint line. Figures are not judged here (the machine is shared); the full run is
 * `npm run bench`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';

test('bench, lean smoke: floor, shim + agent and host-local side by side, overhead above the floor, agent footprint', { timeout: 180_000 }, async (t) => {
  process.env.PODIPAM_BENCH_PAIRS = '8';
  process.env.PODIPAM_BENCH_BURST = '16';
  process.env.PODIPAM_BENCH_SETTLE_PAIRS = '16';
  const { runLean } = await import('../../bench/agent.js');
  const rows = await runLean();
  for (const r of rows) t.diagnostic(r);
  assert.match(rows[0]!, /floor\s+shim\+agent\s+host-local\s+shim-floor\s+h-l-floor\s+shim\/h-l\s+floor\/h-l/);
  const labels = ['lean ADD p50', 'lean ADD p99', 'lean DEL p50', 'lean DEL p99', 'lean burst 16 ADD wall', 'lean burst 16 DEL wall'];
  for (const label of [...labels, 'settled ADD p50', 'settled ADD p99', 'settled DEL p50', 'settled DEL p99']) {
    const row = rows.find((r) => r.startsWith(label));
    assert.ok(row, `row ${label} in ${rows.join('\n')}`);
    assert.equal((row.match(/ms/g) ?? []).length, 5, `${label}: floor, shim, host-local and two overheads in ms: ${row}`);
    assert.equal((row.match(/\d+\.\d+x/g) ?? []).length, 2, `${label}: two ratios: ${row}`);
  }
  const fp = rows.find((r) => r.startsWith('agent footprint'));
  assert.ok(fp, 'footprint line');
  const m = /idle RSS (\d+\.\d) MiB.*per 1,000 ADD\+DEL pairs (\d+) ms/.exec(fp);
  assert.ok(m && Number(m[1]) > 10 && Number(m[2]) > 0, fp);
});
