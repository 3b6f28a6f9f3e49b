/**
 * Operator actions interleaved with pod starts and stops on a seeded random schedule
 * (test/suites/operator-schedule.ts), answers lost after commit, on an SQLite file and on a
 * 3-member etcd: after every step no address has two holders, no block overlaps another or
 * leaves its pool, every live pod keeps its addresses, and `ipam check` reports nothing.
 *
 * OPERATOR_SEED=<n> replays a schedule, OPERATOR_STEPS=<n> changes its length (the long run:
 * `npm run chaos -- --operator --minutes N`).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { openStore } from '../../src/store/index.js';
import { startEtcd } from '../helpers/etcd.js';
import { makeTempDir } from '../helpers/tmp.js';
import { runOperatorSchedule } from '../suites/operator-schedule.js';

const seed = process.env.OPERATOR_SEED === undefined ? (Date.now() ^ (Math.random() * 2 ** 31)) >>> 0 : Number(process.env.OPERATOR_SEED);
const steps = Number(process.env.OPERATOR_STEPS ?? 80);

test('operator actions, randomized, on SQLite: one address, one holder after every step', { timeout: 300_000 }, async (t) => {
  t.diagnostic(`seed ${seed} (replay: OPERATOR_SEED=${seed} node scripts/test.mjs operator-actions-random)`);
  const tmp = makeTempDir('operator-random');
  const store = await openStore(`sqlite:${join(tmp.path, 'ds.db')}`);
  try {
    const r = await runOperatorSchedule(store, { seed, steps, lose: 0.1 });
    t.diagnostic(`${r.steps.length} steps, ${r.lost} answers lost; ${JSON.stringify(r.counts)}`);
    assert.ok(r.lost > 0, 'no answer was lost: the schedule proved nothing about unknown outcomes');
  } finally {
    await store.close();
    tmp.remove();
  }
});

test('operator actions, randomized, on a 3-member etcd: one address, one holder after every step', { timeout: 300_000 }, async (t) => {
  t.diagnostic(`seed ${seed + 1}`);
  const etcd = await startEtcd({ members: 3 });
  const store = await openStore(etcd.url);
  try {
    const r = await runOperatorSchedule(store, { seed: seed + 1, steps: Math.ceil(steps / 2), lose: 0.1 });
    t.diagnostic(`${r.steps.length} steps, ${r.lost} answers lost; ${JSON.stringify(r.counts)}`);
  } finally {
    await store.close();
    await etcd.stop();
  }
});
