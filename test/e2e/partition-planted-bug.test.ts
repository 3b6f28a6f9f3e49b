/**
 * The partition rig's checker catches a real bug: with the planted bug 'assign-skips-block-cas'
 * armed in every agent and plugin (src/util/planted-bug.ts: assignment txns no longer compare
 * the revisions of the blocks they write), pods on three nodes racing for the same two blocks
 * must give a history the checker rejects (an address certainly held by two pods at once, or
 * the datastore left inconsistent). Without the bug, the same run is clean (partition-chaos).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runChaos } from '../chaos/chaos-rig.js';

const seed = process.env.PODIPAM_CHAOS_SEED ? Number(process.env.PODIPAM_CHAOS_SEED) : Math.floor(Math.random() * 2 ** 31);

test(`partition rig with one CAS condition removed (seed ${seed}): the checker finds the duplicate`, { timeout: 180_000 }, async (t) => {
  const r = await runChaos({
    seed,
    scheduleMs: 15_000,
    noFaults: true,
    lanes: 4,
    weights: { warm: 0, blocks: 1 },
    plant: 'assign-skips-block-cas',
    log: (l) => t.diagnostic(l),
  });
  const kinds = [...new Set(r.report.violations.map((v) => v.kind))];
  t.diagnostic(JSON.stringify({ calls: r.report.calls, violations: r.report.violations.length, kinds }));
  if (r.violations[0]) t.diagnostic(r.violations[0]);
  assert.ok(r.report.calls.addOk >= 50, `only ${r.report.calls.addOk} successful ADDs`);
  assert.ok(
    kinds.includes('double-hold') || kinds.includes('check-disagrees'),
    `seed ${seed}: the checker found no duplicate and no inconsistency with block CAS off (violations: ${JSON.stringify(kinds)})`,
  );
});
