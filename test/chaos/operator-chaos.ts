/**
 * The long run of the operator schedule (test/suites/operator-schedule.ts): schedules of `steps`
 * steps, seeds `seed`, `seed + 1`, …, alternating a fresh SQLite file and a freshly wiped
 * 3-member etcd, until `minutes` have passed. Returns the exit code: 0, or 1 at the first
 * violation (printed with its seed and steps).
 */
import { join } from 'node:path';
import { openStore } from '../../src/store/index.js';
import { startEtcd } from '../helpers/etcd.js';
import { makeTempDir } from '../helpers/tmp.js';
import { wipeStore } from '../helpers/crash-points.js';
import { runOperatorSchedule } from '../suites/operator-schedule.js';

export async function runOperatorChaos(o: { readonly seed: number; readonly minutes: number; readonly steps: number }): Promise<number> {
  const end = Date.now() + o.minutes * 60_000;
  const etcd = await startEtcd({ members: 3 });
  const tmp = makeTempDir('operator-chaos');
  let runs = 0;
  let lost = 0;
  try {
    for (let seed = o.seed; Date.now() < end; seed++, runs++) {
      const onEtcd = runs % 2 === 1;
      const store = await openStore(onEtcd ? etcd.url : `sqlite:${join(tmp.path, `ds${runs}.db`)}`);
      try {
        if (onEtcd) await wipeStore(store);
        const r = await runOperatorSchedule(store, { seed, steps: o.steps, lose: 0.1 });
        lost += r.lost;
        console.log(`${new Date().toISOString()} seed ${seed} on ${onEtcd ? 'etcd' : 'SQLite'}: ${r.steps.length} steps, ${r.lost} answers lost, no violation`);
      } catch (e) {
        console.log(`FAILED: seed ${seed} on ${onEtcd ? 'etcd' : 'SQLite'}: ${(e as Error).message}`);
        console.log(`replay: OPERATOR_SEED=${onEtcd ? seed - 1 : seed} OPERATOR_STEPS=${o.steps} node scripts/test.mjs operator-actions-random`);
        return 1;
      } finally {
        await store.close();
      }
    }
  } finally {
    await etcd.stop();
    tmp.remove();
  }
  console.log(JSON.stringify({ runs, steps: runs * o.steps, lost, violations: 0 }));
  return 0;
}
