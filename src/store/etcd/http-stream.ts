import type { ClientRequest, IncomingMessage } from 'node:http';
import { HttpPostError, type HttpTransport, postRequest } from './http-post.js';

/** A streaming answer: the status, and the response to read (already read into `text` unless 200). */
export interface HttpStream {
  readonly status: number;
  readonly request: ClientRequest;
  readonly response: IncomingMessage;
  /** The whole body of an answer that is not 200 (then `response` has ended). */
  readonly text: string;
}

/**
 * POSTs a JSON `body` to `http(s)://endpoint/path` on a connection of its own (a stream holds
 * it for as long as it lasts) and resolves once the answer's head arrived: a 200's body is
 * left to the caller to read as it comes, any other status is read whole into `text`. Rejects
 * with HttpPostError when no connection or no head (or non-200 body) came within
 * `timeoutMs`. The caller ends the stream with `request.destroy()`.
 */
export function httpStream(
  transport: HttpTransport,
  endpoint: string,
  path: string,
  body: string,
  timeoutMs: number,
  headers: Readonly<Record<string, string>> = {},
): Promise<HttpStream> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const fail = (reason: string, tls = false) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      reject(new HttpPostError(reason, false, tls));
    };
    const req = postRequest(transport, endpoint, path, body, headers, {
      agent: false, // a connection of its own, never returned to the keep-alive pool
      ...(transport.secure ? agentTls(transport) : {}),
    });
    const timer = setTimeout(() => fail(`did not answer within ${timeoutMs} ms`), timeoutMs);
    req.on('error', (e: NodeJS.ErrnoException) => fail(e.code ?? e.message, /SSL|TLS|CERT|EPROTO/.test(e.code ?? '')));
    req.on('response', (res) => {
      if (res.statusCode === 200) {
        settled = true;
        clearTimeout(timer);
        resolve({ status: 200, request: req, response: res, text: '' });
        return;
      }
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', (e: NodeJS.ErrnoException) => fail(e.code ?? e.message));
      res.on('end', () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, request: req, response: res, text: Buffer.concat(chunks).toString('utf8') });
      });
    });
    req.end(body);
  });
}

/** With `agent: false` the TLS material must travel in the request options. */
function agentTls(transport: HttpTransport): Record<string, unknown> {
  const o = (transport.agent as unknown as { options?: Record<string, unknown> }).options ?? {};
  const out: Record<string, unknown> = {};
  for (const k of ['ca', 'cert', 'key']) if (o[k] !== undefined) out[k] = o[k];
  return out;
}
