/**
 * `followPrefix`: the one list → watch → relist loop over a store prefix.
 *
 * It asks the caller for a listing (`list(cause)`: read the state, return the store revision it
 * was read at), watches `prefix` from that revision + 1 and hands every batch to `onEvents`, one
 * at a time, in revision order, each revision once. When the watch can no longer follow it lists
 * again and watches from the new listing's revision:
 * - StoreCompactedError (the history after the last revision seen is gone): at once;
 * - any other failure of the watch, of `onEvents` or of `list` itself: `onError` is told, then
 *   after a back-off that doubles from `backoff.firstMs` up to `backoff.maxMs` (reset once a batch
 *   was delivered), so an outage costs at most one attempt per `maxMs`;
 * - `relist(cause)` from the caller (it found the state stale by other means): at once.
 * `list` gets the reason it is called: undefined the first time, then the error (or relist's
 * cause) that ended the watch; a retried listing gets the same reason again.
 *
 * It ends when `signal` aborts (promptly: a pause or a watch is cut short, no batch is delivered
 * after the abort; a `list` or `onEvents` under way is awaited) or when the store is closed (the
 * watch ends without error). It never rejects: every failure goes to `onError`.
 */
import { pause } from '../util/pause.js';
import { StoreCompactedError } from './errors.js';
import type { Store, WatchEvent } from './store.js';

export interface FollowBackoff {
  /** The pause after the first failure in a row, ms. */
  readonly firstMs: number;
  /** The longest pause, ms. */
  readonly maxMs: number;
}

export const DEFAULT_FOLLOW_BACKOFF: FollowBackoff = { firstMs: 250, maxMs: 5000 };

export interface FollowPrefixOptions {
  readonly store: Store;
  readonly prefix: string;
  /** Aborting it ends the follow. */
  readonly signal: AbortSignal;
  /**
   * Reads the state under the prefix (or restores it from elsewhere) and returns the store
   * revision it is current at: the watch starts after it. `cause`: see the module comment.
   */
  readonly list: (cause: unknown) => Promise<number>;
  /** One batch of the watch (whole revisions, each after the last listing's revision). */
  readonly onEvents: (events: WatchEvent[]) => void | Promise<void>;
  /**
   * A failure (not a compaction), before the pause of `retryInMs`; `stage` says what failed: the
   * watch (or onEvents), or a listing.
   */
  readonly onError?: (error: unknown, stage: 'watch' | 'list', retryInMs: number) => void;
  readonly backoff?: FollowBackoff;
}

export interface PrefixFollow {
  /** Resolves once the follow ended (the signal aborted, or the store closed). */
  readonly done: Promise<void>;
  /**
   * Ends the current watch (batches not yet delivered are dropped) and lists again with `cause`;
   * called while listing or pausing, the next listing gets `cause` (and one more follows a
   * listing under way).
   */
  relist(cause: unknown): void;
}

/** The pause after `failures` failures in a row (≥ 1): firstMs, doubling, at most maxMs. */
export function followBackoffMs(backoff: FollowBackoff, failures: number): number {
  return Math.min(backoff.maxMs, backoff.firstMs * 2 ** Math.min(Math.max(failures - 1, 0), 30));
}

function checkBackoff(b: FollowBackoff): void {
  if (!Number.isFinite(b.firstMs) || b.firstMs < 0) {
    throw new RangeError(`Cannot follow a prefix as 'backoff.firstMs' must be a non-negative number: current value is ${b.firstMs}`);
  }
  if (!Number.isFinite(b.maxMs) || b.maxMs < b.firstMs) {
    throw new RangeError(`Cannot follow a prefix as 'backoff.maxMs' must be a number ≥ backoff.firstMs (${b.firstMs}): current value is ${b.maxMs}`);
  }
}

/** Starts following (see the module comment); throws RangeError at once for a bad `backoff`. */
export function followPrefix(options: FollowPrefixOptions): PrefixFollow {
  const backoff = options.backoff ?? DEFAULT_FOLLOW_BACKOFF;
  checkBackoff(backoff);
  const { store, prefix, signal } = options;
  /** Set by relist(): the reason for the next listing. */
  let requested: { cause: unknown } | undefined;
  let watchAc: AbortController | undefined;
  let failures = 0;

  const fail = async (error: unknown, stage: 'watch' | 'list'): Promise<void> => {
    failures++;
    const retryInMs = followBackoffMs(backoff, failures);
    options.onError?.(error, stage, retryInMs);
    await pause(retryInMs, signal);
  };

  /** Lists until a listing succeeds (or the signal aborts); the revision, or undefined when aborted. */
  const listUntilDone = async (cause: unknown): Promise<number | undefined> => {
    for (;;) {
      if (signal.aborted) return undefined;
      if (requested !== undefined) {
        cause = requested.cause;
        requested = undefined;
      }
      try {
        const rev = await options.list(cause);
        if (signal.aborted) return undefined;
        if (requested === undefined) return rev;
      } catch (e) {
        if (signal.aborted) return undefined;
        await fail(e, 'list');
      }
    }
  };

  /** Watches from `rev` + 1 until the watch ends: the error that ended it, or undefined (aborted, closed). */
  const watchFrom = async (rev: number): Promise<{ cause: unknown } | undefined> => {
    // Aborted between the listing and here (an await apart): the listener below would never fire.
    if (signal.aborted) return undefined;
    const ac = new AbortController();
    watchAc = ac;
    const stop = (): void => ac.abort();
    signal.addEventListener('abort', stop, { once: true });
    try {
      for await (const batch of store.watch(prefix, rev + 1, { signal: ac.signal })) {
        if (ac.signal.aborted) break;
        await options.onEvents(batch);
        failures = 0;
      }
    } catch (e) {
      if (signal.aborted) return undefined;
      if (!(e instanceof StoreCompactedError)) await fail(e, 'watch');
      return { cause: e };
    } finally {
      watchAc = undefined;
      signal.removeEventListener('abort', stop);
    }
    if (signal.aborted) return undefined;
    const asked = requested;
    requested = undefined;
    return asked; // relist() ended it, or the store was closed (undefined)
  };

  const loop = async (): Promise<void> => {
    let cause: unknown = undefined;
    for (;;) {
      const rev = await listUntilDone(cause);
      if (rev === undefined) return;
      const ended = await watchFrom(rev);
      if (ended === undefined) return;
      cause = ended.cause;
    }
  };

  return {
    done: loop(),
    relist(cause: unknown): void {
      requested = { cause };
      watchAc?.abort();
    },
  };
}
