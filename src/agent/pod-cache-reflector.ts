/**
 * One resource kept in memory from the API server, as client-go's reflector does: list it (in
 * pages), then watch from the list's resourceVersion, applying each event; a watch that ends
 * (the server's timeout, a dropped connection, the client's own bound) is resumed from the last
 * resourceVersion seen, without listing again; a 410 Gone (the history was compacted) lists
 * again, replacing what is held. Failures wait a bounded, jittered, doubling backoff (a watch
 * that ends at once with nothing counts as one, so nothing loops hot); every request is bounded
 * in time. Until the first list succeeds the map is empty and `synced` false.
 */
import type { Log } from '../log/logger.js';
import { pause } from '../util/pause.js';
import { isGone, KubeRequestError, type KubeTransport, type WatchEvent } from './kube-client.js';

export interface ReflectorTiming {
  /** First delay after a failure; doubles per failure in a row up to `backoffMaxMs` (jittered ±20%). */
  readonly backoffBaseMs: number;
  readonly backoffMaxMs: number;
  /** One list page waits at most this long. */
  readonly listTimeoutMs: number;
  /** Asked of the server (`timeoutSeconds`); the client itself ends a watch 30 s after. */
  readonly watchSeconds: number;
}

export const DEFAULT_TIMING: ReflectorTiming = { backoffBaseMs: 500, backoffMaxMs: 30_000, listTimeoutMs: 30_000, watchSeconds: 300 };

/** Delay before try `n` (1: the first retry) of a failing loop. */
export function backoffDelay(n: number, t: Pick<ReflectorTiming, 'backoffBaseMs' | 'backoffMaxMs'>, random: () => number = Math.random): number {
  const raw = Math.min(t.backoffMaxMs, t.backoffBaseMs * 2 ** Math.max(0, n - 1));
  return Math.round(raw * (0.8 + 0.4 * random()));
}

export interface ReflectorOptions<T> {
  /** For logs and errors: "pods of node n1". */
  readonly what: string;
  /** The collection's path (`/api/v1/pods`). */
  readonly path: string;
  /** Query parameters of both list and watch (`fieldSelector`). */
  readonly query?: Readonly<Record<string, string>>;
  /** The object's key and what is kept of it; undefined: not kept (malformed). */
  readonly keep: (raw: unknown) => { readonly key: string; readonly value: T } | undefined;
  readonly transport: KubeTransport;
  readonly timing: ReflectorTiming;
  readonly log: Log;
}

export interface ReflectorStatus {
  readonly synced: boolean;
  readonly items: number;
  /** Lists completed (the first, then one per 410 or failed list). */
  readonly lists: number;
  /** Watches opened (resumes included). */
  readonly watches: number;
  readonly events: number;
  /** 410 Gone answers (each followed by a list). */
  readonly expired: number;
  /** Failed lists and watches. */
  readonly errors: number;
  readonly lastError?: { readonly at: string; readonly message: string };
}

const PAGE = 500;
const MAX_PAGES = 1000;
const HEADERS_TIMEOUT_MS = 10_000;

const meta = (raw: unknown): { resourceVersion?: unknown; continue?: unknown } => (raw as { metadata?: unknown } | null)?.metadata ?? {};

export class Reflector<T> {
  readonly #o: ReflectorOptions<T>;
  #items = new Map<string, T>();
  #rv: string | undefined;
  #synced = false;
  #lists = 0;
  #watches = 0;
  #events = 0;
  #expired = 0;
  #errors = 0;
  #lastError: { at: string; message: string } | undefined;
  #stopped = true;
  #abort: AbortController | undefined;
  /** Aborted by stop(): cuts a back-off pause short. */
  #stopAc = new AbortController();
  #loop: Promise<void> | undefined;

  constructor(o: ReflectorOptions<T>) {
    this.#o = o;
  }

  get(key: string): T | undefined {
    return this.#items.get(key);
  }

  values(): IterableIterator<T> {
    return this.#items.values();
  }

  get synced(): boolean {
    return this.#synced;
  }

  status(): ReflectorStatus {
    return {
      synced: this.#synced,
      items: this.#items.size,
      lists: this.#lists,
      watches: this.#watches,
      events: this.#events,
      expired: this.#expired,
      errors: this.#errors,
      ...(this.#lastError ? { lastError: this.#lastError } : {}),
    };
  }

  /** Starts the loop (returns at once). */
  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#stopAc = new AbortController();
    this.#loop = this.#run();
  }

  /** Ends the loop, cutting the request in flight. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#abort?.abort();
    this.#stopAc.abort();
    await this.#loop;
  }

  async #run(): Promise<void> {
    let failures = 0;
    while (!this.#stopped) {
      this.#abort = new AbortController();
      try {
        if (this.#rv === undefined) await this.#list(this.#abort.signal);
        const t0 = Date.now();
        const seen = this.#events;
        await this.#watch(this.#abort.signal);
        // A watch ended by the server at once, with nothing in it: back off as for a failure.
        failures = this.#events > seen || Date.now() - t0 >= 1000 ? 0 : failures + 1;
        if (failures > 0) await this.#sleep(backoffDelay(failures, this.#o.timing));
      } catch (e) {
        if (this.#stopped) break;
        failures++;
        if (isGone(e)) {
          this.#expired++;
          this.#rv = undefined;
          this.#o.log.info({ what: this.#o.what, error: (e as Error).message }, 'resourceVersion expired (410): listing again');
          // The first 410 lists at once; one right after another backs off.
          if (failures > 1) await this.#sleep(backoffDelay(failures - 1, this.#o.timing));
          continue;
        }
        this.#errors++;
        this.#lastError = { at: new Date().toISOString(), message: (e as Error).message };
        const delay = backoffDelay(failures, this.#o.timing);
        this.#o.log.warn({ what: this.#o.what, error: (e as Error).message, retryInMs: delay, failures }, 'list/watch failed: retrying');
        await this.#sleep(delay);
      }
    }
  }

  async #list(signal: AbortSignal): Promise<void> {
    const items = new Map<string, T>();
    let next: string | undefined;
    let rv: string | undefined;
    for (let page = 0; ; page++) {
      if (page >= MAX_PAGES) throw new KubeRequestError(`list ${this.#o.what}: more than ${MAX_PAGES} pages of ${PAGE}`, undefined);
      const q = new URLSearchParams({ ...this.#o.query, limit: String(PAGE), ...(next ? { continue: next } : {}) });
      const list = await this.#o.transport.getJson(`${this.#o.path}?${q}`, this.#o.timing.listTimeoutMs, signal);
      for (const raw of ((list as { items?: unknown } | null)?.items ?? []) as unknown[]) {
        const k = this.#o.keep(raw);
        if (k) items.set(k.key, k.value);
      }
      const m = meta(list);
      if (page === 0) rv = typeof m.resourceVersion === 'string' ? m.resourceVersion : undefined;
      next = typeof m.continue === 'string' && m.continue !== '' ? m.continue : undefined;
      if (!next) break;
    }
    if (rv === undefined || rv === '') throw new KubeRequestError(`list ${this.#o.what}: the answer has no resourceVersion`, undefined);
    this.#items = items;
    this.#rv = rv;
    this.#lists++;
    if (!this.#synced) this.#o.log.info({ what: this.#o.what, items: items.size, resourceVersion: rv }, 'pod cache: listed');
    this.#synced = true;
  }

  async #watch(signal: AbortSignal): Promise<void> {
    const t = this.#o.timing;
    const q = new URLSearchParams({
      ...this.#o.query,
      watch: 'true',
      resourceVersion: this.#rv ?? '',
      allowWatchBookmarks: 'true',
      timeoutSeconds: String(t.watchSeconds),
    });
    this.#watches++;
    await this.#o.transport.watch(`${this.#o.path}?${q}`, (e) => this.#apply(e), {
      headersTimeoutMs: HEADERS_TIMEOUT_MS,
      maxMs: (t.watchSeconds + 30) * 1000,
      signal,
    });
  }

  #apply(e: WatchEvent): void {
    if (e.type === 'ERROR') {
      const s = (e.object ?? {}) as { code?: unknown; message?: unknown; reason?: unknown };
      const code = typeof s.code === 'number' ? s.code : undefined;
      throw new KubeRequestError(
        `watch ${this.#o.what}: ${code ?? '?'}${typeof s.reason === 'string' ? ` ${s.reason}` : ''}: ${typeof s.message === 'string' ? s.message : 'error event'}`,
        code,
      );
    }
    const rv = meta(e.object).resourceVersion;
    if (e.type === 'ADDED' || e.type === 'MODIFIED' || e.type === 'DELETED') {
      this.#events++;
      const k = this.#o.keep(e.object);
      if (k) {
        if (e.type === 'DELETED') this.#items.delete(k.key);
        else this.#items.set(k.key, k.value);
      }
    }
    // BOOKMARK (and anything else) only moves the resourceVersion on.
    if (typeof rv === 'string' && rv !== '') this.#rv = rv;
  }

  #sleep(ms: number): Promise<void> {
    return pause(ms, this.#stopAc.signal);
  }
}
