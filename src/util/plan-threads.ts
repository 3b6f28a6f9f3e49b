/**
 * Which scheduling policy each thread of the agent gets (pure; src/util/schedule-threads.ts
 * reads the threads and applies the plan). A Node.js process has three kinds of threads: the
 * main thread (every call's work), libuv's work pool (file system, DNS: the main thread waits on
 * its answers) and the rest — V8's platform workers (the optimizing compiler and, unless V8 runs
 * with `--single-threaded-gc`, the garbage collector's helpers), Node's delayed-task and
 * inspector-signal threads.
 *
 * - `realtimePriority`: the main thread and the pool under SCHED_RR at it, so a pod start's ADD
 *   never waits behind the runtime for a CPU (the helpers too, unless they go idle).
 * - `idleHelpers`: the helpers under SCHED_IDLE: they compile only on a CPU nothing else wants,
 *   so the first thousands of calls after a start do not wait for a CPU behind V8 optimizing
 *   them. Safe only when no pause of the main thread can wait on a helper: the caller sets it
 *   only when V8 runs with `--single-threaded-gc` (a starved compile job leaves code in a lower
 *   tier for longer; a starved GC helper would hold the main thread's pause).
 * - A pool that could not be told apart from the helpers (`pool: null`) leaves the helpers as
 *   they are: an idle pool thread would starve the main thread's own I/O.
 */

/** Linux's policy numbers (sched.h), as sched_setscheduler(2) and /proc take them. */
export const SCHED_OTHER = 0;
export const SCHED_RR = 2;
export const SCHED_IDLE = 5;

export interface ThreadAction {
  readonly tid: number;
  readonly policy: typeof SCHED_OTHER | typeof SCHED_RR | typeof SCHED_IDLE;
  readonly priority: number;
  readonly role: 'main' | 'pool' | 'helper';
}

export interface ThreadPlan {
  readonly actions: readonly ThreadAction[];
  /** Why the helpers were asked to go idle and were not (undefined when they went, or were not asked). */
  readonly helpersKept?: string;
}

export interface ThreadPlanInput {
  /** The process id: the main thread's id. */
  readonly main: number;
  /** Every thread id of the process (/proc/self/task). */
  readonly threads: readonly number[];
  /** libuv's pool threads, or null when they could not all be found. */
  readonly pool: readonly number[] | null;
  readonly realtimePriority?: number;
  readonly idleHelpers: boolean;
}

export function planThreads(input: ThreadPlanInput): ThreadPlan {
  const pool = new Set(input.pool ?? []);
  const rt = input.realtimePriority;
  const goIdle = input.idleHelpers && input.pool !== null;
  const actions: ThreadAction[] = [];
  for (const tid of input.threads) {
    const role = tid === input.main ? 'main' : pool.has(tid) ? 'pool' : 'helper';
    if (role === 'helper' && goIdle) actions.push({ tid, role, policy: SCHED_IDLE, priority: 0 });
    else if (rt !== undefined) actions.push({ tid, role, policy: SCHED_RR, priority: rt });
  }
  return input.idleHelpers && !goIdle ? { actions, helpersKept: "libuv's work pool could not be told apart from V8's helpers" } : { actions };
}

/**
 * The size of libuv's work pool, computed as libuv does from UV_THREADPOOL_SIZE (src/threadpool.c:
 * 4 by default, atoi of the value, 0 taken as 1, capped at 1024 — a negative value wraps to a
 * large unsigned number and is capped).
 */
export function uvThreadpoolSize(value: string | undefined): number {
  if (value === undefined) return 4;
  const m = /^\s*([+-]?\d+)/.exec(value);
  const n = m === null ? 0 : Number(m[1]);
  if (n === 0) return 1;
  if (n < 0 || n > 1024) return 1024;
  return n;
}
