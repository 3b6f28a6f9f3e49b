/**
 * A periodic loop for the server's background jobs (cluster GC): runs `task` every
 * `intervalMs`, the next run starting after the previous one ended, until stopped.
 */
export class Ticker {
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> = Promise.resolve();
  #stopped = false;
  #runs = 0;
  #lastError: string | undefined;
  #lastRunAt: string | undefined;

  constructor(
    readonly name: string,
    readonly intervalMs: number,
    readonly task: () => Promise<void>,
  ) {}

  start(): void {
    this.#schedule(Math.min(this.intervalMs, 1000));
  }

  #schedule(ms: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#running = this.task()
        .then(() => {
          this.#lastError = undefined;
        })
        .catch((e: unknown) => {
          this.#lastError = e instanceof Error ? e.message : String(e);
        })
        .finally(() => {
          this.#runs++;
          this.#lastRunAt = new Date().toISOString();
          this.#schedule(this.intervalMs);
        });
    }, ms);
    this.#timer.unref?.();
  }

  status(): { runs: number; lastRunAt?: string; lastError?: string; intervalMs: number } {
    return { runs: this.#runs, intervalMs: this.intervalMs, ...(this.#lastRunAt ? { lastRunAt: this.#lastRunAt } : {}), ...(this.#lastError ? { lastError: this.#lastError } : {}) };
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    await this.#running;
  }
}
