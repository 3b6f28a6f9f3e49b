/**
 * When V8 may optimise the agent's code (`podipam agent --optimize`).
 *
 * V8 compiles the functions it optimises (TurboFan) on a helper thread, and throws optimised code
 * away when a call takes a path its assumptions did not cover (a deoptimisation), to optimise it
 * again later. On a small node that thread takes the CPU a pod start's processes wait for: the
 * first thousands of pod starts after an agent's start paid for it in their tail
 * (BENCHMARKS.md, question 1). With `warm-up` (the default) V8 optimises while the agent's
 * warm-up runs the request path and never after: what it optimised stays (until a
 * deoptimisation drops it to the baseline tiers for good), nothing compiles behind a pod's call.
 * Measured with the bench's driver on 2 vCPUs, the first 1,000 ADD/DEL pairs after a start
 * (local mode, 3 runs): ADD p99 0.37-0.38x host-local against 0.63-0.93x with `always` (V8's
 * defaults), DEL p99 0.32-0.40x against 0.69-0.79x, the median ~0.04 ms dearer, CPU per call no
 * more. Code V8 throws away later (a call shaped unlike the warm-up's; objects the code was built
 * around collected) stays in the baseline tiers: under containerd the agent's ADD p99 was over
 * 5 ms in 2 of 14 runs (docs/agent.md).
 *
 * Applied with `v8.setFlagsFromString` turning V8's optimising compilers off (`--no-turbofan`,
 * `--no-maglev`: the flags its tier-up decision reads each time; code may then tier up only to
 * the baseline compiler, Sparkplug, which compiles on the main thread in microseconds). Jobs
 * already queued finish; a function deoptimised later stays in the baseline tiers. Node leaves
 * V8's flags writable after start, though its docs call changing them then unpredictable:
 * stop-optimizing.integration.test.ts checks that this V8 honours it.
 */
import { setFlagsFromString } from 'node:v8';

export const OPTIMIZE_WHEN = ['warm-up', 'always'] as const;
export type OptimizeWhen = (typeof OPTIMIZE_WHEN)[number];

export function isOptimizeWhen(s: string): s is OptimizeWhen {
  return (OPTIMIZE_WHEN as readonly string[]).includes(s);
}

/** From now on V8 optimises nothing more in this process; code it has optimised stays. */
export function stopOptimizing(): void {
  setFlagsFromString('--no-turbofan');
  setFlagsFromString('--no-maglev');
}
