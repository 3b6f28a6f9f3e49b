import type { Agent, ClientRequest, RequestOptions } from 'node:http';
import type { GrpcTls } from './grpc-sessions.js';

/** A status and body from the server. */
export interface HttpAnswer {
  readonly status: number;
  readonly text: string;
}

/** How to reach the server: node:http's or node:https's `request` with a matching agent. */
export interface HttpTransport {
  readonly request: (options: RequestOptions & { servername?: string }) => ClientRequest;
  readonly agent: Agent;
  /** HTTPS: a connection counts as open once its TLS handshake is done. */
  readonly secure: boolean;
  /** TLS: the name to send (SNI) and to check the certificate against, instead of the host. */
  readonly servername?: string;
  /** HTTPS: the TLS material of the agent, for the HTTP/2 sessions of gRPC calls. */
  readonly tls?: GrpcTls;
}

/**
 * A POST that got no complete answer. `connected` tells whether a connection to the server
 * was open (so the request may have reached it); when false, the server never saw it. `tls`:
 * the TLS handshake failed (certificate not trusted or not matching, client certificate
 * refused), which retrying will not mend.
 */
export class HttpPostError extends Error {
  override readonly name = 'HttpPostError';
  constructor(
    readonly reason: string,
    readonly connected: boolean,
    readonly tls = false,
  ) {
    super(reason);
  }
}

// OpenSSL's certificate verification codes as Node reports them, and its TLS error families.
const TLS_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'INVALID_PURPOSE',
  'HOSTNAME_MISMATCH',
  'EPROTO',
]);
/** An error code of a failed TLS handshake or a certificate refused. */
export const isTlsFailure = (code: string): boolean => TLS_CODES.has(code) || code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_');

/**
 * POSTs a JSON `body` to `http(s)://endpoint/path` through the transport's keep-alive agent,
 * with `headers` added, and resolves with the whole answer, whatever its status; rejects with
 * HttpPostError on a connection or TLS failure or when no complete answer came within
 * `timeoutMs`.
 *
 * node:http rather than the global fetch: fetch loads undici on first use and slows process
 * exit, about 140 ms per run of a one-shot process like the CNI plugin, and cannot tell a
 * connect timeout from a lost answer.
 */
export function httpPost(
  transport: HttpTransport,
  endpoint: string,
  path: string,
  body: string,
  timeoutMs: number,
  headers: Readonly<Record<string, string>> = {},
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    let connected = false;
    let settled = false;
    const fail = (reason: string, tls = false) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      reject(new HttpPostError(reason, connected, tls));
    };
    const req = postRequest(transport, endpoint, path, body, headers, { agent: transport.agent });
    const timer = setTimeout(() => fail(`did not answer within ${timeoutMs} ms`), timeoutMs);
    req.on('socket', (socket) => {
      if (socket.connecting || (transport.secure && !(socket as { encrypted?: boolean; authorized?: boolean }).authorized)) {
        socket.once(transport.secure ? 'secureConnect' : 'connect', () => (connected = true));
      } else {
        connected = true; // a kept-alive connection
      }
    });
    req.on('error', (e: NodeJS.ErrnoException) => {
      const code = e.code ?? '';
      if (isTlsFailure(code)) fail(`TLS: ${e.message}${e.message.includes(code) ? '' : ` (${code})`}`, true);
      else fail(e.code ?? e.message);
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', (e: NodeJS.ErrnoException) => fail(e.code ?? e.message));
      res.on('aborted', () => fail('the connection closed mid-answer'));
      res.on('end', () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') });
      });
    });
    req.end(body);
  });
}

/**
 * The request of a JSON POST of `body` to `http(s)://endpoint/path` (`endpoint` is host:port,
 * an IPv6 host in brackets), with `headers` added and `options` (the agent, TLS material)
 * merged in; not yet sent (the caller attaches its handlers, then `req.end(body)`).
 */
export function postRequest(
  transport: HttpTransport,
  endpoint: string,
  path: string,
  body: string,
  headers: Readonly<Record<string, string>>,
  options: RequestOptions,
): ClientRequest {
  const colon = endpoint.lastIndexOf(':');
  const host = endpoint.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
  const port = Number(endpoint.slice(colon + 1));
  return transport.request({
    host,
    port,
    path,
    method: 'POST',
    ...options,
    ...(transport.servername === undefined ? {} : { servername: transport.servername }),
    headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
  });
}
