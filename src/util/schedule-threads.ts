/**
 * The agent's thread scheduling (native/sched.c applies; src/util/plan-threads.ts decides):
 * `podipam agent --realtime-priority N` puts the main thread and libuv's pool under SCHED_RR at N
 * so that a pod start does not wait behind the runtime's own work for a CPU (BENCHMARKS.md, "Pod
 * starts under a real runtime"); under `node --single-threaded-gc` V8's helper threads go to
 * SCHED_IDLE, so its compiling after a start stays off the calls' path (BENCHMARKS.md, section 1).
 * Performance only: a refusal is reported, never fatal.
 */
import { readdirSync } from 'node:fs';
import { loadAddon } from './native-addon.js';
import { SCHED_IDLE, SCHED_RR, type ThreadAction, type ThreadPlan, planThreads, uvThreadpoolSize } from './plan-threads.js';

interface SchedAddon {
  setScheduler(tid: number, policy: number, priority: number): boolean;
  policy(): [number, number];
  poolThreadIds(n: number): Promise<number[]>;
}

/** Linux's SCHED_* numbers, as /proc and sched_getscheduler give them. */
const POLICY_NAMES: Readonly<Record<number, string>> = {
  0: 'SCHED_OTHER',
  1: 'SCHED_FIFO',
  2: 'SCHED_RR',
  3: 'SCHED_BATCH',
  5: 'SCHED_IDLE',
  6: 'SCHED_DEADLINE',
};

/** The lowest and highest SCHED_RR priority Linux accepts. */
export const REALTIME_PRIORITY_RANGE = [1, 99] as const;

export class RealtimeError extends Error {
  override readonly name = 'RealtimeError';
  constructor(
    readonly priority: number,
    readonly errno: number | undefined,
    reason: string,
    options?: ErrorOptions,
  ) {
    super(
      `cannot run at real-time priority ${priority} (SCHED_RR): ${reason}${errno === 1 ? ' (needs CAP_SYS_NICE, or an RLIMIT_RTPRIO of at least the priority)' : ''}`,
      options,
    );
  }
}

/**
 * The flags for node itself that the agent is shipped with (deploy/base/daemonset.yaml,
 * deploy/systemd/podipam-agent.service; the benches run it so): the garbage collector on the
 * main thread only, so V8's helper threads can go to SCHED_IDLE.
 */
export const AGENT_NODE_FLAGS: readonly string[] = ['--single-threaded-gc'];

/** Whether this process's V8 runs its garbage collector on the main thread only (`node --single-threaded-gc`). */
export function singleThreadedGc(execArgv: readonly string[] = process.execArgv): boolean {
  return execArgv.some((a) => /^--single[-_]threaded[-_]gc$/.test(a));
}

export interface ThreadScheduling {
  /** Threads put under SCHED_RR, and under SCHED_IDLE. */
  readonly realtime: number;
  readonly idle: number;
  /** Why V8's helpers stayed at their priority when asked to go idle. */
  readonly helpersKept?: string;
}

/**
 * Plans and applies: `realtimePriority` (main thread and pool under SCHED_RR) and `idleHelpers`
 * (V8's helpers under SCHED_IDLE). A real-time refusal throws RealtimeError after the idle part
 * was applied (idling needs no privilege); a thread that exited meanwhile is skipped.
 */
export async function scheduleThreads(o: { readonly realtimePriority?: number; readonly idleHelpers: boolean }): Promise<ThreadScheduling> {
  const addon = loadAddon<SchedAddon>('sched');
  const threads = readdirSync('/proc/self/task').map(Number);
  let pool: number[] | null = null;
  if (o.idleHelpers) {
    const size = uvThreadpoolSize(process.env.UV_THREADPOOL_SIZE);
    const found = [...new Set(await addon.poolThreadIds(size))];
    pool = found.length === size ? found : null;
  }
  const plan: ThreadPlan = planThreads({
    main: process.pid,
    threads,
    pool,
    idleHelpers: o.idleHelpers,
    ...(o.realtimePriority !== undefined ? { realtimePriority: o.realtimePriority } : {}),
  });
  const apply = (a: ThreadAction): number => (addon.setScheduler(a.tid, a.policy, a.priority) ? 1 : 0);
  // Idle first: it needs no privilege, so a real-time refusal below leaves it done.
  let idle = 0;
  for (const a of plan.actions) if (a.policy === SCHED_IDLE) idle += apply(a);
  let realtime = 0;
  try {
    for (const a of plan.actions) if (a.policy === SCHED_RR) realtime += apply(a);
  } catch (e) {
    const err = e as Error & { errno?: number };
    throw new RealtimeError(o.realtimePriority ?? 0, err.errno, err.message, { cause: e });
  }
  return { realtime, idle, ...(plan.helpersKept !== undefined ? { helpersKept: plan.helpersKept } : {}) };
}

/** The calling thread's policy and priority, e.g. `SCHED_RR 1`, `SCHED_OTHER 0`. */
export function schedulingPolicy(): string {
  const [policy, priority] = loadAddon<SchedAddon>('sched').policy();
  return `${POLICY_NAMES[policy] ?? `policy ${policy}`} ${priority}`;
}
