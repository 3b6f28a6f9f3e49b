/**
 * `pause(ms, signal)`: resolves after `ms`, or at once when `signal` aborts (never rejects). The
 * timer and the abort listener are both removed when either fires, so a loop that pauses between
 * retries for as long as a process lives holds no listener per round.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { timerMs } from './timer-ms.js';

export async function pause(ms: number, signal: AbortSignal): Promise<void> {
  try {
    await sleep(timerMs(ms), undefined, { signal });
  } catch (e) {
    if ((e as Error).name !== 'AbortError') throw e;
  }
}
