/**
 * A TCP proxy on loopback that forwards to `target` (host:port) and holds every chunk the
 * target sends for `delayMs` (in order) before passing it on: a datastore that answers slowly,
 * so calls queue behind one in flight. Requests go through at once.
 */
import { connect, createServer, type Socket } from 'node:net';

export interface SlowProxy {
  /** host:port to connect to instead of the target. */
  readonly endpoint: string;
  close(): Promise<void>;
}

export async function startSlowProxy(target: string, delayMs: number): Promise<SlowProxy> {
  const colon = target.lastIndexOf(':');
  const host = target.slice(0, colon);
  const port = Number(target.slice(colon + 1));
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(port, host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.on('data', (c) => upstream.write(c));
    client.on('end', () => upstream.end());
    let due = 0;
    upstream.on('data', (c) => {
      due = Math.max(Date.now() + delayMs, due);
      setTimeout(() => client.destroyed || client.write(c), due - Date.now());
    });
    upstream.on('end', () => setTimeout(() => client.end(), Math.max(0, due - Date.now())));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `127.0.0.1:${(server.address() as { port: number }).port}`,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
