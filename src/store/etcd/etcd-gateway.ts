import { StoreError, StoreUnavailableError } from '../errors.js';
import type { EtcdCredentials } from '../parse-store-url.js';
import { EtcdRefusal, rejectsToken } from './etcd-refusal.js';
import { EtcdToken } from './etcd-token.js';
import { httpPost, HttpPostError, type HttpTransport } from './http-post.js';
import { decodeGrpcResponse, encodeGrpcRequest, grpcMethod } from './etcd-grpc-codec.js';
import type { GrpcSessions, GrpcStream, GrpcStreamEnd } from './grpc-sessions.js';
import { ProtobufError } from './protobuf-wire.js';
import { httpStream, type HttpStream } from './http-stream.js';

/** Whether a request only reads (safe to repeat anywhere) or may write. */
export type CallKind = 'read' | 'write';

type Attempt =
  | { readonly ok: true; readonly body: unknown }
  // applied 'no': the request certainly had no effect (it never reached a server). tls: the
  // TLS handshake failed, which no retry mends.
  | { readonly ok: false; readonly reason: string; readonly applied: 'no' | 'unknown'; readonly tls?: boolean };

// gRPC codes that say the request itself is wrong: no other member would answer otherwise.
const REQUEST_ERRORS = new Set([3, 5, 6, 7, 9, 11, 12, 16]);

/**
 * etcd v3 on a list of cluster members. Calls are named by their JSON gateway path
 * (`kv/range`, `kv/txn`, `auth/authenticate`) and take and give the gateway's JSON shapes.
 * Given `grpc` sessions, the unary ones travel as gRPC over HTTP/2 (grpc-sessions.ts,
 * etcd-grpc-codec.ts), which costs etcd less than half the CPU of its JSON gateway (that
 * gateway turns each request into a gRPC call on etcd's own loopback connection); without (a
 * one-shot process, see StoreOptions.oneShot) and for etcd snapshots, the JSON gateway over
 * HTTP or HTTPS (the transport) with keep-alive connections. Each call tries the members in
 * turn, starting with the one that answered last, each with its own timeout, so a call takes
 * at most `endpoints × timeoutMs`. A read moves on after any transient failure. A write moves
 * on only when no connection could be opened (the request never left): after a timeout or a
 * reset on an open connection it may have been applied, so it fails with
 * StoreUnavailableError saying so, and the next call starts at the next member. etcd
 * refusing the request → StoreError; so is a TLS handshake that failed on every member.
 *
 * With `credentials`, the first call authenticates (`auth/authenticate`) and every request
 * carries the token in `Authorization`; a request refused for its token (expired, revoked,
 * or auth enabled since) authenticates again and is sent once more. Wrong credentials →
 * StoreError naming the user.
 */
export class EtcdGateway {
  readonly #url: string;
  readonly #endpoints: readonly string[];
  readonly #timeoutMs: number;
  readonly #transport: HttpTransport;
  readonly #token: EtcdToken | undefined;
  readonly #grpc: GrpcSessions | undefined;
  /** Sessions for streams in a process given none (one-shot): node:http2 loaded on the first stream. */
  #lazyGrpc: Promise<GrpcSessions> | undefined;
  #closed = false;
  #preferred = 0;
  #roundTrips = 0;

  /** `endpoints` are `host:port` (IPv6 hosts in brackets); `url` is for messages. */
  constructor(
    url: string,
    endpoints: readonly string[],
    timeoutMs: number,
    transport: HttpTransport,
    grpc: GrpcSessions | undefined,
    credentials?: EtcdCredentials,
  ) {
    this.#url = url;
    this.#endpoints = Object.freeze([...endpoints]);
    this.#timeoutMs = timeoutMs;
    this.#transport = transport;
    this.#grpc = grpc;
    this.#token = credentials === undefined ? undefined : new EtcdToken(url, credentials, (body) => this.#send('auth/authenticate', body, 'read', undefined));
  }

  /** Closes the kept-alive connections; calls in flight fail. */
  close(): void {
    this.#transport.agent.destroy();
    this.#grpc?.close();
    this.#closed = true;
    void this.#lazyGrpc?.then((g) => g.close());
  }

  /** HTTP requests sent so far, including failed ones. */
  get roundTrips(): number {
    return this.#roundTrips;
  }

  /** Index of the member the next call tries first. */
  get preferred(): number {
    return this.#preferred;
  }

  /** How many members the gateway knows. */
  get endpointCount(): number {
    return this.#endpoints.length;
  }

  /**
   * Opens a streaming request through the JSON gateway (`maintenance/snapshot`) on member
   * `index`, as #openWithToken. Resolves with the 200 stream, the member's endpoint and the
   * token it was opened with (for `renewToken`).
   */
  async openStream(path: string, body: unknown, index: number): Promise<HttpStream & { readonly endpoint: string; readonly token: string | undefined }> {
    const r = await this.#openWithToken<HttpStream>(path, index, async (endpoint, token) => {
      const s = await httpStream(
        this.#transport,
        endpoint,
        `/v3/${path}`,
        JSON.stringify(body),
        this.#timeoutMs,
        token === undefined ? {} : { authorization: token },
      );
      return s.status === 200 ? s : { refused: gatewayStreamError(s) };
    });
    return { ...r.opened, endpoint: r.endpoint, token: r.token };
  }

  /**
   * Opens gRPC streaming call `method` (`/etcdserverpb.Watch/Watch`; `path` names it in
   * messages) on member `index`, as #openWithToken, on the process's gRPC session to that
   * member — loaded on first use in a process that has none for its unary calls. Resolves once
   * the stream is open, with the member's endpoint and the token it was opened with (for
   * `renewToken`); `onMessage` and `onEnd` as GrpcSessions.stream.
   */
  async openGrpcStream(
    path: string,
    method: string,
    message: Buffer,
    index: number,
    onMessage: (message: Buffer) => void,
    onEnd: (end: GrpcStreamEnd) => void,
  ): Promise<{ readonly stream: GrpcStream; readonly endpoint: string; readonly token: string | undefined }> {
    const grpc = await this.#streamSessions();
    const r = await this.#openWithToken<{ readonly stream: GrpcStream }>(path, index, (endpoint, token) =>
      grpc.stream(endpoint, method, message, this.#timeoutMs, token === undefined ? {} : { token }, onMessage, onEnd),
    );
    return { stream: r.opened.stream, endpoint: r.endpoint, token: r.token };
  }

  /**
   * Opens a stream on member `index` with `open`, with the auth token, authenticating again
   * once when etcd refuses the token. Rejects with StoreUnavailableError when the member cannot
   * be reached or answers with a transient error, StoreError when etcd refuses.
   */
  async #openWithToken<T extends object>(
    path: string,
    index: number,
    open: (endpoint: string, token: string | undefined) => Promise<T | StreamRefused>,
  ): Promise<{ readonly opened: T; readonly endpoint: string; readonly token: string | undefined }> {
    const endpoint = this.#endpoints[index % this.#endpoints.length] as string;
    const attempt = async (token: string | undefined): Promise<T | StreamRefused> => {
      this.#roundTrips++;
      try {
        return await open(endpoint, token);
      } catch (e) {
        if (!(e instanceof HttpPostError)) throw e;
        throw new StoreUnavailableError(this.#url, `${endpoint} could not open ${path} (${e.reason})`, { cause: e });
      }
    };
    const refusal = ({ refused: { code, http, message } }: StreamRefused): EtcdRefusal => {
      // etcd answers a gateway stream opened with an expired token with code 2 (Unknown) and HTTP 500.
      if ((code !== undefined && REQUEST_ERRORS.has(code)) || (code === undefined && http < 500) || rejectsToken(message)) {
        return new EtcdRefusal(endpoint, path, message, http, code);
      }
      throw new StoreUnavailableError(this.#url, `${endpoint} answered ${path} with ${code === undefined ? `HTTP ${http}` : `gRPC code ${code}`}: ${message}`);
    };
    try {
      let token = await this.#token?.get();
      let opened = await attempt(token);
      if (isRefused(opened)) {
        const refused = refusal(opened);
        if (!refused.tokenRejected || this.#token === undefined) throw refused;
        token = await this.#token.renew(token);
        opened = await attempt(token);
        if (isRefused(opened)) throw refusal(opened);
      }
      return { opened, endpoint, token };
    } catch (e) {
      if (!(e instanceof EtcdRefusal)) throw e;
      throw new StoreError(this.#url, `${e.message}${hintFor(e, this.#token !== undefined)}`, { cause: e });
    }
  }

  async #streamSessions(): Promise<GrpcSessions> {
    if (this.#grpc !== undefined) return this.#grpc;
    this.#lazyGrpc ??= import('./grpc-sessions.js').then(
      ({ GrpcSessions }) => new GrpcSessions(this.#transport.secure ? (this.#transport.tls ?? {}) : undefined),
    );
    const g = await this.#lazyGrpc;
    if (this.#closed) {
      g.close();
      throw new StoreUnavailableError(this.#url, 'the store is closed');
    }
    return g;
  }

  /**
   * Authenticates again after etcd refused `rejected` inside a stream (a watch is checked when
   * it is created, and cancelled for its token there, after the 200). Callers refused together
   * share one new token; without credentials there is nothing to renew.
   */
  async renewToken(rejected: string | undefined): Promise<void> {
    await this.#token?.renew(rejected);
  }

  /** The StoreError for etcd refusing `path` on `endpoint` inside a stream, with the gateway's hints. */
  refusedInStream(endpoint: string, path: string, detail: string): StoreError {
    const e = new EtcdRefusal(endpoint, path, detail, 200, undefined);
    return new StoreError(this.#url, `${e.message}${hintFor(e, this.#token !== undefined)}`, { cause: e });
  }

  /** POSTs `body` as JSON to `/v3/<path>` and returns the parsed answer. */
  async call(path: string, body: unknown, kind: CallKind): Promise<unknown> {
    try {
      if (this.#token === undefined) return await this.#send(path, body, kind, undefined);
      let token = await this.#token.get();
      try {
        return await this.#send(path, body, kind, token);
      } catch (e) {
        // etcd checks the token before applying anything: sending again is safe.
        if (!(e instanceof EtcdRefusal && e.tokenRejected)) throw e;
        token = await this.#token.renew(token);
        return await this.#send(path, body, kind, token);
      }
    } catch (e) {
      if (!(e instanceof EtcdRefusal)) throw e;
      throw new StoreError(this.#url, `${e.message}${hintFor(e, this.#token !== undefined)}`, { cause: e });
    }
  }

  async #send(path: string, body: unknown, kind: CallKind, token: string | undefined): Promise<unknown> {
    const n = this.#endpoints.length;
    const start = this.#preferred;
    const failures: string[] = [];
    let tlsFailures = 0;
    for (let k = 0; k < n; k++) {
      const i = (start + k) % n;
      const endpoint = this.#endpoints[i] as string;
      const attempt = await this.#attempt(endpoint, path, body, token);
      if (attempt.ok) {
        this.#preferred = i;
        return attempt.body;
      }
      failures.push(`${endpoint} ${attempt.reason}`);
      if (attempt.tls === true) tlsFailures++;
      if (kind === 'write' && attempt.applied === 'unknown') {
        this.#preferred = (i + 1) % n;
        throw new StoreUnavailableError(this.#url, `${endpoint} ${attempt.reason}; the write may or may not have been applied`);
      }
    }
    this.#preferred = (start + 1) % n;
    if (tlsFailures === n) throw new StoreError(this.#url, `no etcd endpoint could be reached over TLS: ${failures.join('; ')}`);
    throw new StoreUnavailableError(this.#url, `no etcd endpoint answered: ${failures.join('; ')}`);
  }

  async #attempt(endpoint: string, path: string, body: unknown, token: string | undefined): Promise<Attempt> {
    const method = this.#grpc === undefined ? undefined : grpcMethod(path);
    return method === undefined ? this.#attemptJson(endpoint, path, body, token) : this.#attemptGrpc(endpoint, path, method, body, token);
  }

  async #attemptGrpc(endpoint: string, path: string, method: string, body: unknown, token: string | undefined): Promise<Attempt> {
    this.#roundTrips++;
    let answer;
    try {
      answer = await this.#grpc!.call(endpoint, method, encodeGrpcRequest(path, body), this.#timeoutMs, token === undefined ? {} : { token });
    } catch (e) {
      if (!(e instanceof HttpPostError)) throw e;
      return failedAttempt(e);
    }
    if (answer.code === 0) {
      try {
        return { ok: true, body: decodeGrpcResponse(path, answer.body) };
      } catch (e) {
        if (!(e instanceof ProtobufError)) throw e;
        throw new StoreError(this.#url, `${endpoint} answered ${path} with a malformed message: ${e.message}`, { cause: e });
      }
    }
    return refusedAttempt(endpoint, path, answer.code, answer.message, answer.http);
  }

  async #attemptJson(endpoint: string, path: string, body: unknown, token: string | undefined): Promise<Attempt> {
    this.#roundTrips++;
    let status: number;
    let text: string;
    try {
      const headers: Record<string, string> = token === undefined ? {} : { authorization: token };
      ({ status, text } = await httpPost(this.#transport, endpoint, `/v3/${path}`, JSON.stringify(body), this.#timeoutMs, headers));
    } catch (e) {
      if (!(e instanceof HttpPostError)) throw e;
      return failedAttempt(e);
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
    return refusedAttempt(endpoint, path, code, message, status);
  }
}

/** A call that got no answer: whether it may have been applied. */
function failedAttempt(e: HttpPostError): Attempt {
  // A failed handshake: the server never took the request.
  if (e.tls) return { ok: false, reason: `refused the TLS connection (${e.reason})`, applied: 'no', tls: true };
  return e.connected
    ? { ok: false, reason: `failed (${e.reason})`, applied: 'unknown' }
    : { ok: false, reason: `could not be reached (${e.reason})`, applied: 'no' };
}

/** An answer with an error: thrown as a refusal of the request itself, else a failed attempt. */
function refusedAttempt(endpoint: string, path: string, code: number | undefined, message: string, status: number): Attempt {
  if ((code !== undefined && REQUEST_ERRORS.has(code)) || (code === undefined && status < 500)) {
    throw new EtcdRefusal(endpoint, path, message, status, code);
  }
  // "no leader" and "too many requests" are answered before the request is proposed.
  const applied = /no leader|too many requests/.test(message) ? 'no' : 'unknown';
  return { ok: false, reason: code === undefined ? `answered HTTP ${status}: ${message}` : `answered gRPC code ${code}: ${message}`, applied };
}

/** A stream the member refused when it was opened: its gRPC code (when it gave one), HTTP status and message. */
interface StreamRefused {
  readonly refused: { readonly code: number | undefined; readonly http: number; readonly message: string };
}

function isRefused(x: object): x is StreamRefused {
  return 'refused' in x;
}

/** What a gateway stream answered with another status than 200 says: its error is nested ({"error":{"grpc_code":2,"message":…}}). */
function gatewayStreamError(s: HttpStream): StreamRefused['refused'] {
  type GatewayError = { code?: unknown; message?: unknown; error?: unknown };
  let error: GatewayError = {};
  try {
    error = (JSON.parse(s.text) as GatewayError | null) ?? {};
  } catch {
    // judged by the status
  }
  const inner = typeof error.error === 'object' && error.error !== null ? (error.error as { grpc_code?: unknown; message?: unknown }) : undefined;
  const code = typeof error.code === 'number' ? error.code : typeof inner?.grpc_code === 'number' ? inner.grpc_code : undefined;
  return { code, http: s.status, message: String(inner?.message ?? error.message ?? error.error ?? s.text.slice(0, 200)) };
}

/** What to do about a refusal whose cause is in the client's settings. */
function hintFor(e: EtcdRefusal, hasCredentials: boolean): string {
  if (e.tokenRejected && !hasCredentials) {
    return '; the etcd cluster has authentication enabled: give USER:PASSWORD@ in the URL or PODIPAM_ETCD_USERNAME and PODIPAM_ETCD_PASSWORD';
  }
  if (/CommonName of client/.test(e.detail)) {
    return "; with --client-cert-auth and authentication enabled, etcd's JSON gateway refuses client certificates that carry a Common Name: use one without (and a user and password)";
  }
  return '';
}
