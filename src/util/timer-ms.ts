/**
 * `timerMs(ms)`: `ms` as a whole number of milliseconds from 1 to 2^31 - 1, rounded up (never
 * early), so that every timer of a long-lived process asks for one of those. Node's Timeout
 * turns anything below 1 or not a number into 1, as this does, and keeps a fraction, which this
 * does not; above 2^31 - 1 it fires after 1 ms, where this waits 2^31 - 1 (about 24.8 days).
 *
 * Why it matters (measured with V8's --trace-deopt on the agent): Node's timer code has a branch
 * for a delay below 1 ms, and its Timeout objects a field that holds small integers until a
 * fraction arrives. The first zero delay (a loop's first run, started after the warm-up) or
 * fractional one (a jittered back-off) after the agent's warm-up threw away the optimised code
 * of every timer — the per-connection read timeout, socket teardown, the agent's data handler —
 * which then ran in V8's baseline tiers for the agent's life (src/util/stop-optimizing.ts).
 */
const TIMEOUT_MAX = 2 ** 31 - 1;

export function timerMs(ms: number): number {
  return ms >= 1 ? Math.min(Math.ceil(ms), TIMEOUT_MAX) : 1;
}
