import { StoreCompactedError, StoreError, StoreUnavailableError } from '../errors.js';
import type { WatchEvent } from '../store.js';
import { WatchFeed } from '../watch-feed.js';
import { decodeKv, prefixRangeEnd, rootedBytes, wireInt } from './etcd-codec.js';
import type { EtcdGateway } from './etcd-gateway.js';
import { rejectsToken } from './etcd-refusal.js';
import { decodeWatchResponse, encodeWatchCreate, type WatchResult, type WatchResultEvent } from './etcd-watch-codec.js';
import type { GrpcStream } from './grpc-sessions.js';
import { ProtobufError } from './protobuf-wire.js';
import { pause } from '../../util/pause.js';

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
 * One etcd watch as a gRPC stream, `/etcdserverpb.Watch/Watch` (etcd-watch-codec.ts): one
 * WatchRequest with a create_request is sent, the request side stays open, and the answer is
 * a stream of WatchResponses (etcd's JSON gateway would re-encode every event as JSON for each
 * watcher, which costs etcd two to three times the CPU per write). When the stream breaks (the
 * member died, restarted, or the connection reset) it reconnects — to the next member, then
 * round the list, with growing pauses — asking from the revision after the last one
 * delivered, and drops anything older, so no event is lost or seen twice. A compacted start
 * (etcd cancels the watch with compact_revision) fails the feed with StoreCompactedError; so
 * does any refusal (StoreError). Aborting or closing resets the stream; so does a silence
 * longer than WATCH_SILENCE_MS (then it reconnects). etcd checks a watch's auth token when
 * the watch is created, and cancels it inside the open stream when the token expired (simple
 * tokens live --auth-token-ttl, 5 minutes by default) or a restart forgot it: the watch then
 * authenticates again and reconnects at once, once; a second refusal in a row fails the feed.
 */
export class EtcdWatch {
  readonly feed: WatchFeed;
  /** The member the watch is connected to now (for diagnostics), or undefined between tries. */
  endpoint: string | undefined;
  readonly #url: string;
  readonly #gateway: EtcdGateway;
  readonly #key: Buffer;
  readonly #rangeEnd: Buffer;
  readonly #onDone: () => void;
  #next: number;
  /** The fragments so far of a response etcd split. */
  #fragments: WatchResultEvent[] = [];
  #destroy: (() => void) | undefined;
  /** Aborted once the feed is done: cuts a pause between connections short. */
  readonly #stopped = new AbortController();

  constructor(url: string, gateway: EtcdGateway, prefix: string, fromRevision: number, start: number, signal: AbortSignal | undefined, onDone: () => void) {
    this.#url = url;
    this.#gateway = gateway;
    const from = rootedBytes(prefix);
    this.#key = from;
    this.#rangeEnd = prefixRangeEnd(from);
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
    const request = encodeWatchCreate({ key: this.#key, rangeEnd: this.#rangeEnd, startRevision: this.#next, progressNotify: true, fragment: true });
    this.#fragments = []; // a response cut short with its stream is asked for again from #next
    let created = false;
    let stream: GrpcStream | undefined;
    // Messages and the end may come while openGrpcStream is still resolving: until the promise
    // below exists, they wait here.
    let settle: ((e?: Error) => void) | undefined;
    let early: { readonly error?: Error } | undefined;
    const finish = (e?: Error): void => {
      if (settle !== undefined) settle(e);
      else early ??= e === undefined ? {} : { error: e };
    };
    let silence: NodeJS.Timeout | undefined;
    const listen = (): void => {
      clearTimeout(silence);
      silence = setTimeout(() => {
        stream?.cancel();
        finish();
      }, WATCH_SILENCE_MS);
    };
    const onMessage = (message: Buffer): void => {
      if (early !== undefined) return;
      listen();
      try {
        if (this.#response(message)) created = true;
      } catch (e) {
        stream?.cancel();
        finish(e instanceof Error ? e : new Error(String(e)));
        return;
      }
      if (this.feed.done) {
        stream?.cancel();
        finish();
      }
    };
    const onEnd = (end: { readonly code: number | undefined; readonly message: string }): void => {
      // An error from the member (it is stopping, lost its leader, reset the stream): reconnect;
      // etcd ending the stream for the token is a cancel for it.
      if (end.code !== undefined && end.code !== 0 && rejectsToken(end.message)) finish(new TokenCancelled('', undefined, end.message));
      else finish();
    };
    try {
      const s = await this.#gateway.openGrpcStream('watch', '/etcdserverpb.Watch/Watch', request, index, onMessage, onEnd);
      stream = s.stream;
      if (this.feed.done) {
        stream.cancel();
        return false;
      }
      this.endpoint = s.endpoint;
      listen();
      await new Promise<void>((resolve, reject) => {
        // A token refusal names the member and the token it refused, for renewToken.
        settle = (e) => (e === undefined ? resolve() : reject(e instanceof TokenCancelled ? new TokenCancelled(s.endpoint, s.token, e.reason) : e));
        this.#destroy = () => {
          stream?.cancel();
          resolve();
        };
        if (early !== undefined) settle(early.error);
      });
    } finally {
      clearTimeout(silence);
      stream?.cancel();
      this.#destroy = undefined;
      this.endpoint = undefined;
    }
    return created;
  }

  /** One WatchResponse; true for the one that says the watch was created. */
  #response(message: Buffer): boolean {
    let result: WatchResult;
    try {
      result = decodeWatchResponse(message);
    } catch (e) {
      if (!(e instanceof ProtobufError)) throw e;
      throw new StoreUnavailableError(this.#url, `etcd sent a malformed watch response: ${e.message}`, { cause: e });
    }
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
    // A response etcd split (over its request size limit, 1.5 MiB by default) comes as fragments
    // of events, `fragment` set on all but the last: delivered together, once whole.
    let events = result.events ?? [];
    if (result.fragment === true) {
      for (const e of events) this.#fragments.push(e);
      return result.created === true;
    }
    if (this.#fragments.length > 0) {
      for (const e of events) this.#fragments.push(e);
      events = this.#fragments;
      this.#fragments = [];
    }
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
