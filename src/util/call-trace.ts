/**
 * Where a call's time goes, for diagnosing latency (`PODIPAM_TRACE=1`): the agent opens a span
 * per call (`traceCall`), the back ends add the time of their phases to it (`tracePhase`: lock
 * wait, work under the lock, queue wait, datastore), and the agent writes one line per call on
 * stderr. Off (the default) nothing is allocated and `tracePhase` returns at once: the hot path
 * pays one boolean test.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { readFileSync } from 'node:fs';
import { PerformanceObserver, performance } from 'node:perf_hooks';

export const TRACING = process.env.PODIPAM_TRACE === '1';

const spans = TRACING ? new AsyncLocalStorage<Record<string, number>>() : undefined;

/** Runs `fn` with a fresh span (when tracing); returns its result and the span's phases. */
export function traceCall<T>(fn: () => Promise<T>): { result: Promise<T>; phases: Record<string, number> } {
  const phases: Record<string, number> = {};
  return { result: spans ? spans.run(phases, fn) : fn(), phases };
}

/** Runs `fn` outside any call's span (work done for several calls adds to each one's span itself). */
export function untraced<T>(fn: () => T): T {
  return spans ? spans.exit(fn) : fn();
}

/** Adds `ms` to phase `name` of the current call's span (nothing when not tracing). */
export function tracePhase(name: string, ms: number): void {
  if (!spans) return;
  const s = spans.getStore();
  if (s) s[name] = (s[name] ?? 0) + ms;
}

/**
 * The current call's span, to add phases to from another async context (a queue drained by
 * whichever call came first): undefined when not tracing.
 */
export function currentSpan(): Record<string, number> | undefined {
  return spans?.getStore();
}

/** Adds `ms` to phase `name` of `span` (from currentSpan). */
export function addPhase(span: Record<string, number> | undefined, name: string, ms: number): void {
  if (span) span[name] = (span[name] ?? 0) + ms;
}

/**
 * This thread's time on a CPU and waiting for one (ms, /proc/thread-self/schedstat): a phase's
 * wall time minus both is time blocked in the kernel (I/O, fsync). Zeros when not tracing.
 */
export function schedMs(): { cpu: number; runq: number } {
  if (!spans) return { cpu: 0, runq: 0 };
  try {
    const [cpu, runq] = readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ').map(Number);
    return { cpu: (cpu ?? 0) / 1e6, runq: (runq ?? 0) / 1e6 };
  } catch {
    return { cpu: 0, runq: 0 };
  }
}

/** Adds `name`.cpu / .runq / .blocked of the phase that began at `start` (schedMs) and `t0` (performance.now). */
export function traceSched(span: Record<string, number> | undefined, name: string, start: { cpu: number; runq: number }, t0: number): void {
  if (!span) return;
  const end = schedMs();
  const cpu = end.cpu - start.cpu;
  const runq = end.runq - start.runq;
  addPhase(span, `${name}Cpu`, cpu);
  addPhase(span, `${name}Runq`, runq);
  addPhase(span, `${name}Blocked`, performance.now() - t0 - cpu - runq);
}

/**
 * When tracing: one `podipam-trace-gc START_US DURATION_US` line on stderr per garbage
 * collection of this process (START on CLOCK_MONOTONIC in µs, the clock of the calls' `at`), so
 * a bench can tell a call slowed by a GC pause from one that waited for a CPU. Written when
 * Node reports the pause (after it), never from inside a call. No-op when not tracing.
 */
export function traceGcPauses(): void {
  if (!spans) return;
  // performance.now() and process.hrtime count from the same monotonic clock: one offset maps them.
  const offsetUs = Number(process.hrtime.bigint() / 1000n) - performance.now() * 1000;
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) process.stderr.write(`podipam-trace-gc ${Math.round(offsetUs + e.startTime * 1000)} ${Math.round(e.duration * 1000)}\n`);
  }).observe({ entryTypes: ['gc'] });
}
