import type { WatchEvent } from './store.js';

/**
 * The consumer side of a watch, shared by the back ends: a producer pushes batches, ends or
 * fails the feed; the consumer iterates it. Batches queue while the consumer is busy (the
 * producers read bounded pages, so memory grows only with changes not yet consumed). The
 * iteration returns once the feed ends (after the queued batches) or the consumer stops
 * (break, return, abort). `onStop` runs once, as soon as the feed is done for any reason, so
 * the producer can release what it holds.
 */
export class WatchFeed implements AsyncIterable<WatchEvent[]> {
  readonly #queue: WatchEvent[][] = [];
  #error: unknown;
  #failed = false;
  #ended = false;
  #wake: (() => void) | undefined;
  #stopped = false;
  #released = false;
  #unlisten: (() => void) | undefined;
  readonly #onStop: () => void;

  constructor(onStop: () => void, signal?: AbortSignal) {
    this.#onStop = onStop;
    // Aborted already: done at once, and nothing was taken that onStop would release.
    if (signal?.aborted) this.#ended = this.#released = true;
    else if (signal !== undefined) {
      const onAbort = () => this.end();
      signal.addEventListener('abort', onAbort, { once: true });
      this.#unlisten = () => signal.removeEventListener('abort', onAbort);
    }
  }

  /** True once the feed ended, failed or its consumer stopped: producers stop producing. */
  get done(): boolean {
    return this.#ended || this.#failed || this.#stopped;
  }

  push(batch: WatchEvent[]): void {
    if (this.done || batch.length === 0) return;
    this.#queue.push(batch);
    this.#notify();
  }

  /** Ends the feed: the consumer gets what is queued, then the iteration returns. */
  end(): void {
    if (this.done) return;
    this.#ended = true;
    this.#release();
    this.#notify();
  }

  /** The consumer gets what is queued, then `error` is thrown. */
  fail(error: unknown): void {
    if (this.done) return;
    this.#failed = true;
    this.#error = error;
    this.#release();
    this.#notify();
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  #release(): void {
    if (this.#released) return;
    this.#released = true;
    this.#unlisten?.();
    this.#onStop();
  }

  #stop(): void {
    this.#stopped = true;
    this.#queue.length = 0;
    this.#release();
    this.#notify(); // a next() waiting meanwhile returns done
  }

  [Symbol.asyncIterator](): AsyncIterator<WatchEvent[]> {
    return {
      next: async (): Promise<IteratorResult<WatchEvent[]>> => {
        for (;;) {
          const batch = this.#queue.shift();
          if (batch !== undefined) return { value: batch, done: false };
          if (this.#failed) {
            this.#stop();
            throw this.#error;
          }
          if (this.#ended || this.#stopped) {
            this.#stop();
            return { value: undefined, done: true };
          }
          await new Promise<void>((resolve) => (this.#wake = resolve));
        }
      },
      return: async (): Promise<IteratorResult<WatchEvent[]>> => {
        this.#stop();
        return { value: undefined, done: true };
      },
    };
  }
}
