/** What /healthz says about the datastore. */
export type DatastoreHealth =
  | { readonly state: 'ok' }
  /** A check has been running for `waitingMs` without an answer; the last finished one passed (or none finished yet). */
  | { readonly state: 'slow'; readonly waitingMs: number }
  /** The last finished check failed with `error`. */
  | { readonly state: 'failed'; readonly error: string };

interface Running {
  readonly since: number;
  readonly done: Promise<void>;
}

/**
 * The datastore check behind /healthz, bounded in time: a liveness probe restarts a server
 * that does not answer, so /healthz must answer at once whatever the datastore does (locked
 * SQLite file, hung etcd member). At most one check runs at a time; a caller waits for it at
 * most `waitMs`, then gets the last finished result, or 'slow' when that passed or none
 * finished yet. A check that is still running is joined, never started twice.
 */
export class DatastoreProbe {
  readonly #check: () => Promise<unknown>;
  readonly #waitMs: number;
  #running: Running | undefined;
  #lastError: string | undefined;

  /** `check` asks the datastore something cheap and rejects when it cannot answer. */
  constructor(check: () => Promise<unknown>, waitMs = 50) {
    this.#check = check;
    this.#waitMs = waitMs;
  }

  async health(): Promise<DatastoreHealth> {
    const running = this.#running ?? this.#start();
    let timer: NodeJS.Timeout | undefined;
    const finished = await Promise.race([
      running.done.then(() => true),
      new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), this.#waitMs))),
    ]);
    clearTimeout(timer);
    if (this.#lastError !== undefined) return { state: 'failed', error: this.#lastError };
    return finished ? { state: 'ok' } : { state: 'slow', waitingMs: Math.round(performance.now() - running.since) };
  }

  #start(): Running {
    const running: Running = {
      since: performance.now(),
      done: (async () => {
        try {
          await this.#check();
          this.#lastError = undefined;
        } catch (e) {
          this.#lastError = e instanceof Error ? e.message : String(e);
        } finally {
          this.#running = undefined;
        }
      })(),
    };
    this.#running = running;
    return running;
  }
}
