/**
 * Unary gRPC calls over node's own HTTP/2 client (no gRPC library to load): a POST of one
 * length-prefixed protobuf message to `/<service>/<method>`, answered by one message and a
 * `grpc-status` (in the trailers, or in the headers of an answer without a body). One HTTP/2
 * session per endpoint, opened on first use and kept (unref'd, so it never holds a process
 * open; each call's timer does while it runs) until it fails, the server sends GOAWAY, or
 * `close()`. Every call of the process to that member shares it, so a call that times out
 * cancels its own stream only: a member that hangs fails each call at its timeout, and the
 * caller moves on to the next member. A session still connecting when a call times out is
 * dropped: the next call opens a new connection.
 *
 * `stream` opens a streaming call on the same session: one request message sent, the request
 * side left open, and the answer's messages handed over as they come (grpc-frames.ts) until
 * the stream ends; a session that breaks ends its streams too.
 *
 * A call that got no complete answer rejects with HttpPostError: `connected` false when the
 * session never opened (the server never saw the request), `tls` when the handshake or the
 * certificate failed. */
import { connect, constants, type ClientHttp2Session, type ClientHttp2Stream, type SecureClientSessionOptions } from 'node:http2';
import { GrpcFrameError, GrpcFrames, grpcFrame } from './grpc-frames.js';
import { HttpPostError, isTlsFailure } from './http-post.js';

/**
 * An answer: its gRPC status code (0 = OK; undefined when the server answered an HTTP status
 * other than 200, `message` then the start of its body), message, and the response message when OK.
 */
export interface GrpcAnswer {
  readonly code: number | undefined;
  readonly http: number;
  readonly message: string;
  readonly body: Buffer;
}

/** TLS material for `https` sessions (the CA, a client certificate and key, the name to check). */
export interface GrpcTls {
  readonly ca?: string | Buffer | undefined;
  readonly cert?: string | Buffer | undefined;
  readonly key?: string | Buffer | undefined;
  readonly servername?: string | undefined;
}

interface Session {
  readonly session: ClientHttp2Session;
  connected: boolean;
  error?: NodeJS.ErrnoException;
}

/** Flow-control windows: what a member may send before podipam has read it, per call and in all. */
const STREAM_WINDOW = 4 << 20;
const SESSION_WINDOW = 32 << 20;

/** A streaming call once its answer began: `cancel` resets it (RST_STREAM CANCEL). */
export interface GrpcStream {
  cancel(): void;
}

/** How a stream ended: its gRPC status (undefined when none came: a reset, a broken session) and why. */
export interface GrpcStreamEnd {
  readonly code: number | undefined;
  readonly message: string;
}

/** Most bytes of one answer (etcd's own default limit on a message is 2 MiB; a list page is far less). */
const MAX_ANSWER = 64 << 20;

export class GrpcSessions {
  readonly #tls: GrpcTls | undefined;
  readonly #sessions = new Map<string, Session>();
  #closed = false;

  /** `tls` undefined: plain HTTP/2 (h2c); otherwise TLS with ALPN h2. */
  constructor(tls: GrpcTls | undefined) {
    this.#tls = tls;
  }

  /** Calls `method` (`/pkg.Service/Method`) on `endpoint` (host:port) with `message` and `metadata` headers. */
  call(endpoint: string, method: string, message: Buffer, timeoutMs: number, metadata: Readonly<Record<string, string>> = {}): Promise<GrpcAnswer> {
    return new Promise((resolve, reject) => {
      const started = this.#start(endpoint, method, metadata, reject);
      if (started === undefined) return;
      const { s, stream } = started;
      let settled = false;
      const chunks: Buffer[] = [];
      let size = 0;
      const fail = (reason: string, tls = false): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (!stream.closed) stream.close(constants.NGHTTP2_CANCEL);
        reject(new HttpPostError(reason, s.connected, tls));
      };
      const failWith = (e: NodeJS.ErrnoException): void => {
        // A stream cancelled by its session's failure carries that failure as its cause.
        const cause: NodeJS.ErrnoException = s.error ?? (e.code === 'ERR_HTTP2_STREAM_CANCEL' && e.cause instanceof Error ? e.cause : e);
        const code = cause.code ?? '';
        if (isTlsFailure(code)) fail(`TLS: ${cause.message}${cause.message.includes(code) ? '' : ` (${code})`}`, true);
        else fail(cause.code ?? cause.message);
      };
      // Only this call's stream is cancelled: the session carries the process's other calls.
      const timer = this.#timeout(endpoint, s, timeoutMs, fail);
      const head = new AnswerStatus(stream);
      stream.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_ANSWER) return fail(`sent an answer over ${MAX_ANSWER} bytes`);
        chunks.push(c);
      });
      stream.on('error', (e: NodeJS.ErrnoException) => failWith(e));
      stream.on('close', () => {
        if (settled) return;
        if (head.http !== 200 && head.http !== 0) {
          // Not a gRPC server (a proxy, another service): its status and the start of its body.
          settled = true;
          clearTimeout(timer);
          return resolve({ code: undefined, http: head.http, message: Buffer.concat(chunks, size).toString('utf8').slice(0, 200), body: Buffer.alloc(0) });
        }
        if (head.code === undefined)
          return failWith(Object.assign(new Error(`the stream closed without a gRPC status (code ${stream.rstCode})`), { code: undefined }));
        const code = Number(head.code);
        if (code !== 0) {
          settled = true;
          clearTimeout(timer);
          return resolve({ code, http: head.http, message: head.message, body: Buffer.alloc(0) });
        }
        const all = Buffer.concat(chunks, size);
        if (all.length < 5 || all[0] !== 0 || all.readUInt32BE(1) !== all.length - 5)
          return fail(`answered with a malformed gRPC message (${all.length} bytes)`);
        settled = true;
        clearTimeout(timer);
        resolve({ code: 0, http: head.http, message: '', body: all.subarray(5) });
      });
      stream.end(grpcFrame(message));
    });
  }

  /**
   * Opens streaming call `method` on `endpoint`, sends `message` and keeps the request side open.
   * Resolves once the answer's headers came: with the stream when they are a gRPC answer in
   * progress (`onMessage` then gets each message, and `onEnd` is called once when the stream
   * ends, however it ends, unless cancelled first), or with a GrpcAnswer when the server
   * refused at once (a trailers-only answer with its grpc-status, or an HTTP status other than
   * 200). Rejects with HttpPostError when no headers came within `timeoutMs`.
   */
  stream(
    endpoint: string,
    method: string,
    message: Buffer,
    timeoutMs: number,
    metadata: Readonly<Record<string, string>>,
    onMessage: (message: Buffer) => void,
    onEnd: (end: GrpcStreamEnd) => void,
  ): Promise<{ readonly stream: GrpcStream } | { readonly refused: GrpcAnswer }> {
    return new Promise((resolve, reject) => {
      const started = this.#start(endpoint, method, metadata, reject);
      if (started === undefined) return;
      const { s, stream } = started;
      const frames = new GrpcFrames(MAX_ANSWER);
      /** 'opening' until the headers, 'open' while read, 'done' after onEnd, a refusal, or cancel. */
      let state: 'opening' | 'open' | 'done' = 'opening';
      const text: Buffer[] = [];
      const cancel = (): void => {
        if (!stream.closed) stream.close(constants.NGHTTP2_CANCEL);
      };
      const failOpen = (reason: string, tls = false): void => {
        if (state !== 'opening') return;
        state = 'done';
        clearTimeout(timer);
        cancel();
        reject(new HttpPostError(reason, s.connected, tls));
      };
      const end = (code: number | undefined, why: string): void => {
        if (state !== 'open') return;
        state = 'done';
        cancel();
        onEnd({ code, message: why });
      };
      const timer = this.#timeout(endpoint, s, timeoutMs, failOpen);
      const head = new AnswerStatus(stream);
      // The status the trailers gave; an answer cut inside a message is no clean end, whatever it says.
      const endWithStatus = (): void =>
        frames.idle ? end(Number(head.code), head.message) : end(undefined, `the answer ended inside a gRPC message (status ${String(head.code)})`);
      stream.on('response', () => {
        if (state !== 'opening') return;
        // A refusal (trailers-only, or not a gRPC answer) is read to its end before resolving.
        if (head.http !== 200 || head.code !== undefined) return;
        state = 'open';
        clearTimeout(timer);
        resolve({
          stream: {
            cancel: () => {
              if (state !== 'open') return;
              state = 'done';
              cancel();
            },
          },
        });
      });
      stream.on('data', (c: Buffer) => {
        if (state === 'opening') {
          if (text.length < 16) text.push(c);
          return;
        }
        if (state !== 'open') return;
        let messages: Buffer[];
        try {
          messages = frames.push(c);
        } catch (e) {
          if (!(e instanceof GrpcFrameError)) throw e;
          return end(undefined, e.message);
        }
        for (const m of messages) {
          if (state !== 'open') return;
          onMessage(m);
        }
      });
      stream.on('error', (e: NodeJS.ErrnoException) => {
        const cause: NodeJS.ErrnoException = s.error ?? (e.code === 'ERR_HTTP2_STREAM_CANCEL' && e.cause instanceof Error ? e.cause : e);
        const code = cause.code ?? '';
        if (state === 'opening') failOpen(isTlsFailure(code) ? `TLS: ${cause.message}` : (cause.code ?? cause.message), isTlsFailure(code));
        else end(undefined, cause.code ?? cause.message);
      });
      stream.on('close', () => {
        if (state === 'opening') {
          if (head.http === 0 || (head.http === 200 && head.code === undefined))
            return failOpen(s.error?.code ?? `the stream closed before its answer (code ${stream.rstCode})`);
          state = 'done';
          clearTimeout(timer);
          const body = Buffer.concat(text).toString('utf8').slice(0, 200);
          resolve({
            refused: {
              code: head.http === 200 ? Number(head.code) : undefined,
              http: head.http,
              message: head.http === 200 ? head.message : body,
              body: Buffer.alloc(0),
            },
          });
          return;
        }
        if (state !== 'open') return;
        if (head.code === undefined) return end(undefined, s.error?.code ?? `the stream closed without a gRPC status (code ${stream.rstCode})`);
        endWithStatus();
      });
      // The answer ended (every message read, the status in its trailers) while the request side
      // is still open: the call is over, whether or not the server also resets the stream
      // (grpc-go does; a server that does not would leave 'close' waiting).
      stream.on('end', () => {
        if (state === 'open' && head.code !== undefined) endWithStatus();
      });
      stream.write(grpcFrame(message));
    });
  }

  /** Closes every session; calls in flight fail, later ones are refused (HttpPostError, not connected). */
  close(): void {
    this.#closed = true;
    for (const [endpoint, s] of [...this.#sessions]) this.#drop(endpoint, s);
  }

  /**
   * A request of `method` with `metadata` on the session to `endpoint`, or undefined after
   * rejecting with HttpPostError: when closed (no new connection — a watch renewing its token
   * while the store closes), or when node refused to start it (a header it does not take, a
   * session going away) — before any timer is set, so nothing fires later.
   */
  #start(
    endpoint: string,
    method: string,
    metadata: Readonly<Record<string, string>>,
    reject: (e: Error) => void,
  ): { readonly s: Session; readonly stream: ClientHttp2Stream } | undefined {
    if (this.#closed) {
      reject(new HttpPostError('the client is closed', false));
      return undefined;
    }
    const s = this.#session(endpoint);
    try {
      return { s, stream: s.session.request({ ':method': 'POST', ':path': method, 'content-type': 'application/grpc', te: 'trailers', ...metadata }) };
    } catch (e) {
      reject(new HttpPostError(`could not start the call: ${e instanceof Error ? e.message : String(e)}`, false));
      return undefined;
    }
  }

  /**
   * The timer of a call on `s` that fails it after `ms` with `fail`. A session that has not even
   * connected by then (a SYN or a handshake lost, a member that accepts and says nothing) is
   * dropped too, so the next call dials again instead of queueing behind a connection the
   * kernel may keep trying for minutes; its calls never left.
   */
  #timeout(endpoint: string, s: Session, ms: number, fail: (reason: string) => void): NodeJS.Timeout {
    return setTimeout(() => {
      fail(`did not answer within ${ms} ms${s.connected ? '' : ' (not connected)'}`);
      if (!s.connected) this.#drop(endpoint, s);
    }, ms);
  }

  #session(endpoint: string): Session {
    const known = this.#sessions.get(endpoint);
    if (known !== undefined && !known.session.closed && !known.session.destroyed) return known;
    const tls = this.#tls;
    const options: SecureClientSessionOptions =
      tls === undefined
        ? {}
        : {
            ALPNProtocols: ['h2'],
            ...(tls.ca ? { ca: tls.ca } : {}),
            ...(tls.cert ? { cert: tls.cert } : {}),
            ...(tls.key ? { key: tls.key } : {}),
            ...(tls.servername ? { servername: tls.servername } : {}),
          };
    // HTTP/2's default windows are 64 KiB for the whole connection and for each stream: the
    // answers of a busy process's concurrent calls would wait on window updates.
    const session = connect(`${tls === undefined ? 'http' : 'https'}://${endpoint}`, { ...options, settings: { initialWindowSize: STREAM_WINDOW } });
    const s: Session = { session, connected: false };
    session.once('connect', () => {
      // Node emits 'connect' a tick after the socket connected, even on a session dropped in
      // between (a call's timeout, close()): nothing to set up on that one.
      if (session.destroyed || session.closed) return;
      s.connected = true;
      session.setLocalWindowSize(SESSION_WINDOW);
    });
    session.on('error', (e: NodeJS.ErrnoException) => {
      s.error = e;
      this.#drop(endpoint, s);
    });
    session.once('goaway', () => this.#forget(endpoint, s));
    session.once('close', () => this.#forget(endpoint, s));
    session.unref();
    this.#sessions.set(endpoint, s);
    return s;
  }

  #forget(endpoint: string, s: Session): void {
    if (this.#sessions.get(endpoint) === s) this.#sessions.delete(endpoint);
  }

  #drop(endpoint: string, s: Session): void {
    this.#forget(endpoint, s);
    if (!s.session.destroyed) s.session.destroy();
  }
}

/** What an answer says of itself: its HTTP status, and the gRPC status in its headers (a trailers-only answer) or trailers. */
class AnswerStatus {
  http = 0;
  code: string | undefined;
  message = '';

  constructor(stream: ClientHttp2Stream) {
    stream.on('response', (h) => {
      this.http = Number(h[':status']);
      this.#take(h);
    });
    stream.on('trailers', (h: Record<string, unknown>) => this.#take(h));
  }

  #take(h: Record<string, unknown>): void {
    const code = h['grpc-status'];
    if (code === undefined) return;
    this.code = String(code);
    this.message = percentDecoded(String(h['grpc-message'] ?? ''));
  }
}

function percentDecoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
