import { Agent } from 'node:http';
import { StoreError, StoreUnavailableError } from '../errors.js';
import { httpPost, HttpPostError } from './http-post.js';

/** Whether a request only reads (safe to repeat anywhere) or may write. */
export type CallKind = 'read' | 'write';

type Attempt =
  | { readonly ok: true; readonly body: unknown }
  // applied 'no': the request certainly had no effect (it never reached a server).
  | { readonly ok: false; readonly reason: string; readonly applied: 'no' | 'unknown' };

// gRPC codes that say the request itself is wrong: no other member would answer otherwise.
const REQUEST_ERRORS = new Set([3, 5, 6, 7, 9, 11, 12, 16]);

/**
 * etcd v3's JSON gateway (`POST /v3/<service>/<method>`) on a list of cluster members, over
 * plain HTTP with keep-alive connections. Each call tries the members in turn, starting with
 * the one that answered last, each with its own timeout, so a call takes at most
 * `endpoints × timeoutMs`. A read moves on after any transient failure. A write moves on only
 * when no connection could be opened (the request never left): after a timeout or a reset on
 * an open connection it may have been applied, so it fails with StoreUnavailableError saying
 * so, and the next call starts at the next member. etcd refusing the request → StoreError.
 */
export class EtcdGateway {
  readonly #url: string;
  readonly #endpoints: readonly string[];
  readonly #timeoutMs: number;
  readonly #agent = new Agent({ keepAlive: true });
  #preferred = 0;
  #roundTrips = 0;

  /** `endpoints` are `host:port` (IPv6 hosts in brackets); `url` is for messages. */
  constructor(url: string, endpoints: readonly string[], timeoutMs: number) {
    this.#url = url;
    this.#endpoints = Object.freeze([...endpoints]);
    this.#timeoutMs = timeoutMs;
  }

  /** Closes the kept-alive connections; calls in flight fail. */
  close(): void {
    this.#agent.destroy();
  }

  /** HTTP requests sent so far, including failed ones. */
  get roundTrips(): number {
    return this.#roundTrips;
  }

  /** POSTs `body` as JSON to `/v3/<path>` and returns the parsed answer. */
  async call(path: string, body: unknown, kind: CallKind): Promise<unknown> {
    const n = this.#endpoints.length;
    const start = this.#preferred;
    const failures: string[] = [];
    for (let k = 0; k < n; k++) {
      const i = (start + k) % n;
      const endpoint = this.#endpoints[i] as string;
      const attempt = await this.#attempt(endpoint, path, body);
      if (attempt.ok) {
        this.#preferred = i;
        return attempt.body;
      }
      failures.push(`${endpoint} ${attempt.reason}`);
      if (kind === 'write' && attempt.applied === 'unknown') {
        this.#preferred = (i + 1) % n;
        throw new StoreUnavailableError(this.#url, `${endpoint} ${attempt.reason}; the write may or may not have been applied`);
      }
    }
    this.#preferred = (start + 1) % n;
    throw new StoreUnavailableError(this.#url, `no etcd endpoint answered: ${failures.join('; ')}`);
  }

  async #attempt(endpoint: string, path: string, body: unknown): Promise<Attempt> {
    this.#roundTrips++;
    let status: number;
    let text: string;
    try {
      ({ status, text } = await httpPost(this.#agent, endpoint, `/v3/${path}`, JSON.stringify(body), this.#timeoutMs));
    } catch (e) {
      if (!(e instanceof HttpPostError)) throw e;
      return e.connected
        ? { ok: false, reason: `failed (${e.reason})`, applied: 'unknown' }
        : { ok: false, reason: `could not be reached (${e.reason})`, applied: 'no' };
    }
    if (status === 200) {
      try {
        return { ok: true, body: JSON.parse(text) };
      } catch {
        throw new StoreError(this.#url, `${endpoint} answered ${path} with malformed JSON: ${text.slice(0, 200)}`);
      }
    }
    let error: { code?: unknown; message?: unknown; error?: unknown } = {};
    try {
      error = JSON.parse(text) ?? {};
    } catch {
      // not the gateway (a proxy, another server): judged by the HTTP status below
    }
    const code = typeof error.code === 'number' ? error.code : undefined;
    const message = String(error.message ?? error.error ?? text.slice(0, 200));
    if ((code !== undefined && REQUEST_ERRORS.has(code)) || (code === undefined && status < 500)) {
      throw new StoreError(this.#url, `${endpoint} refused ${path}: ${message} (HTTP ${status}, gRPC code ${code ?? 'none'})`);
    }
    // "no leader" and "too many requests" are answered before the request is proposed.
    const applied = /no leader|too many requests/.test(message) ? 'no' : 'unknown';
    return { ok: false, reason: `answered HTTP ${status}: ${message}`, applied };
  }
}
