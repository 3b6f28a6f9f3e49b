/**
 * The HTTP plumbing of `podipam serve`: one `node:http` server, requests routed to handlers
 * that return JSON values, every thrown error turned into a JSON error response by
 * `toHttpError` (the one mapping), bearer-token authorization by method, request timing into
 * the metrics. Handlers never touch `res`.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { HttpError, toHttpError } from './http-error.js';
import { authorize, roleOf, type Role, type Tokens } from './auth.js';
import type { Router } from './router.js';
import { parseJsonObject, type Body } from './validate.js';
import type { ServerMetrics } from './metrics.js';
import { checkHost, checkJsonType, checkOrigin, hasBody, type HostPolicy } from './request-guard.js';
import { exactJson } from '../../util/exact-json.js';
import { checkBody } from './check-body.js';
import { routeKey, type RouteDoc } from './route-doc.js';

/** What a handler sees. */
export interface Ctx {
  readonly params: Readonly<Record<string, string>>;
  readonly query: URLSearchParams;
  readonly role: Role;
  /** The request's headers (the dashboard's routes read If-None-Match). */
  readonly headers: IncomingHttpHeaders;
  /** The JSON object body (read lazily; `{}` when empty). */
  body(): Promise<Body>;
}

/** A non-JSON answer (the dashboard, metrics). */
export class RawResponse {
  constructor(
    readonly status: number,
    readonly contentType: string,
    readonly body: string | Buffer,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {}
}

export interface HandlerSpec {
  readonly run: (ctx: Ctx) => unknown;
  /** Who may call: 'public' (no token), 'read' (read or admin token), 'admin'. Default by method. */
  readonly access?: 'public' | 'read' | 'admin';
  /** Status of a successful JSON answer (default 200). */
  readonly status?: number;
}

const MAX_BODY = 1 << 20;

export interface HttpServerOptions {
  readonly router: Router<HandlerSpec>;
  readonly tokens: Tokens;
  /** The Host header values answered (see request-guard.ts). */
  readonly hostPolicy: HostPolicy;
  readonly metrics?: ServerMetrics;
  /** Called for each 5xx with the error, for the log. */
  readonly onServerError?: (e: HttpError, method: string, path: string) => void;
  /** HTTPS with this certificate chain and private key (PEM); plain HTTP without. */
  readonly tls?: ServerTls;
  /** The route table (src/server/api/api-docs.ts): a route's `body` schema is checked before its handler runs. */
  readonly docs?: Readonly<Record<string, RouteDoc>>;
}

export interface ServerTls {
  readonly cert: string | Buffer;
  readonly key: string | Buffer;
}

export function createHttpServer(options: HttpServerOptions): Server {
  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    void handle(req, res, options);
  };
  // An https.Server is an http.Server (a tls.Server with the same request API).
  const server: Server = options.tls ? createHttpsServer({ cert: options.tls.cert, key: options.tls.key }, onRequest) : createServer(onRequest);
  server.keepAliveTimeout = 5000;
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  return server;
}

async function handle(req: IncomingMessage, res: ServerResponse, o: HttpServerOptions): Promise<void> {
  const started = process.hrtime.bigint();
  const method = req.method ?? 'GET';
  const url = new URL(req.url ?? '/', 'http://podipam');
  let route = 'unmatched';
  let status = 500;
  try {
    const mutates = !(method === 'GET' || method === 'HEAD');
    checkHost(req.headers.host, o.hostPolicy);
    if (mutates) {
      checkOrigin(req.headers.origin, req.headers.host as string);
      if (hasBody(req.headers)) checkJsonType(req.headers['content-type']);
    }
    const m = o.router.match(method, url.pathname);
    route = m.pattern;
    const access = m.handler.access ?? (mutates ? 'admin' : 'read');
    const role = roleOf(req.headers.authorization, o.tokens);
    if (access !== 'public') authorize(role, access === 'admin', o.tokens);
    let bodyPromise: Promise<Body> | undefined;
    const bodySchema = o.docs?.[routeKey(m.method, m.pattern)]?.body;
    if (bodySchema !== undefined) {
      bodyPromise = readBody(req).then((b) => checkBody(bodySchema, b));
      await bodyPromise;
    }
    const ctx: Ctx = {
      params: m.params,
      query: url.searchParams,
      role,
      headers: req.headers,
      body: () => (bodyPromise ??= readBody(req)),
    };
    const out = await m.handler.run(ctx);
    // Drain an unread body so keep-alive connections stay usable.
    if (!bodyPromise && mutates) await readBody(req).catch(() => undefined);
    if (out instanceof RawResponse) {
      status = out.status;
      res.writeHead(out.status, { 'content-type': out.contentType, ...out.headers });
      res.end(method === 'HEAD' ? undefined : out.body);
    } else {
      status = m.handler.status ?? 200;
      sendJson(res, status, out ?? { ok: true }, method === 'HEAD');
    }
  } catch (e) {
    const err = toHttpError(e);
    status = err.status;
    if (status >= 500) o.onServerError?.(err, method, url.pathname);
    const headers: Record<string, string> = {};
    if (status === 401) headers['www-authenticate'] = 'Bearer realm="podipam"';
    if (status === 503) headers['retry-after'] = '1';
    sendJson(res, status, err.toJSON(), method === 'HEAD', headers);
  } finally {
    const secs = Number(process.hrtime.bigint() - started) / 1e9;
    o.metrics?.requestDuration.observe({ method, route, status: String(status) }, secs);
  }
}

function sendJson(res: ServerResponse, status: number, value: unknown, head: boolean, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const body = exactJson(value);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(head ? undefined : body);
}

function readBody(req: IncomingMessage): Promise<Body> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY && !failed) {
        failed = true;
        reject(new HttpError(413, 'payload_too_large', `request body exceeds ${MAX_BODY} bytes`));
      }
      if (!failed) chunks.push(c);
    });
    req.on('error', (e) => reject(new HttpError(400, 'bad_request', `cannot read request body: ${e.message}`)));
    req.on('end', () => {
      if (failed) return;
      try {
        resolve(parseJsonObject(Buffer.concat(chunks).toString('utf8')));
      } catch (e) {
        reject(e);
      }
    });
  });
}
