import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SCHED_IDLE, SCHED_RR, planThreads, uvThreadpoolSize } from './plan-threads.js';

const threads = [100, 101, 102, 103, 104, 105, 106];
const pool = [105, 106];
const policies = (p: ReturnType<typeof planThreads>): Record<number, string> =>
  Object.fromEntries(p.actions.map((a) => [a.tid, `${a.role} ${a.policy}/${a.priority}`]));

test('planThreads: real-time only: every thread under SCHED_RR at the priority', () => {
  const p = planThreads({ main: 100, threads, pool: null, realtimePriority: 3, idleHelpers: false });
  assert.equal(p.actions.length, threads.length);
  assert.ok(p.actions.every((a) => a.policy === SCHED_RR && a.priority === 3));
  assert.equal(p.helpersKept, undefined);
});

test('planThreads: idle helpers with real time: main and pool SCHED_RR, every other thread SCHED_IDLE', () => {
  const p = planThreads({ main: 100, threads, pool, realtimePriority: 1, idleHelpers: true });
  assert.deepEqual(policies(p), {
    100: `main ${SCHED_RR}/1`,
    101: `helper ${SCHED_IDLE}/0`,
    102: `helper ${SCHED_IDLE}/0`,
    103: `helper ${SCHED_IDLE}/0`,
    104: `helper ${SCHED_IDLE}/0`,
    105: `pool ${SCHED_RR}/1`,
    106: `pool ${SCHED_RR}/1`,
  });
});

test('planThreads: idle helpers alone: main and pool untouched', () => {
  const p = planThreads({ main: 100, threads, pool, idleHelpers: true });
  assert.deepEqual(
    p.actions.map((a) => a.tid),
    [101, 102, 103, 104],
  );
  assert.ok(p.actions.every((a) => a.policy === SCHED_IDLE));
});

test('planThreads: a pool not told apart keeps the helpers at their priority, and says why', () => {
  const p = planThreads({ main: 100, threads, pool: null, realtimePriority: 2, idleHelpers: true });
  assert.ok(
    p.actions.every((a) => a.policy === SCHED_RR),
    'real time still applies to every thread',
  );
  assert.match(p.helpersKept ?? '', /pool could not be told apart/);
  assert.deepEqual(planThreads({ main: 100, threads, pool: null, idleHelpers: true }).actions, []);
});

test('planThreads: neither asked: nothing to do', () => {
  assert.deepEqual(planThreads({ main: 100, threads, pool, idleHelpers: false }), { actions: [] });
});

test("uvThreadpoolSize: libuv's own reading of UV_THREADPOOL_SIZE", () => {
  assert.equal(uvThreadpoolSize(undefined), 4);
  assert.equal(uvThreadpoolSize('8'), 8);
  assert.equal(uvThreadpoolSize(' 16x'), 16);
  assert.equal(uvThreadpoolSize('0'), 1);
  assert.equal(uvThreadpoolSize('many'), 1);
  assert.equal(uvThreadpoolSize('5000'), 1024);
  assert.equal(uvThreadpoolSize('-2'), 1024);
});
