/**
 * A small Kubernetes API server for tests, on 127.0.0.1: just enough of the core v1 API for the
 * real `@kubernetes/client-node` and the agent's own list+watch:
 * - nodes (`/api/v1/nodes`): list, watch, get, patch (merge and strategic-merge, with
 *   spec.podCIDR(s) immutable once set, as the real API server enforces);
 * - pods: list and watch across namespaces (`/api/v1/pods`, with `fieldSelector=spec.nodeName=X`),
 *   list in a namespace, get and delete (`/api/v1/namespaces/NS/pods/NAME`); pods carry
 *   `metadata.annotations` and `metadata.ownerReferences` (a StatefulSet's, a ReplicaSet's);
 * - namespaces (`/api/v1/namespaces`): list, watch, get, with annotations.
 * A watch (`?watch=true`) streams chunked JSON event lines after its `resourceVersion` and ends
 * after `timeoutSeconds` when given. `expireWatchHistory()` compacts the event history as etcd
 * compaction does: a later watch from an older resourceVersion gets the API server's answer, an
 * ERROR event with a `410 Expired` Status, and must relist. `down()`/`up()` stop and restart the
 * listener on the same port (the state kept), as an API server restart looks to its clients.
 * Requests must carry the bearer token of the kubeconfig it writes (FAKE_KUBE_TOKEN, also the
 * service account token a pod is given); every request is counted by resource and kind, so
 * tests can count API round trips. Plain HTTP on 127.0.0.1 by default; with `tls` it serves
 * HTTPS (what a pod's in-cluster config speaks) on `host`.
 */
import { writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';

const TOKEN = 'fake-kube-token';
/** The bearer token every request must carry. */
export const FAKE_KUBE_TOKEN = TOKEN;

export interface FakeKubeOptions {
  /** Serve HTTPS with this certificate and key (PEM). */
  readonly tls?: { readonly cert: string; readonly key: string };
  /** The address to listen on (default 127.0.0.1). */
  readonly host?: string;
}

export interface FakeNode {
  apiVersion: 'v1';
  kind: 'Node';
  metadata: { name: string; uid: string; resourceVersion: string; labels: Record<string, string>; creationTimestamp: string };
  spec: { podCIDR?: string; podCIDRs?: string[]; taints?: { key: string; value?: string; effect: string; timeAdded?: string }[] };
  status: Record<string, unknown>;
}

export interface FakeOwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
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
    annotations?: Record<string, string>;
    ownerReferences?: FakeOwnerReference[];
  };
  spec: { nodeName?: string; containers: { name: string; image: string }[] };
  status: { phase: string };
}

export interface FakeNamespace {
  apiVersion: 'v1';
  kind: 'Namespace';
  metadata: { name: string; uid: string; resourceVersion: string; creationTimestamp: string; annotations?: Record<string, string> };
  spec: { finalizers: string[] };
  status: { phase: string };
}

export interface AddPodOptions {
  readonly node?: string;
  /** The controller owning the pod (`StatefulSet`, `ReplicaSet`, …); none by default. */
  readonly ownerKind?: string;
  readonly ownerName?: string;
  /** Owner references as given (instead of `ownerKind`): to test which one counts. */
  readonly owners?: readonly { readonly kind: string; readonly name?: string; readonly controller?: boolean }[];
  readonly annotations?: Readonly<Record<string, string>>;
}

export interface PatchRecord {
  readonly name: string;
  readonly contentType: string;
  readonly body: unknown;
}

/** Requests served for one resource, by kind (`get` is one object, `list` a collection, `watch` a watch stream opened). */
export interface RequestCounts {
  get: number;
  list: number;
  watch: number;
}

export interface FakeKubeApiServer {
  /** `http://127.0.0.1:PORT` (`https://HOST:PORT` with TLS). */
  readonly url: string;
  readonly port: number;
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
  /** Merges annotations into a pod's (a null value removes one): a MODIFIED event. */
  annotatePod(namespace: string, name: string, annotations: Readonly<Record<string, string | null>>): FakePod;
  /** Removes a pod (as `kubectl delete pod --force --grace-period=0` would). */
  deletePod(namespace: string, name: string): void;
  getPod(namespace: string, name: string): FakePod | undefined;
  pods(): FakePod[];
  /** Creates a namespace with these annotations. */
  addNamespace(name: string, annotations?: Readonly<Record<string, string>>): FakeNamespace;
  /** Merges annotations into a namespace's (a null value removes one): a MODIFIED event. */
  annotateNamespace(name: string, annotations: Readonly<Record<string, string | null>>): FakeNamespace;
  deleteNamespace(name: string): void;
  getNamespace(name: string): FakeNamespace | undefined;
  /** Pod requests served, by kind: `get`, `list`, `watch`, `delete`. */
  readonly podRequests: RequestCounts & { delete: number };
  /** Namespace requests served, by kind. */
  readonly namespaceRequests: RequestCounts;
  /** Node requests served, by kind: `get` (one node), `list`, `watch`. */
  readonly nodeRequests: RequestCounts;
  /** Watch streams open now. */
  openWatches(): number;
  /** Ends every open watch, of every resource (clients must re-watch from their resourceVersion). */
  dropWatches(): void;
  /**
   * Compacts the event history as etcd compaction does: the resourceVersion moves on (as any
   * write elsewhere moves it) and every event so far is forgotten, so a watch from any
   * resourceVersion a client holds now answers 410 Expired; open watches go on.
   */
  expireWatchHistory(): void;
  /** The next `n` lists of nodes (not watches, not gets) answer 500, as an overloaded API server may. */
  failNodeLists(n: number): void;
  /** The next `n` gets of one pod answer 500. */
  failPodGets(n: number): void;
  /** Stops listening and cuts every connection (the state is kept): clients see connection refused. */
  down(): Promise<void>;
  /** Listens again on the same port. */
  up(): Promise<void>;
  close(): Promise<void>;
}

type Resource = 'nodes' | 'pods' | 'namespaces';
type Obj = FakeNode | FakePod | FakeNamespace;

interface WatchEvent {
  readonly resource: Resource;
  readonly rv: number;
  readonly object: Obj;
  readonly line: string;
}

interface Watcher {
  readonly resource: Resource;
  readonly res: ServerResponse;
  readonly match: (o: Obj) => boolean;
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

function mergeAnnotations(
  now: Readonly<Record<string, string>> | undefined,
  patch: Readonly<Record<string, string | null>>,
): Record<string, string> | undefined {
  const out: Record<string, string> = { ...now };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = v;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** `spec.nodeName=X` (the only pod field selector served); a Status error otherwise. */
function nodeSelector(url: URL): { node: string | undefined } | { error: string } {
  let node: string | undefined;
  for (const term of (url.searchParams.get('fieldSelector') ?? '').split(',').filter((t) => t !== '')) {
    const f = /^([^=!]+)==?(.*)$/.exec(term);
    if (!f || f[1] !== 'spec.nodeName') return { error: `"${term}" is not a known field selector: only "spec.nodeName" is served here` };
    node = f[2];
  }
  return { node };
}

/** Starts the server on a free loopback port. */
export async function startFakeKubeApiServer(options: FakeKubeOptions = {}): Promise<FakeKubeApiServer> {
  const nodes = new Map<string, FakeNode>();
  const pods = new Map<string, FakePod>();
  const namespaces = new Map<string, FakeNamespace>();
  let history: WatchEvent[] = [];
  /** A watch from a resourceVersion below this answers 410 (its events were compacted). */
  let compactedRv = 0;
  const watchers = new Set<Watcher>();
  const patches: PatchRecord[] = [];
  const podRequests = { get: 0, list: 0, watch: 0, delete: 0 };
  const namespaceRequests = { get: 0, list: 0, watch: 0 };
  const nodeRequests = { get: 0, list: 0, watch: 0 };
  let failNodeLists = 0;
  let failPodGets = 0;
  let rv = 1;
  let uid = 0;

  const emit = (resource: Resource, type: 'ADDED' | 'MODIFIED' | 'DELETED', object: Obj): void => {
    const e: WatchEvent = { resource, rv: Number(object.metadata.resourceVersion), object, line: `${JSON.stringify({ type, object })}\n` };
    history.push(e);
    for (const w of watchers) if (w.resource === resource && w.match(object)) w.res.write(e.line);
  };

  const json = (res: ServerResponse, body: unknown): void => {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(body));
  };

  /** A watch stream of `resource` from the request's resourceVersion, objects filtered by `match`. */
  const serveWatch = (resource: Resource, url: URL, res: ServerResponse, match: (o: Obj) => boolean): void => {
    const from = Number(url.searchParams.get('resourceVersion') || '0');
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
    res.flushHeaders();
    if (from > 0 && from < compactedRv) {
      const gone = {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: `too old resource version: ${from} (${compactedRv})`,
        reason: 'Expired',
        code: 410,
      };
      res.end(`${JSON.stringify({ type: 'ERROR', object: gone })}\n`);
      return;
    }
    for (const e of history) if (e.resource === resource && e.rv > from && match(e.object)) res.write(e.line);
    const w: Watcher = { resource, res, match };
    watchers.add(w);
    const timeoutSeconds = Number(url.searchParams.get('timeoutSeconds') || '0');
    const timer = timeoutSeconds > 0 ? setTimeout(() => res.end(), timeoutSeconds * 1000) : undefined;
    timer?.unref();
    res.on('close', () => {
      clearTimeout(timer);
      watchers.delete(w);
    });
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (req.headers.authorization !== `Bearer ${TOKEN}`) return status(res, 401, 'Unauthorized', 'Unauthorized');
    const url = new URL(req.url ?? '/', 'http://x');
    const pm = /^\/api\/v1\/(?:namespaces\/([^/]+)\/)?pods(?:\/([^/]+))?$/.exec(url.pathname);
    if (pm) return handlePods(req, res, url, pm[1] ? decodeURIComponent(pm[1]) : undefined, pm[2] ? decodeURIComponent(pm[2]) : undefined);
    const nsm = /^\/api\/v1\/namespaces(?:\/([^/]+))?$/.exec(url.pathname);
    if (nsm) return handleNamespaces(req, res, url, nsm[1] ? decodeURIComponent(nsm[1]) : undefined);
    const m = /^\/api\/v1\/nodes(?:\/([^/]+))?$/.exec(url.pathname);
    if (!m) return status(res, 404, 'NotFound', `the server could not find the requested resource ${url.pathname}`);
    const name = m[1] ? decodeURIComponent(m[1]) : undefined;
    if (req.method === 'GET' && !name && url.searchParams.get('watch') === 'true') {
      nodeRequests.watch++;
      return serveWatch('nodes', url, res, () => true);
    }
    if (req.method === 'GET' && !name) {
      nodeRequests.list++;
      if (failNodeLists > 0) {
        failNodeLists--;
        return status(res, 500, 'InternalError', 'fake kube: node list failed (test fault)');
      }
      return json(res, { kind: 'NodeList', apiVersion: 'v1', metadata: { resourceVersion: String(rv) }, items: [...nodes.values()] });
    }
    const node = name ? nodes.get(name) : undefined;
    if (req.method === 'GET') nodeRequests.get++;
    if (!name || !node) return status(res, 404, 'NotFound', `nodes "${name}" not found`);
    if (req.method === 'GET') return json(res, node);
    if (req.method !== 'PATCH') return status(res, 405, 'MethodNotAllowed', `${req.method} is not supported`);
    const contentType = String(req.headers['content-type'] ?? '');
    const raw = await readBody(req);
    if (!['application/merge-patch+json', 'application/strategic-merge-patch+json'].includes(contentType)) {
      return status(
        res,
        415,
        'UnsupportedMediaType',
        `the body of the request was in an unknown format - accepted media types include: application/merge-patch+json, application/strategic-merge-patch+json; got ${contentType}`,
      );
    }
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      return status(res, 400, 'BadRequest', 'invalid JSON');
    }
    // A patch naming metadata.resourceVersion applies only to that version (optimistic concurrency).
    const precondition = (body as { metadata?: { resourceVersion?: unknown } } | null)?.metadata?.resourceVersion;
    if (precondition !== undefined && precondition !== node.metadata.resourceVersion)
      return status(
        res,
        409,
        'Conflict',
        `Operation cannot be fulfilled on nodes "${name}": the object has been modified; please apply your changes to the latest version and try again`,
      );
    patches.push({ name, contentType, body });
    const next = mergePatch(node, body) as FakeNode;
    const before = node.spec.podCIDRs ?? [];
    const after = next.spec.podCIDRs ?? [];
    if ((node.spec.podCIDR && next.spec.podCIDR !== node.spec.podCIDR) || (before.length > 0 && JSON.stringify(before) !== JSON.stringify(after))) {
      return status(res, 422, 'Invalid', `Node "${name}" is invalid: spec.podCIDRs: Forbidden: node updates may not change podCIDR except from "" to valid`);
    }
    next.metadata = { ...node.metadata, resourceVersion: String(++rv) };
    nodes.set(name, next);
    emit('nodes', 'MODIFIED', next);
    json(res, next);
  };

  const handlePods = (req: IncomingMessage, res: ServerResponse, url: URL, namespace: string | undefined, name: string | undefined): void => {
    if (name === undefined) {
      if (req.method !== 'GET') return status(res, 405, 'MethodNotAllowed', `${req.method} is not supported`);
      const sel = nodeSelector(url);
      if ('error' in sel) return status(res, 400, 'BadRequest', sel.error);
      const match = (o: Obj): boolean => {
        const p = o as FakePod;
        return (namespace === undefined || p.metadata.namespace === namespace) && (sel.node === undefined || (p.spec.nodeName ?? '') === sel.node);
      };
      if (url.searchParams.get('watch') === 'true') {
        podRequests.watch++;
        return serveWatch('pods', url, res, match);
      }
      podRequests.list++;
      return json(res, { kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: String(rv) }, items: [...pods.values()].filter(match) });
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
      removePod(namespace, name);
      return json(res, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: { name, kind: 'pods', uid: pod.metadata.uid } });
    }
    return status(res, 405, 'MethodNotAllowed', `${req.method} is not supported`);
  };

  const handleNamespaces = (req: IncomingMessage, res: ServerResponse, url: URL, name: string | undefined): void => {
    if (req.method !== 'GET') return status(res, 405, 'MethodNotAllowed', `${req.method} is not supported`);
    if (name === undefined) {
      if (url.searchParams.get('watch') === 'true') {
        namespaceRequests.watch++;
        return serveWatch('namespaces', url, res, () => true);
      }
      namespaceRequests.list++;
      return json(res, { kind: 'NamespaceList', apiVersion: 'v1', metadata: { resourceVersion: String(rv) }, items: [...namespaces.values()] });
    }
    namespaceRequests.get++;
    const ns = namespaces.get(name);
    if (!ns) return status(res, 404, 'NotFound', `namespaces "${name}" not found`);
    return json(res, ns);
  };

  const removePod = (namespace: string, name: string): void => {
    const pod = pods.get(`${namespace}/${name}`);
    if (!pod) throw new Error(`fake kube: no pod ${namespace}/${name}`);
    pods.delete(`${namespace}/${name}`);
    emit('pods', 'DELETED', { ...pod, metadata: { ...pod.metadata, resourceVersion: String(++rv) } });
  };

  const endWatches = (): void => {
    for (const w of watchers) w.res.end();
    watchers.clear();
  };

  const serve = (req: IncomingMessage, res: ServerResponse): void => {
    handle(req, res).catch((e: Error) => status(res, 500, 'InternalError', e.message));
  };
  const server = options.tls ? createHttpsServer({ cert: options.tls.cert, key: options.tls.key }, serve) : createServer(serve);
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const port = (server.address() as { port: number }).port;
  const url = `${options.tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}`;
  let listening = true;
  const stop = async (): Promise<void> => {
    if (!listening) return;
    listening = false;
    endWatches();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  };

  return {
    url,
    port,
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
      emit('nodes', 'ADDED', node);
      return node;
    },
    deleteNode(name) {
      const node = nodes.get(name);
      if (!node) throw new Error(`fake kube: no node ${name}`);
      nodes.delete(name);
      emit('nodes', 'DELETED', { ...node, metadata: { ...node.metadata, resourceVersion: String(++rv) } });
    },
    getNode: (name) => nodes.get(name),
    addPod(namespace, name, opts = {}) {
      if (pods.has(`${namespace}/${name}`)) throw new Error(`fake kube: pod ${namespace}/${name} exists`);
      const owners: FakeOwnerReference[] = opts.owners
        ? opts.owners.map((o) => ({
            apiVersion: 'apps/v1',
            kind: o.kind,
            name: o.name ?? `${name}-${o.kind.toLowerCase()}`,
            uid: `owner-uid-${++uid}`,
            ...(o.controller !== undefined ? { controller: o.controller } : {}),
          }))
        : opts.ownerKind
          ? [
              {
                apiVersion: 'apps/v1',
                kind: opts.ownerKind,
                name: opts.ownerName ?? name.replace(/-[^-]*$/, ''),
                uid: `owner-uid-${++uid}`,
                controller: true,
                blockOwnerDeletion: true,
              },
            ]
          : [];
      const pod: FakePod = {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          name,
          namespace,
          uid: `pod-uid-${++uid}`,
          resourceVersion: String(++rv),
          creationTimestamp: new Date().toISOString(),
          ...(opts.annotations && Object.keys(opts.annotations).length > 0 ? { annotations: { ...opts.annotations } } : {}),
          ...(owners.length > 0 ? { ownerReferences: owners } : {}),
        },
        spec: { ...(opts.node ? { nodeName: opts.node } : {}), containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }] },
        status: { phase: 'Running' },
      };
      pods.set(`${namespace}/${name}`, pod);
      emit('pods', 'ADDED', pod);
      return pod;
    },
    annotatePod(namespace, name, annotations) {
      const pod = pods.get(`${namespace}/${name}`);
      if (!pod) throw new Error(`fake kube: no pod ${namespace}/${name}`);
      const { annotations: _, ...meta } = pod.metadata;
      const merged = mergeAnnotations(pod.metadata.annotations, annotations);
      const next: FakePod = { ...pod, metadata: { ...meta, ...(merged ? { annotations: merged } : {}), resourceVersion: String(++rv) } };
      pods.set(`${namespace}/${name}`, next);
      emit('pods', 'MODIFIED', next);
      return next;
    },
    deletePod: removePod,
    getPod: (namespace, name) => pods.get(`${namespace}/${name}`),
    pods: () => [...pods.values()],
    addNamespace(name, annotations = {}) {
      if (namespaces.has(name)) throw new Error(`fake kube: namespace ${name} exists`);
      const ns: FakeNamespace = {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: {
          name,
          uid: `ns-uid-${++uid}`,
          resourceVersion: String(++rv),
          creationTimestamp: new Date().toISOString(),
          ...(Object.keys(annotations).length > 0 ? { annotations: { ...annotations } } : {}),
        },
        spec: { finalizers: ['kubernetes'] },
        status: { phase: 'Active' },
      };
      namespaces.set(name, ns);
      emit('namespaces', 'ADDED', ns);
      return ns;
    },
    annotateNamespace(name, annotations) {
      const ns = namespaces.get(name);
      if (!ns) throw new Error(`fake kube: no namespace ${name}`);
      const { annotations: _, ...meta } = ns.metadata;
      const merged = mergeAnnotations(ns.metadata.annotations, annotations);
      const next: FakeNamespace = { ...ns, metadata: { ...meta, ...(merged ? { annotations: merged } : {}), resourceVersion: String(++rv) } };
      namespaces.set(name, next);
      emit('namespaces', 'MODIFIED', next);
      return next;
    },
    deleteNamespace(name) {
      const ns = namespaces.get(name);
      if (!ns) throw new Error(`fake kube: no namespace ${name}`);
      namespaces.delete(name);
      emit('namespaces', 'DELETED', { ...ns, metadata: { ...ns.metadata, resourceVersion: String(++rv) } });
    },
    getNamespace: (name) => namespaces.get(name),
    podRequests,
    namespaceRequests,
    nodeRequests,
    failNodeLists(n) {
      failNodeLists = n;
    },
    failPodGets(n) {
      failPodGets = n;
    },
    nodes: () => [...nodes.values()],
    openWatches: () => watchers.size,
    dropWatches: endWatches,
    expireWatchHistory() {
      compactedRv = ++rv;
      history = [];
    },
    down: stop,
    async up() {
      if (listening) return;
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          resolve();
        });
      });
      listening = true;
    },
    close: stop,
  };
}
