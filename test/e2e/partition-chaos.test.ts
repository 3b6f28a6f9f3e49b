/**
 * The partition rig (test/chaos/chaos-rig.ts) on a short seeded schedule: a 3-member etcd and 3
 * node agents, each in its own network namespace, pods coming and going through the native shim
 * on every node while every fault kind is injected once (links down, packets dropped both ways
 * and one way, added latency, a member paused, the leader isolated, a node's agent killed while
 * cut off). The checker of the whole history must find no violation: no address certainly held
 * by two pods at once, every DEL eventually succeeding, nothing held at the end but the warm
 * pools' stock, `ipam check` clean. A failure prints the seed and each violation's trace.
 * Each kind is injected once and no more (about a minute of faults); the long random schedule,
 * every kind many times, is `npm run chaos -- --minutes N`.
 * Seed: PODIPAM_CHAOS_SEED, else a fresh one (printed).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runChaos } from '../chaos/chaos-rig.js';
import { FAULT_KINDS } from '../chaos/chaos-schedule.js';

const seed = process.env.PODIPAM_CHAOS_SEED ? Number(process.env.PODIPAM_CHAOS_SEED) : Math.floor(Math.random() * 2 ** 31);

test(`partition rig, short seeded schedule (seed ${seed}): every fault kind once, no violation in the checked history`, { timeout: 240_000 }, async (t) => {
  // Every kind exactly once, no random extras: the long schedule is `npm run chaos` (docs/testing.md).
  const r = await runChaos({
    seed,
    scheduleMs: 60_000,
    maxFaults: FAULT_KINDS.length,
    faultMs: [2000, 3000],
    settleMs: [800, 1500],
    log: (l) => t.diagnostic(l),
  });
  const replay = `seed ${seed} (replay: PODIPAM_CHAOS_SEED=${seed} node scripts/test.mjs partition-chaos)`;
  t.diagnostic(JSON.stringify({ faults: r.faults, calls: r.report.calls, holds: r.report.holds, seconds: Math.round(r.ms / 1000) }));
  assert.deepEqual(r.unexpectedExits, [], `${replay}: agents exited on their own`);
  assert.equal(r.violations.length, 0, `${replay}: ${r.violations.length} violations:\n${r.violations.slice(0, 10).join('\n')}`);
  assert.deepEqual(Object.keys(r.faults).sort(), [...FAULT_KINDS].sort(), `${replay}: not every fault kind was injected: ${JSON.stringify(r.faults)}`);
  // The history must be worth checking: pods on both networks answered, before and after faults.
  assert.ok(r.report.calls.addOk >= 100, `${replay}: only ${r.report.calls.addOk} successful ADDs`);
  assert.ok(r.report.calls.add > r.report.calls.addOk, `${replay}: no ADD failed at all: were the faults injected?`);
});
