/**
 * How long one SQLite call may wait for another connection's lock inside SQLite itself (its
 * busy timeout), in milliseconds. better-sqlite3 is synchronous: that wait blocks the event
 * loop, so it stays a few milliseconds and longer waits happen between attempts, in
 * retryWhileBusy, where the event loop runs everything else.
 */
export const BUSY_SLICE_MS = 5;

// Pauses between attempts, in ms, then the last one repeated: short at first, because most
// locks are other plugins' sub-millisecond commits; never long, so a released lock is taken
// soon. Each pause gets up to half again of random jitter, so waiters do not retry in step.
const PAUSES_MS = [1, 2, 4, 8, 16, 25];

/** SQLite's "database is locked" family: the statement applied nothing and may be repeated. */
export function isBusy(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'));
}

/**
 * Runs `attempt` (synchronous, blocking at most about BUSY_SLICE_MS on a lock) until it
 * returns or throws something other than a busy error. After a busy error it waits on a
 * timer and tries again, until `timeoutMs` have passed since the first attempt; then the last
 * busy error is thrown. `stillOpen` is asked before every retry (throw there to stop, e.g. the
 * store was closed meanwhile). Other errors are thrown at once.
 */
export async function retryWhileBusy<T>(attempt: () => T, timeoutMs: number, stillOpen: () => void = () => {}): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (let n = 0; ; n++) {
    try {
      return attempt();
    } catch (e) {
      const left = deadline - performance.now();
      if (!isBusy(e) || left <= 0) throw e;
      const pause = PAUSES_MS[Math.min(n, PAUSES_MS.length - 1)] as number;
      // Whole milliseconds rounded up, at least 1 (left > 0): as every timer of the agent asks (src/util/timer-ms.ts says why).
      await new Promise((resolve) => setTimeout(resolve, Math.ceil(Math.min(left, pause * (1 + Math.random() / 2)))));
      stillOpen();
    }
  }
}
