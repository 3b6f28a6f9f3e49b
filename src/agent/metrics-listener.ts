/**
 * The agent's small HTTP listener for its metrics (`--metrics-listen`, default 127.0.0.1:7421):
 * /metrics from the registry it is given, and /healthz for probes. It applies serve's Host check
 * (src/server/http/request-guard.ts): a page whose host name is rebound to 127.0.0.1 gets 421,
 * not the node's counters.
 */
import { type Server, createServer } from 'node:http';
import type { Registry } from 'prom-client';
import { checkHost, hostPolicy } from '../server/http/request-guard.js';
import { HttpError } from '../server/http/http-error.js';

/** Serves `registry` at /metrics and /healthz on host:port; resolves once listening, rejects naming the address when it cannot. */
export async function listenMetrics(registry: Registry, host: string, port: number): Promise<Server> {
  const policy = hostPolicy(host);
  const server = createServer((req, res) => {
    try {
      checkHost(req.headers.host, policy);
    } catch (e) {
      if (!(e instanceof HttpError)) throw e;
      res.writeHead(e.status, { 'content-type': 'text/plain' }).end(`${e.message}\n`);
      return;
    }
    if (req.method !== 'GET') {
      res.writeHead(405).end();
      return;
    }
    if (req.url === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
      return;
    }
    if (req.url !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      (e: Error) => res.writeHead(500).end(e.message),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) => {
      const at = `${host.includes(':') ? `[${host}]` : host}:${port}`;
      reject(
        new Error(
          `cannot listen on --metrics-listen ${at}: ${e.code === 'EADDRINUSE' ? 'the address is in use (another agent? choose one with --metrics-listen HOST:PORT, or "off")' : e.message}`,
        ),
      );
    });
    server.listen(port, host, () => resolve());
  });
  return server;
}
