export interface WorkQueueOptions {
  /** Keys processed at once (default 8). */
  readonly workers?: number;
  /** Retries of a failing key before it is dropped (default 8). */
  readonly maxRetries?: number;
  /** First retry delay; doubles on each failure up to maxDelayMs (defaults 20 ms, 5 s). */
  readonly baseDelayMs?: number;
  readonly maxDelayMs?: number;
  /** Handles one key; a throw is a failure to retry. */
  readonly process: (key: string) => Promise<void>;
  /** Called when a key is dropped after its last retry. */
  readonly onGiveUp?: (key: string, error: unknown, attempts: number) => void;
}

/**
 * A keyed work queue with a fixed number of workers, as client-go's rate-limited workqueue:
 * a key is queued at most once; a key added while in flight is processed again after; a key
 * whose handler throws is retried after an exponential back-off, at most `maxRetries` times,
 * then dropped (onGiveUp). Keys run in the order added.
 */
export class WorkQueue {
  readonly #workers: number;
  readonly #maxRetries: number;
  readonly #baseDelayMs: number;
  readonly #maxDelayMs: number;
  readonly #process: (key: string) => Promise<void>;
  readonly #onGiveUp: (key: string, error: unknown, attempts: number) => void;
  #queue: string[] = [];
  #head = 0;
  readonly #queued = new Set<string>();
  readonly #inFlight = new Set<string>();
  readonly #dirty = new Set<string>();
  readonly #failures = new Map<string, number>();
  readonly #timers = new Map<string, NodeJS.Timeout>();
  #running = false;
  #idleWaiters: (() => void)[] = [];

  /** RangeError naming the option for a worker count below 1 or negative retries/delays. */
  constructor(options: WorkQueueOptions) {
    this.#workers = options.workers ?? 8;
    this.#maxRetries = options.maxRetries ?? 8;
    this.#baseDelayMs = options.baseDelayMs ?? 20;
    this.#maxDelayMs = options.maxDelayMs ?? 5000;
    for (const [name, v, min] of [
      ['workers', this.#workers, 1],
      ['maxRetries', this.#maxRetries, 0],
      ['baseDelayMs', this.#baseDelayMs, 0],
      ['maxDelayMs', this.#maxDelayMs, 0],
    ] as const) {
      if (!Number.isInteger(v) || v < min) throw new RangeError(`Cannot create a work queue as '${name}' must be an integer ≥ ${min}: current value is ${v}`);
    }
    this.#process = options.process;
    this.#onGiveUp = options.onGiveUp ?? (() => {});
  }

  /** Keys waiting, in flight, or waiting for a retry. */
  get pending(): number {
    return this.#queued.size + this.#inFlight.size + this.#timers.size;
  }

  /** True when `key` is queued, in flight or waiting for a retry. */
  has(key: string): boolean {
    return this.#queued.has(key) || this.#inFlight.has(key) || this.#timers.has(key);
  }

  /** Starts the workers (keys added before are kept). */
  start(): void {
    this.#running = true;
    this.#pump();
  }

  /** Queues `key` unless it is queued already (in flight: it runs once more afterwards). */
  add(key: string): void {
    if (this.#inFlight.has(key)) {
      this.#dirty.add(key);
      return;
    }
    if (this.#queued.has(key)) return;
    const t = this.#timers.get(key);
    if (t) {
      clearTimeout(t);
      this.#timers.delete(key);
    }
    this.#queued.add(key);
    this.#queue.push(key);
    this.#pump();
  }

  /** Resolves when nothing is queued, in flight or waiting for a retry. */
  idle(): Promise<void> {
    if (this.pending === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /** Stops taking keys, cancels pending retries and waits for the keys in flight. */
  async stop(): Promise<void> {
    this.#running = false;
    for (const t of this.#timers.values()) clearTimeout(t);
    this.#timers.clear();
    this.#queue = [];
    this.#head = 0;
    this.#queued.clear();
    this.#dirty.clear();
    await this.idle();
  }

  #pump(): void {
    // Bounded by the worker count: each turn moves one key into flight.
    while (this.#running && this.#inFlight.size < this.#workers && this.#head < this.#queue.length) {
      const key = this.#queue[this.#head++] as string;
      this.#queued.delete(key);
      this.#inFlight.add(key);
      void this.#run(key);
    }
    if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
    this.#checkIdle();
  }

  async #run(key: string): Promise<void> {
    try {
      await this.#process(key);
      this.#failures.delete(key);
    } catch (e) {
      this.#fail(key, e);
    } finally {
      this.#inFlight.delete(key);
      if (this.#dirty.delete(key) && this.#running && !this.#timers.has(key)) this.add(key);
      this.#pump();
    }
  }

  #fail(key: string, error: unknown): void {
    const n = (this.#failures.get(key) ?? 0) + 1;
    if (n > this.#maxRetries || !this.#running) {
      this.#failures.delete(key);
      this.#onGiveUp(key, error, n);
      return;
    }
    this.#failures.set(key, n);
    const delay = Math.min(this.#maxDelayMs, this.#baseDelayMs * 2 ** (n - 1));
    this.#timers.set(
      key,
      setTimeout(() => {
        this.#timers.delete(key);
        if (this.#running) this.add(key);
        this.#checkIdle();
      }, delay),
    );
  }

  #checkIdle(): void {
    if (this.pending !== 0 || this.#idleWaiters.length === 0) return;
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const w of waiters) w();
  }
}
