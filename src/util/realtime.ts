/**
 * Real-time scheduling of the whole process (native/sched.c): every thread to SCHED_RR at a
 * priority, children reset to ordinary scheduling. `podipam agent --realtime-priority N` uses it
 * so that a pod start does not wait behind the runtime's own work for a CPU (BENCHMARKS.md,
 * "Pod starts under a real runtime"). Performance only: a refusal is reported, never fatal.
 */
import { loadAddon } from './native-addon.js';

interface SchedAddon {
  setRealtime(priority: number): number;
  policy(): [number, number];
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

/** Every thread of this process to SCHED_RR at `priority`; the number of threads changed. RealtimeError on refusal. */
export function setRealtimePriority(priority: number): number {
  try {
    return loadAddon<SchedAddon>('sched').setRealtime(priority);
  } catch (e) {
    const err = e as Error & { errno?: number };
    throw new RealtimeError(priority, err.errno, err.message, { cause: e });
  }
}

/** The calling thread's policy and priority, e.g. `SCHED_RR 1`, `SCHED_OTHER 0`. */
export function schedulingPolicy(): string {
  const [policy, priority] = loadAddon<SchedAddon>('sched').policy();
  return `${POLICY_NAMES[policy] ?? `policy ${policy}`} ${priority}`;
}
