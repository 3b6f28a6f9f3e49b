import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { Periodic } from './periodic.js';
import { recordingLog } from '../log/logger.js';

test('Periodic: runs again intervalMs after each run ended, never two at once; stop waits for the run under way', async () => {
  let inFlight = 0;
  let maxInFlight = 0;
  let runs = 0;
  const p = new Periodic({
    name: 't',
    intervalMs: 5,
    firstDelayMs: 0,
    task: async () => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await sleep(15);
      runs++;
      inFlight--;
    },
  });
  p.start();
  p.start();
  // Until three runs ended (bounded): a fixed wait would count the machine's load, not the runs.
  const deadline = Date.now() + 10_000;
  while (runs < 3 && Date.now() < deadline) await sleep(5);
  await sleep(7); // inside the next run's sleep, or about to start it
  await p.stop();
  const after = runs;
  assert.equal(inFlight, 0, 'stop resolved while a run was under way');
  assert.ok(after >= 3, `ran ${after} times in 10 s`);
  assert.equal(maxInFlight, 1);
  await sleep(40);
  assert.equal(runs, after, 'ran after stop');
  assert.equal(p.status().runs, after);
});

test('Periodic: a failure is logged once per distinct message and its recovery once; status names the last error', async () => {
  const log = recordingLog();
  const errors = ['down', 'down', 'down', 'other', undefined, undefined];
  let i = 0;
  let seen = 0;
  const p = new Periodic({
    name: 'resync',
    intervalMs: 0,
    log,
    onError: () => seen++,
    task: () => {
      const e = errors[i++];
      if (e !== undefined) throw new Error(e);
    },
  });
  for (let k = 0; k < 4; k++) await p.runNow();
  assert.equal(p.status().lastError, 'other');
  assert.equal(p.status().failures, 4);
  assert.equal(seen, 4);
  await p.runNow();
  await p.runNow();
  assert.equal(p.status().lastError, undefined);
  assert.deepEqual(
    log.records.map((r) => [r.level, r.msg]),
    [
      ['warn', 'resync failed (retrying every 0 ms): down'],
      ['warn', 'resync failed (retrying every 0 ms): other'],
      ['info', 'resync recovered'],
    ],
  );
  assert.equal(log.records[0]!.fields.task, 'resync');
});

test('Periodic: runNow during a run queues exactly one more run and resolves after it', async () => {
  let runs = 0;
  const p = new Periodic({
    name: 't',
    intervalMs: 10_000,
    task: async () => {
      await sleep(20);
      runs++;
    },
  });
  const a = p.runNow();
  await sleep(5);
  const b = p.runNow();
  const c = p.runNow();
  await Promise.all([a, b, c]);
  assert.equal(runs, 2);
  await p.stop();
});

test('Periodic: jitter spreads pauses within intervalMs × (1 ± jitter); bad options are refused naming the task', async () => {
  assert.throws(() => new Periodic({ name: 'gc', intervalMs: -1, task: () => {} }), /"gc".*intervalMs.*-1/);
  assert.throws(() => new Periodic({ name: 'gc', intervalMs: 10, jitter: 1, task: () => {} }), /"gc".*jitter.*1/);
  const firstRunAfter = async (r: number): Promise<number> => {
    const t0 = Date.now();
    let at = 0;
    const p = new Periodic({
      name: 'j',
      intervalMs: 200,
      jitter: 0.5,
      random: () => r,
      task: () => {
        at ||= Date.now() - t0;
      },
    });
    p.start();
    while (at === 0) await sleep(5);
    await p.stop();
    return at;
  };
  const early = await firstRunAfter(0); // 200 × 0.5 = 100 ms
  const late = await firstRunAfter(0.999); // ≈ 200 × 1.5 = 300 ms
  assert.ok(early >= 95 && early < 200, `first run after ${early} ms, expected ≈ 100`);
  assert.ok(late >= 290, `first run after ${late} ms, expected ≈ 300`);
});
