/**
 * One `ipam check` shared by everyone who asks: the dashboard's panel, API clients and the GC
 * loop. A check reads every record of the store (seconds on a 150,000-pod store), so a report
 * is reused while it is younger than the caller's `maxAgeMs` — never younger than five times
 * the last run's duration, which caps the share of time spent checking at about 20% however
 * many dashboards are open — and callers arriving during a run wait for that run.
 * (A fresh request that arrives during a run shares that run, which started before it: the
 * answer reflects the store at most one check-duration earlier.)
 */
import type { CheckReport } from '../../cluster/index.js';

export interface CheckedReport extends CheckReport {
  readonly checkedAt: string;
  /** How long the check took, in milliseconds. */
  readonly tookMs: number;
}

export class CheckCache {
  readonly #run: () => Promise<CheckReport>;
  #last: { report: CheckedReport; at: number } | undefined;
  #inFlight: Promise<CheckedReport> | undefined;
  #lastTookMs = 0;

  constructor(run: () => Promise<CheckReport>) {
    this.#run = run;
  }

  /**
   * A report at most `maxAgeMs` old (or 5× the last duration, if longer). `maxAgeMs` 0 asks
   * for a fresh run (still shared with the callers that arrive while it runs).
   */
  get(maxAgeMs: number): Promise<CheckedReport> {
    const floor = maxAgeMs === 0 ? -1 : Math.max(maxAgeMs, 5 * this.#lastTookMs);
    if (this.#last && Date.now() - this.#last.at <= floor) return Promise.resolve(this.#last.report);
    if (this.#inFlight) return this.#inFlight;
    const started = Date.now();
    const p = this.#run().then(
      (r) => {
        const tookMs = Date.now() - started;
        this.#lastTookMs = tookMs;
        const report = {
          checkedAt: new Date(started).toISOString(),
          tookMs,
          leaks: r.leaks,
          problems: r.problems,
          ...(r.stickyHolds ? { stickyHolds: r.stickyHolds } : {}),
          ...(r.borrowed ? { borrowed: r.borrowed } : {}),
        };
        if (this.#inFlight === p) {
          this.#last = { report, at: started };
          this.#inFlight = undefined;
        }
        return report;
      },
      (e: unknown) => {
        if (this.#inFlight === p) this.#inFlight = undefined;
        throw e;
      },
    );
    this.#inFlight = p;
    return p;
  }

  /** Forgets the last report (after a release made through the API): the next get runs afresh. */
  invalidate(): void {
    this.#last = undefined;
    this.#inFlight = undefined;
    this.#lastTookMs = 0;
  }
}
