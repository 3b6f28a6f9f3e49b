export interface PollerOptions {
  /** Pause between the end of one tick and the start of the next. */
  readonly intervalMs: number;
  /** One tick; a rejection is logged (once per distinct message) and the next tick still comes. */
  readonly tick: () => Promise<void>;
  readonly log: (line: string) => void;
  /** Names what is polled in log lines (default "poll"). */
  readonly what?: string;
}

/**
 * Runs `tick` again and again, `intervalMs` after the previous one ended — never two at once —
 * until stop(). A failure that repeats (a datastore that stays down) is logged once, and its
 * recovery once, rather than at every tick.
 */
export class Poller {
  readonly #o: PollerOptions;
  #timer: NodeJS.Timeout | undefined;
  #current: Promise<void> = Promise.resolve();
  #running = false;
  #lastError = '';

  constructor(options: PollerOptions) {
    if (!Number.isFinite(options.intervalMs) || options.intervalMs < 0) {
      throw new RangeError(`Cannot poll as 'intervalMs' must be a number ≥ 0: current value is ${options.intervalMs}`);
    }
    this.#o = options;
  }

  /** The pause between ticks. */
  get intervalMs(): number {
    return this.#o.intervalMs;
  }

  /** Schedules the first tick `intervalMs` from now. */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#schedule();
  }

  /** No more ticks; resolves when the one running (if any) has ended. */
  async stop(): Promise<void> {
    this.#running = false;
    clearTimeout(this.#timer);
    await this.#current;
  }

  #schedule(): void {
    if (!this.#running) return;
    this.#timer = setTimeout(() => {
      this.#current = this.#o
        .tick()
        .then(() => {
          if (this.#lastError) this.#o.log(`${this.#o.what ?? 'poll'} recovered`);
          this.#lastError = '';
        })
        .catch((e: unknown) => {
          const msg = e instanceof Error ? e.message : String(e);
          if (msg !== this.#lastError) this.#o.log(`${this.#o.what ?? 'poll'} failed (retrying every ${this.#o.intervalMs} ms): ${msg}`);
          this.#lastError = msg;
        })
        .finally(() => this.#schedule());
    }, this.#o.intervalMs);
  }
}
