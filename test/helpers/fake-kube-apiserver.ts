/**
 * A small Kubernetes API server for tests, on 127.0.0.1: just enough of `/api/v1/nodes` for
 * the real `@kubernetes/client-node` — list, watch (`?watch=true`, chunked JSON event lines from
 * a resourceVersion), get, and patch (merge and strategic-merge, with spec.podCIDR(s) immutable
 * once set, as the real API server enforces) — and of pods: list across namespaces
 * (`/api/v1/pods`, with `fieldSelector=spec.nodeName=X`), list in a namespace, get and delete
 * (`/api/v1/namespaces/NS/pods/NAME`), pods carrying `metadata.ownerReferences` (a
 * StatefulSet's, a ReplicaSet's). Requests must carry the bearer token of the kubeconfig it writes.
 */
import { writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

const TOKEN = 'fake-kube-token';

export interface FakeNode {
  apiVersion: 'v1';
  kind: 'Node';
  metadata: { name: string; uid: string; resourceVersion: string; labels: Record<string, string>; creationTimestamp: string };
  spec: { podCIDR?: string; podCIDRs?: string[]; taints?: { key: string; value?: string; effect: string; timeAdded?: string }[] };
  status: Record<string, unknown>;
}

export interface FakePod {
  apiVersion: 'v1';
  kind: 'Pod';
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    resourceVersion: string;
    creationTimestamp: string;
    ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string; controller: boolean; blockOwnerDeletion: boolean }[];
  };
  spec: { nodeName?: string; containers: { name: string; image: string }[] };
  status: { phase: string };
}

export interface AddPodOptions {
  readonly node?: string;
  /** The controller owning the pod (`StatefulSet`, `ReplicaSet`, …); none by default. */
  readonly ownerKind?: string;
  readonly ownerName?: string;
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
  /** Creates a pod (a fresh uid each time, as the API server does for a recreated pod). */
  addPod(namespace: string, name: string, opts?: AddPodOptions): FakePod;
  /** Removes a pod (as `kubectl delete pod --force --grace-period=0` would). */
  deletePod(namespace: string, name: string): void;
  getPod(namespace: string, name: string): FakePod | undefined;
  pods(): FakePod[];
  /** Pod requests served, by kind: `get`, `list`, `delete`. */
  readonly podRequests: { get: number; list: number; delete: number };
  /** Ends every open watch (clients must re-watch from their resourceVersion). */
  dropWatches(): void;
  /** The next `n` lists of nodes (not watches, not gets) answer 500, as an overloaded API server may. */
  failNodeLists(n: number): void;
  /** The next `n` gets of one pod answer 500. */
  failPodGets(n: number): void;
  /** Node requests served, by kind: `get` (one node), `list`. */
  readonly nodeRequests: { get: number; list: number };
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
  const out: Record<string, unknown> = typeof target === 'object' && target !== null && !Array.isArray(target) ? { ...target } : {};
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
  const pods = new Map<string, FakePod>();
  const podRequests = { get: 0, list: 0, delete: 0 };
  const nodeRequests = { get: 0, list: 0 };
  let failNodeLists = 0;
  let failPodGets = 0;
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
    const pm = /^\/api\/v1\/(?:namespaces\/([^/]+)\/)?pods(?:\/([^/]+))?$/.exec(url.pathname);
    if (pm) return handlePods(req, res, url, pm[1] ? decodeURIComponent(pm[1]) : undefined, pm[2] ? decodeURIComponent(pm[2]) : undefined);
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
      nodeRequests.list++;
      if (failNodeLists > 0) {
        failNodeLists--;
        return status(res, 500, 'InternalError', 'fake kube: node list failed (test fault)');
      }
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ kind: 'NodeList', apiVersion: 'v1', metadata: { resourceVersion: String(rv) }, items: [...nodes.values()] }));
      return;
    }
    const node = name ? nodes.get(name) : undefined;
    if (req.method === 'GET') nodeRequests.get++;
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
    // A patch naming metadata.resourceVersion applies only to that version (optimistic concurrency).
    const precondition = (body as { metadata?: { resourceVersion?: unknown } } | null)?.metadata?.resourceVersion;
    if (precondition !== undefined && precondition !== node.metadata.resourceVersion) return status(res, 409, 'Conflict', `Operation cannot be fulfilled on nodes "${name}": the object has been modified; please apply your changes to the latest version and try again`);
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

  const json = (res: ServerResponse, body: unknown): void => {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(body));
  };

  const handlePods = (req: IncomingMessage, res: ServerResponse, url: URL, namespace: string | undefined, name: string | undefined): void => {
    if (name === undefined) {
      if (req.method !== 'GET') return status(res, 405, 'MethodNotAllowed', `${req.method} is not supported`);
      podRequests.list++;
      let nodeName: string | undefined;
      for (const term of (url.searchParams.get('fieldSelector') ?? '').split(',').filter((t) => t !== '')) {
        const f = /^([^=!]+)==?(.*)$/.exec(term);
        if (!f || f[1] !== 'spec.nodeName') return status(res, 400, 'BadRequest', `"${term}" is not a known field selector: only "spec.nodeName" is served here`);
        nodeName = f[2];
      }
      const items = [...pods.values()].filter((p) => (namespace === undefined || p.metadata.namespace === namespace) && (nodeName === undefined || (p.spec.nodeName ?? '') === nodeName));
      return json(res, { kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: String(rv) }, items });
    }
    if (namespace === undefined) return status(res, 404, 'NotFound', `the server could not find the requested resource ${url.pathname}`);
    const pod = pods.get(`${namespace}/${name}`);
    if (req.method === 'GET') {
      podRequests.get++;
      if (failPodGets > 0) {
        failPodGets--;
        return status(res, 500, 'InternalError', 'fake kube: pod get failed (test fault)');
      }
      if (!pod) return status(res, 404, 'NotFound', `pods "${name}" not found`);
      return json(res, pod);
    }
    if (req.method === 'DELETE') {
      podRequests.delete++;
      if (!pod) return status(res, 404, 'NotFound', `pods "${name}" not found`);
      pods.delete(`${namespace}/${name}`);
      return json(res, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: { name, kind: 'pods', uid: pod.metadata.uid } });
    }
    return status(res, 405, 'MethodNotAllowed', `${req.method} is not supported`);
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
    addPod(namespace, name, opts = {}) {
      if (pods.has(`${namespace}/${name}`)) throw new Error(`fake kube: pod ${namespace}/${name} exists`);
      const pod: FakePod = {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          name,
          namespace,
          uid: `pod-uid-${++uid}`,
          resourceVersion: String(++rv),
          creationTimestamp: new Date().toISOString(),
          ...(opts.ownerKind
            ? { ownerReferences: [{ apiVersion: 'apps/v1', kind: opts.ownerKind, name: opts.ownerName ?? name.replace(/-[^-]*$/, ''), uid: `owner-uid-${++uid}`, controller: true, blockOwnerDeletion: true }] }
            : {}),
        },
        spec: { ...(opts.node ? { nodeName: opts.node } : {}), containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }] },
        status: { phase: 'Running' },
      };
      pods.set(`${namespace}/${name}`, pod);
      return pod;
    },
    deletePod(namespace, name) {
      if (!pods.delete(`${namespace}/${name}`)) throw new Error(`fake kube: no pod ${namespace}/${name}`);
      rv++;
    },
    getPod: (namespace, name) => pods.get(`${namespace}/${name}`),
    pods: () => [...pods.values()],
    podRequests,
    nodeRequests,
    failNodeLists(n) {
      failNodeLists = n;
    },
    failPodGets(n) {
      failPodGets = n;
    },
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
