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
 * stop-optimizing.integration.test.ts checks that this V8 honours it. During the warm-up V8
 * optimises sooner than it would (`optimizeEagerly`): what it leaves unoptimised then stays so.
 */
import { setFlagsFromString } from 'node:v8';

/**
 * V8's `--interrupt-budget` in Node 20 (V8 11.3): how much bytecode a function runs between two
 * of the profiler's ticks; V8 optimises a function after a few ticks (more for a larger one).
 * stop-optimizing.integration.test.ts checks it against this node's `--v8-options`.
 */
export const V8_INTERRUPT_BUDGET = 67_584;
/**
 * The budget during the warm-up (`optimizeEagerly`): a 32nd of V8's. With V8's own, a 3 s warm-up
 * on a loaded node (150-200 rounds) left most of the request path unoptimised — 35 functions
 * optimised where the same warm-up with this budget optimised ~500 (V8's --trace-opt, local mode):
 * with V8 stopped after the warm-up, what it left ran in the baseline tiers for the agent's life.
 */
export const WARM_UP_INTERRUPT_BUDGET = 2_112;

/** Whether this process was started with its own --interrupt-budget (then left as it is; Node refuses it in NODE_OPTIONS). */
function budgetGiven(): boolean {
  return process.execArgv.some((a) => /^--interrupt[-_]budget=/.test(a));
}

/**
 * Until `done()`, V8 ticks every function's profiler WARM_UP_INTERRUPT_BUDGET bytes of bytecode
 * run (not V8_INTERRUPT_BUDGET): a warm-up's calls get the code they run optimised sooner. A
 * process started with its own `--interrupt-budget` keeps it. `done()` puts V8's back.
 */
export function optimizeEagerly(): { done(): void } {
  if (budgetGiven()) return { done: () => undefined };
  setFlagsFromString(`--interrupt-budget=${WARM_UP_INTERRUPT_BUDGET}`);
  return { done: () => setFlagsFromString(`--interrupt-budget=${V8_INTERRUPT_BUDGET}`) };
}

export const OPTIMIZE_WHEN = ['warm-up', 'always'] as const;
export type OptimizeWhen = (typeof OPTIMIZE_WHEN)[number];

export function isOptimizeWhen(s: string): s is OptimizeWhen {
  return (OPTIMIZE_WHEN as readonly string[]).includes(s);
}

/**
 * From now on V8's optimised code calls Array.prototype.map, filter, forEach, every… instead of
 * inlining them (`--no-turbo-inline-array-builtins`). Inlined, map makes a holey array where the
 * builtin makes a packed one: an array one function hands another changed its hidden class once
 * the first was optimised, and the second's optimised code, made for the other class, was thrown
 * away (V8's "wrong map"). With V8 optimising during the warm-up only, that code — a CNI result's
 * encoding, the cluster back end's group commit, planning, the SQLite transaction — then ran in
 * the baseline tiers for the agent's life (V8's --trace-deopt: 4 of podipam's functions left so
 * by a warm-up on SQLite, none with this). Set before the warm-up when V8 stops after it.
 */
export function keepArrayKinds(): void {
  setFlagsFromString('--no-turbo-inline-array-builtins');
}

/** From now on V8 optimises nothing more in this process; code it has optimised stays. */
export function stopOptimizing(): void {
  setFlagsFromString('--no-turbofan');
  setFlagsFromString('--no-maglev');
}
