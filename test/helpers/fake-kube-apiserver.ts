/**
 * A small Kubernetes API server for tests, on 127.0.0.1: just enough of `/api/v1/nodes` for
 * the real `@kubernetes/client-node` — list, watch (`?watch=true`, chunked JSON event lines from
 * a resourceVersion), get, and patch (merge and strategic-merge, with spec.podCIDR(s) immutable
 * once set, as the real API server enforces). Requests must carry the bearer token of the
 * kubeconfig it writes.
 */
import { writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

const TOKEN = 'fake-kube-token';

export interface FakeNode {
  apiVersion: 'v1';
  kind: 'Node';
  metadata: { name: string; uid: string; resourceVersion: string; labels: Record<string, string>; creationTimestamp: string };
  spec: { podCIDR?: string; podCIDRs?: string[] };
  status: Record<string, unknown>;
}

export interface PatchRecord {
  readonly name: string;
  readonly contentType: string;
  readonly body: unknown;
}

export interface FakeKubeApiServer {
  /** `http://127.0.0.1:PORT`. */
  readonly url: string;
  /** Every PATCH received, in order. */
  readonly patches: readonly PatchRecord[];
  /** Writes a kubeconfig naming this server (with its token) to `path`. */
  writeKubeconfig(path: string): void;
  addNode(name: string, labels?: Record<string, string>, spec?: FakeNode['spec']): FakeNode;
  deleteNode(name: string): void;
  getNode(name: string): FakeNode | undefined;
  nodes(): FakeNode[];
  /** Ends every open watch (clients must re-watch from their resourceVersion). */
  dropWatches(): void;
  close(): Promise<void>;
}

interface WatchEvent {
  readonly rv: number;
  readonly line: string;
}

function status(res: ServerResponse, code: number, reason: string, message: string): void {
  res.writeHead(code, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code }));
}

/** RFC 7386 JSON merge patch (null deletes, objects merge, anything else replaces). */
function mergePatch(target: unknown, patch: unknown): unknown {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> = typeof target === 'object' && target !== null && !Array.isArray(target) ? { ...(target as object) } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Starts the server on a free loopback port. */
export async function startFakeKubeApiServer(): Promise<FakeKubeApiServer> {
  const nodes = new Map<string, FakeNode>();
  const events: WatchEvent[] = [];
  const watchers = new Set<{ res: ServerResponse }>();
  const patches: PatchRecord[] = [];
  let rv = 1;
  let uid = 0;

  const emit = (type: 'ADDED' | 'MODIFIED' | 'DELETED', node: FakeNode): void => {
    const e = { rv: Number(node.metadata.resourceVersion), line: `${JSON.stringify({ type, object: node })}\n` };
    events.push(e);
    for (const w of watchers) w.res.write(e.line);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (req.headers.authorization !== `Bearer ${TOKEN}`) return status(res, 401, 'Unauthorized', 'Unauthorized');
    const url = new URL(req.url ?? '/', 'http://x');
    const m = /^\/api\/v1\/nodes(?:\/([^/]+))?$/.exec(url.pathname);
    if (!m) return status(res, 404, 'NotFound', `the server could not find the requested resource ${url.pathname}`);
    const name = m[1] ? decodeURIComponent(m[1]) : undefined;
    if (req.method === 'GET' && !name && url.searchParams.get('watch') === 'true') {
      const from = Number(url.searchParams.get('resourceVersion') ?? '0');
      res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
      res.flushHeaders();
      for (const e of events) if (e.rv > from) res.write(e.line);
      const w = { res };
      watchers.add(w);
      res.on('close', () => watchers.delete(w));
      return;
    }
    if (req.method === 'GET' && !name) {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ kind: 'NodeList', apiVersion: 'v1', metadata: { resourceVersion: String(rv) }, items: [...nodes.values()] }));
      return;
    }
    const node = name ? nodes.get(name) : undefined;
    if (!name || !node) return status(res, 404, 'NotFound', `nodes "${name}" not found`);
    if (req.method === 'GET') {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(node));
      return;
    }
    if (req.method !== 'PATCH') return status(res, 405, 'MethodNotAllowed', `${req.method} is not supported`);
    const contentType = String(req.headers['content-type'] ?? '');
    const raw = await readBody(req);
    if (!['application/merge-patch+json', 'application/strategic-merge-patch+json'].includes(contentType)) {
      return status(res, 415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: application/merge-patch+json, application/strategic-merge-patch+json; got ${contentType}`);
    }
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      return status(res, 400, 'BadRequest', 'invalid JSON');
    }
    patches.push({ name, contentType, body });
    const next = mergePatch(node, body) as FakeNode;
    const before = node.spec.podCIDRs ?? [];
    const after = next.spec.podCIDRs ?? [];
    if ((node.spec.podCIDR && next.spec.podCIDR !== node.spec.podCIDR) || (before.length > 0 && JSON.stringify(before) !== JSON.stringify(after))) {
      return status(res, 422, 'Invalid', `Node "${name}" is invalid: spec.podCIDRs: Forbidden: node updates may not change podCIDR except from "" to valid`);
    }
    next.metadata = { ...node.metadata, resourceVersion: String(++rv) };
    nodes.set(name, next);
    emit('MODIFIED', next);
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(next));
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((e: Error) => status(res, 500, 'InternalError', e.message));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;

  return {
    url,
    patches,
    writeKubeconfig(path) {
      writeFileSync(
        path,
        [
          'apiVersion: v1',
          'kind: Config',
          'clusters:',
          '- name: fake',
          '  cluster:',
          `    server: ${url}`,
          // client-node refuses plain HTTP unless TLS verification is explicitly off.
          '    insecure-skip-tls-verify: true',
          'contexts:',
          '- name: fake',
          '  context:',
          '    cluster: fake',
          '    user: fake',
          'current-context: fake',
          'users:',
          '- name: fake',
          '  user:',
          `    token: ${TOKEN}`,
          '',
        ].join('\n'),
      );
    },
    addNode(name, labels = {}, spec = {}) {
      if (nodes.has(name)) throw new Error(`fake kube: node ${name} exists`);
      const node: FakeNode = {
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name, uid: `uid-${++uid}`, resourceVersion: String(++rv), labels, creationTimestamp: new Date().toISOString() },
        spec,
        status: {},
      };
      nodes.set(name, node);
      emit('ADDED', node);
      return node;
    },
    deleteNode(name) {
      const node = nodes.get(name);
      if (!node) throw new Error(`fake kube: no node ${name}`);
      nodes.delete(name);
      emit('DELETED', { ...node, metadata: { ...node.metadata, resourceVersion: String(++rv) } });
    },
    getNode: (name) => nodes.get(name),
    nodes: () => [...nodes.values()],
    dropWatches() {
      for (const w of watchers) w.res.end();
      watchers.clear();
    },
    async close() {
      for (const w of watchers) w.res.end();
      watchers.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
