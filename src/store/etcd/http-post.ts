import { Agent, request } from 'node:http';

/** A status and body from the server. */
export interface HttpAnswer {
  readonly status: number;
  readonly text: string;
}

/**
 * A POST that got no complete answer. `connected` tells whether a connection to the server
 * was open (so the request may have reached it); when false, the server never saw it.
 */
export class HttpPostError extends Error {
  override readonly name = 'HttpPostError';
  constructor(readonly reason: string, readonly connected: boolean) {
    super(reason);
  }
}

/**
 * POSTs a JSON `body` to `http://endpoint/path` through `agent` (keep-alive) and resolves
 * with the whole answer, whatever its status; rejects with HttpPostError on a connection
 * failure or when no complete answer came within `timeoutMs`.
 *
 * node:http rather than the global fetch: fetch loads undici on first use and slows process
 * exit, about 140 ms per run of a one-shot process like the CNI plugin, and cannot tell a
 * connect timeout from a lost answer.
 */
export function httpPost(agent: Agent, endpoint: string, path: string, body: string, timeoutMs: number): Promise<HttpAnswer> {
  const colon = endpoint.lastIndexOf(':');
  const host = endpoint.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
  const port = Number(endpoint.slice(colon + 1));
  return new Promise((resolve, reject) => {
    let connected = false;
    let settled = false;
    const fail = (reason: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      reject(new HttpPostError(reason, connected));
    };
    const req = request({
      host,
      port,
      path,
      method: 'POST',
      agent,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    const timer = setTimeout(() => fail(`did not answer within ${timeoutMs} ms`), timeoutMs);
    req.on('socket', (socket) => {
      if (socket.connecting) socket.once('connect', () => (connected = true));
      else connected = true; // a kept-alive connection
    });
    req.on('error', (e: NodeJS.ErrnoException) => fail(e.code ?? e.message));
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
