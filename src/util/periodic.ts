/**
 * The one periodic-task loop of the daemons (controller resync, serve's GC, the warm pool's
 * refill and write-behind, the agent's pod GC): runs `task` every `intervalMs` — the next run
 * starting `intervalMs` (± jitter) after the previous one ended, so two runs never overlap —
 * until stop(). A failure is reported once per distinct message (a datastore that stays down
 * is one line, not one per tick) and its recovery once; status() says how it is going.
 * The timer is unref'd by default: a loop alone does not keep the process alive.
 */
import type { Log } from '../log/logger.js';
import { timerMs } from './timer-ms.js';

export interface PeriodicOptions {
  /** Names the loop in log lines and status (e.g. "cluster GC"). */
  readonly name: string;
  readonly intervalMs: number;
  readonly task: () => Promise<void> | void;
  /** Delay before the first run (default: intervalMs). */
  readonly firstDelayMs?: number;
  /** Each pause is intervalMs × (1 ± jitter × random), 0 ≤ jitter < 1 (default 0). */
  readonly jitter?: number;
  /** Whether the timer keeps the process alive (default false). */
  readonly keepAlive?: boolean;
  /** Where a failure (warn, once per distinct message) and its recovery (info) are reported. */
  readonly log?: Log;
  /** Called on every failed run (after logging), e.g. to count it in a metric. */
  readonly onError?: (e: unknown) => void;
  /** Source of randomness for the jitter (tests); default Math.random. */
  readonly random?: () => number;
}

export interface PeriodicStatus {
  readonly name: string;
  readonly intervalMs: number;
  readonly runs: number;
  readonly failures: number;
  readonly lastRunAt?: string;
  readonly lastError?: string;
}

export class Periodic {
  readonly #o: PeriodicOptions;
  #timer: NodeJS.Timeout | undefined;
  #current: Promise<void> = Promise.resolve();
  #running = false;
  #busy = false;
  #again = false;
  #runs = 0;
  #failures = 0;
  #lastError: string | undefined;
  #lastRunAt: string | undefined;

  constructor(options: PeriodicOptions) {
    if (!Number.isFinite(options.intervalMs) || options.intervalMs < 0) {
      throw new RangeError(`periodic task "${options.name}": intervalMs must be a number ≥ 0, got ${options.intervalMs}`);
    }
    const j = options.jitter ?? 0;
    if (!(j >= 0 && j < 1)) throw new RangeError(`periodic task "${options.name}": jitter must be in [0, 1), got ${j}`);
    this.#o = options;
  }

  get intervalMs(): number {
    return this.#o.intervalMs;
  }

  /** Schedules the first run (after firstDelayMs, default intervalMs). Idempotent. */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#schedule(this.#o.firstDelayMs ?? this.#pause());
  }

  /**
   * Runs the task now (or, when a run is under way, once more right after it) and resolves
   * when that run has ended. Errors are reported as for a scheduled run, never thrown.
   */
  async runNow(): Promise<void> {
    if (this.#busy) {
      this.#again = true;
      await this.#current;
      if (this.#busy) await this.#current;
      return;
    }
    clearTimeout(this.#timer);
    await this.#run();
  }

  /** No more runs; resolves when the one under way (if any) has ended. */
  async stop(): Promise<void> {
    this.#running = false;
    clearTimeout(this.#timer);
    await this.#current;
  }

  status(): PeriodicStatus {
    return {
      name: this.#o.name,
      intervalMs: this.#o.intervalMs,
      runs: this.#runs,
      failures: this.#failures,
      ...(this.#lastRunAt !== undefined ? { lastRunAt: this.#lastRunAt } : {}),
      ...(this.#lastError !== undefined ? { lastError: this.#lastError } : {}),
    };
  }

  #pause(): number {
    const j = this.#o.jitter ?? 0;
    if (j === 0) return this.#o.intervalMs;
    const r = (this.#o.random ?? Math.random)();
    return Math.max(0, Math.round(this.#o.intervalMs * (1 + j * (2 * r - 1))));
  }

  #schedule(ms: number): void {
    if (!this.#running) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => void this.#run(), timerMs(ms));
    if (this.#o.keepAlive !== true) this.#timer.unref();
  }

  #run(): Promise<void> {
    this.#busy = true;
    this.#current = (async () => {
      try {
        await this.#o.task();
        if (this.#lastError !== undefined) this.#o.log?.info({ task: this.#o.name }, `${this.#o.name} recovered`);
        this.#lastError = undefined;
      } catch (e) {
        const msg = e instanceof Error ? e.message : String(e);
        this.#failures++;
        if (msg !== this.#lastError)
          this.#o.log?.warn({ task: this.#o.name, err: msg }, `${this.#o.name} failed (retrying every ${this.#o.intervalMs} ms): ${msg}`);
        this.#lastError = msg;
        this.#o.onError?.(e);
      } finally {
        this.#runs++;
        this.#lastRunAt = new Date().toISOString();
        this.#busy = false;
      }
      if (this.#again) {
        this.#again = false;
        await this.#run();
        return;
      }
      this.#schedule(this.#pause());
    })();
    return this.#current;
  }
}
