/**
 * A short run of bench/warm.ts (8 pairs, a 16-pod burst, every process on the same CPUs): the
 * physical floor, the warm pool, local mode through the same agent, cluster mode on a 3-member etcd
 * and host-local in one run, each ADD/DEL row with the agents' overhead above the floor and the ratios, the burst's walls
 * likewise, the warm pool's datastore figures, and where one warm-pool and one cluster-mode ADD's
 * time goes. Figures are not judged here (the machine is
 * shared); the full run is `node dist/bench/index.js warm` (and `npm run bench`).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';

test('bench, warm smoke: floor, warm pool, local mode, cluster mode and host-local side by side, overhead above the floor', { timeout: 180_000 }, async (t) => {
  process.env.PODIPAM_BENCH_PAIRS = '8';
  process.env.PODIPAM_BENCH_BURST = '16';
  process.env.PODIPAM_BENCH_WARM_LAYOUT = 'together';
  const { run } = await import('../../bench/warm.js');
  const rows = await run();
  for (const r of rows) t.diagnostic(r);
  assert.ok(
    rows.some((r) =>
      /floor\s+warm\s+local\s+cluster\s+host-local\s+warm-floor\s+local-floor\s+cluster-floor\s+warm\/local\s+warm\/cluster\s+warm\/h-l\s+cluster\/h-l\s+floor\/h-l/.test(
        r,
      ),
    ),
    rows.join('\n'),
  );
  for (const label of ['ADD p50', 'ADD p99', 'DEL p50', 'DEL p99', 'burst 16 ADD wall', 'burst 16 DEL wall']) {
    const row = rows.find((r) => r.startsWith(label));
    assert.ok(row, `row ${label} in ${rows.join('\n')}`);
    const figures = [...row.matchAll(/(-?\d+\.\d+) ms/g)].map((m) => Number(m[1]));
    assert.equal(figures.length, 8, `${label}: floor, warm, local, cluster, host-local and three overheads in ms: ${row}`);
    const [floor, warm, local, cluster, hl, ...above] = figures as [number, number, number, number, number, number, number, number];
    assert.ok(floor > 0 && warm > 0 && local > 0 && cluster > 0 && hl > 0, `${label}: every subject measured: ${row}`);
    [warm, local, cluster].forEach((x, i) => assert.ok(Math.abs(x - floor - above[i]!) < 0.011, `${label}: overheads are the differences: ${row}`));
    assert.equal((row.match(/\d+\.\d+x/g) ?? []).length, 5, `${label}: five ratios: ${row}`);
  }
  const hits = rows.find((r) => r.startsWith('steady: pool hit rate'));
  assert.ok(hits && /\d+\.\d%/.test(hits), `hit rate row: ${hits}`);
  // The breakdowns: the warm pool's, then cluster mode's, each with one handler row and the floor.
  const titles = rows.flatMap((r, i) => (/^where one (warm-pool|cluster-mode) ADD's time goes/.test(r) ? [i] : []));
  assert.equal(titles.length, 2, rows.join('\n'));
  for (const [k, at] of titles.entries()) {
    const table = rows.slice(at, titles[k + 1] ?? rows.length);
    for (const label of [
      'exec + loading of the shim',
      'agent: event loop until parsed',
      'agent: handler (allocation, durable write)',
      'total (driver)',
      'floor ADD (same run)',
    ]) {
      const r = table.find((x) => x.startsWith(label));
      assert.ok(r && /\d+\.\d+ ms/.test(r), `${label} in ${table.join('\n')}`);
    }
    assert.ok(!table.some((x) => /under the lock/.test(x)), 'no lock rows for a back end without one');
  }
});
