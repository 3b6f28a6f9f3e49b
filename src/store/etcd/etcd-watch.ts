import { StoreCompactedError, StoreError, StoreUnavailableError } from '../errors.js';
import type { WatchEvent } from '../store.js';
import { WatchFeed } from '../watch-feed.js';
import { decodeKv, prefixRangeEnd, rootedBytes, wireInt, type WireKv } from './etcd-codec.js';
import type { EtcdGateway } from './etcd-gateway.js';
import { rejectsToken } from './etcd-refusal.js';
import { pause } from '../../util/pause.js';

interface WireWatchResponse {
  readonly result?: {
    readonly created?: boolean;
    readonly canceled?: boolean;
    readonly compact_revision?: string;
    readonly cancel_reason?: string;
    readonly events?: readonly { readonly type?: string; readonly kv?: WireKv }[];
  };
  readonly error?: { readonly message?: string; readonly code?: number };
}

/**
 * A stream silent for this long is taken for dead (a hung member, a partition that left the
 * connection open) and replaced: the watch asks for progress notifications, which etcd sends
 * on an idle watch every 10 minutes by default (--experimental-watch-progress-notify-interval).
 */
export const WATCH_SILENCE_MS = 11 * 60_000;

/** etcd cancelled the watch for its auth token (internal: the watch authenticates again once). */
class TokenCancelled extends Error {
  constructor(
    readonly endpoint: string,
    readonly token: string | undefined,
    readonly reason: string,
  ) {
    super(`etcd cancelled the watch: ${reason}`);
  }
}

/** Pauses before reconnecting, in ms, then the last one repeated (each with jitter). */
const BACKOFF_MS = [20, 50, 100, 200, 400, 800, 1000];

/**
 * One etcd watch through the JSON gateway: `POST /v3/watch` with a create_request, whose
 * answer is a stream of newline-delimited JSON watch responses. When the stream breaks (the
 * member died, restarted, or the connection reset) it reconnects — to the next member, then
 * round the list, with growing pauses — asking from the revision after the last one
 * delivered, and drops anything older, so no event is lost or seen twice. A compacted start
 * (etcd cancels the watch with compact_revision) fails the feed with StoreCompactedError; so
 * does any refusal (StoreError). Aborting or closing destroys the stream; so does a silence
 * longer than WATCH_SILENCE_MS (then it reconnects). etcd checks a watch's auth token when
 * the watch is created, and cancels it inside the 200 stream when the token expired (simple
 * tokens live --auth-token-ttl, 5 minutes by default) or a restart forgot it: the watch then
 * authenticates again and reconnects at once, once; a second refusal in a row fails the feed.
 */
export class EtcdWatch {
  readonly feed: WatchFeed;
  /** The member the watch is connected to now (for diagnostics), or undefined between tries. */
  endpoint: string | undefined;
  readonly #url: string;
  readonly #gateway: EtcdGateway;
  readonly #key: string;
  readonly #rangeEnd: string;
  readonly #onDone: () => void;
  #next: number;
  #destroy: (() => void) | undefined;
  /** Aborted once the feed is done: cuts a pause between connections short. */
  readonly #stopped = new AbortController();

  constructor(url: string, gateway: EtcdGateway, prefix: string, fromRevision: number, start: number, signal: AbortSignal | undefined, onDone: () => void) {
    this.#url = url;
    this.#gateway = gateway;
    const from = rootedBytes(prefix);
    this.#key = from.toString('base64');
    this.#rangeEnd = prefixRangeEnd(from).toString('base64');
    this.#next = fromRevision;
    this.#onDone = onDone;
    this.feed = new WatchFeed(() => {
      this.#destroy?.();
      this.#stopped.abort();
      this.#onDone();
    }, signal);
    if (!this.feed.done) void this.#run(start);
  }

  async #run(start: number): Promise<void> {
    let index = start;
    let failures = 0;
    let renewed = false;
    while (!this.feed.done) {
      try {
        const healthy = await this.#connect(index);
        if (healthy) {
          failures = 0;
          renewed = false;
        }
      } catch (e) {
        if (e instanceof TokenCancelled) {
          if (renewed) {
            this.feed.fail(this.#gateway.refusedInStream(e.endpoint, 'watch', e.reason));
            return;
          }
          renewed = true;
          try {
            await this.#gateway.renewToken(e.token);
            continue; // the same member, at once
          } catch (renewError) {
            if (!(renewError instanceof StoreUnavailableError)) {
              this.feed.fail(renewError);
              return;
            }
            renewed = false; // could not authenticate: no new token was refused yet
          }
        } else if (!(e instanceof StoreUnavailableError)) {
          this.feed.fail(e);
          return;
        }
      }
      if (this.feed.done) return;
      // The stream broke or never opened: the next member, after a pause that grows while
      // nothing works.
      index = (index + 1) % this.#gateway.endpointCount;
      await pause((BACKOFF_MS[Math.min(failures++, BACKOFF_MS.length - 1)] as number) * (1 + Math.random() / 2), this.#stopped.signal);
    }
  }

  /** One stream, read until it breaks; true when it was created (the member was healthy). */
  async #connect(index: number): Promise<boolean> {
    const body = { create_request: { key: this.#key, range_end: this.#rangeEnd, start_revision: String(this.#next), progress_notify: true } };
    const stream = await this.#gateway.openStream('watch', body, index);
    if (this.feed.done) {
      stream.request.destroy();
      return false;
    }
    this.endpoint = stream.endpoint;
    let created = false;
    try {
      await new Promise<void>((resolve, reject) => {
        this.#destroy = () => {
          stream.request.destroy();
          resolve();
        };
        // The unfinished line so far, in pieces: a catch-up response can be one line of many
        // megabytes, and re-searching all of it for a newline at every chunk is quadratic.
        const partial: string[] = [];
        const res = stream.response;
        let silence: NodeJS.Timeout | undefined;
        const listen = () => {
          clearTimeout(silence);
          silence = setTimeout(() => {
            stream.request.destroy();
            resolve();
          }, WATCH_SILENCE_MS);
        };
        listen();
        res.once('close', () => clearTimeout(silence));
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          listen();
          let at = 0;
          for (let nl = chunk.indexOf('\n'); nl >= 0; nl = chunk.indexOf('\n', at)) {
            partial.push(chunk.slice(at, nl));
            at = nl + 1;
            const line = partial.join('').trim();
            partial.length = 0;
            if (line === '') continue;
            try {
              if (this.#line(line)) created = true;
            } catch (e) {
              stream.request.destroy();
              reject(e instanceof TokenCancelled ? new TokenCancelled(stream.endpoint, stream.token, e.reason) : e);
              return;
            }
            if (this.feed.done) {
              stream.request.destroy();
              resolve();
              return;
            }
          }
          if (at < chunk.length) partial.push(chunk.slice(at));
        });
        res.on('end', () => resolve());
        res.on('aborted', () => resolve());
        res.on('error', () => resolve());
        res.on('close', () => resolve());
      });
    } finally {
      this.#destroy = undefined;
      this.endpoint = undefined;
    }
    return created;
  }

  /** One watch response; true for the one that says the watch was created. */
  #line(line: string): boolean {
    let msg: WireWatchResponse;
    try {
      msg = JSON.parse(line) as WireWatchResponse;
    } catch {
      throw new StoreUnavailableError(this.#url, `etcd sent a watch response that is not JSON: ${line.slice(0, 200)}`);
    }
    if (msg.error !== undefined) {
      const message = String(msg.error.message ?? JSON.stringify(msg.error));
      // An error mid-stream from the member (it is stopping, lost its leader): reconnect.
      throw new StoreUnavailableError(this.#url, `etcd ended the watch: ${message}`);
    }
    const result = msg.result ?? {};
    if (result.canceled === true) {
      const compacted = wireInt(this.#url, 'compact_revision', result.compact_revision);
      if (compacted > 0) {
        this.feed.fail(new StoreCompactedError(this.#url, this.#next, compacted));
        return false;
      }
      const reason = result.cancel_reason ?? 'no reason given';
      if (rejectsToken(reason)) throw new TokenCancelled('', undefined, reason);
      throw new StoreError(this.#url, `etcd cancelled the watch: ${reason}`);
    }
    const events = result.events ?? [];
    let batch: WatchEvent[] = [];
    let batchRev = 0;
    for (const e of events) {
      const kv = e.kv ?? {};
      const entry = decodeKv(this.#url, kv);
      // Already delivered before a reconnect: never twice.
      if (entry.rev < this.#next) continue;
      if (batch.length > 0 && batchRev !== entry.rev) {
        this.feed.push(batch);
        batch = [];
      }
      batchRev = entry.rev;
      batch.push(
        e.type === 'DELETE'
          ? { type: 'delete', key: entry.key, value: '', modRevision: entry.rev }
          : { type: 'put', key: entry.key, value: entry.value, modRevision: entry.rev },
      );
    }
    if (batch.length > 0) {
      this.feed.push(batch);
      this.#next = batchRev + 1;
    }
    return result.created === true;
  }
}
