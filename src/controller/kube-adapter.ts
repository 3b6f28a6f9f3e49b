import { createLogger, type Log } from '../log/logger.js';
import type { CoreV1Api, Informer, ObjectCache, V1Node } from '@kubernetes/client-node';
import { formatPrefix, parsePrefix } from '../ip/index.js';
import type { Store } from '../store/index.js';
import { addNode } from './add-node.js';
import { deleteNode } from './delete-node.js';
import { NodeConflictError, UnknownNodeError } from './errors.js';
import { listNodes } from './list-nodes.js';
import { decodeNodeRecord, nodeKey, type NodeRecord } from '../model/node-record.js';
import { WorkQueue } from './work-queue.js';
import { writeNodeRecord } from './write-node-record.js';

export interface KubeAdapterOptions {
  readonly store: Store;
  /** Told to look at a node whose record the adapter wrote or removed. */
  readonly controller: { enqueue(name: string): void };
  /** Path of a kubeconfig file; undefined: the in-cluster service account. */
  readonly kubeconfig?: string;
  /** Where lines go (the caller names the component, e.g. log.child({ component: "kube" })); default: text lines on stderr, component "kube". */
  readonly log?: Log;
  /** First delay before re-listing after the list or watch fails; doubles up to 30 s (default 1 s). */
  readonly relistDelayMs?: number;
}

type NodeInformer = Informer<V1Node> & ObjectCache<V1Node>;

function sameLabels(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => b[k] === a[k]);
}

/**
 * Mirrors Kubernetes Node objects into node records and the controller's CIDRs back into
 * `spec.podCIDR`/`spec.podCIDRs`, so one allocator serves both worlds. In Kubernetes mode the
 * API server is the source of truth for which nodes exist: a Node gets a record (with any
 * podCIDRs it already has, claimed), a record whose Node the API server answers 404 for is
 * deleted (freeing its CIDRs; absence from the informer's cache alone proves nothing),
 * labels follow the Node, and CIDRs the controller records are patched onto the Node with a
 * strategic-merge patch, as kube-controller-manager's PatchNodeCIDRs does. Work is keyed by
 * node name and level-triggered: each turn compares the informer's Node with the record.
 * `@kubernetes/client-node` is imported on start() only.
 */
export class KubeAdapter {
  readonly #store: Store;
  readonly #controller: { enqueue(name: string): void };
  readonly #kubeconfig: string | undefined;
  readonly #log: Log;
  readonly #relistDelayMs: number;
  readonly #queue: WorkQueue;
  #informer: NodeInformer | undefined;
  #api: CoreV1Api | undefined;
  #patchOptions: unknown;
  #running = false;
  #relistTimer: NodeJS.Timeout | undefined;
  #relistFailures = 0;

  constructor(options: KubeAdapterOptions) {
    this.#store = options.store;
    this.#controller = options.controller;
    this.#kubeconfig = options.kubeconfig;
    this.#log = options.log ?? createLogger({ level: 'info', format: 'text', component: 'kube' });
    this.#relistDelayMs = options.relistDelayMs ?? 1000;
    this.#queue = new WorkQueue({
      workers: 4,
      process: (name) => this.#reconcile(name),
      onGiveUp: (name, e) => this.#log.warn({ node: name }, `giving up on the node until its next change: ${(e as Error).message}`),
    });
  }

  /** Loads the kube config, lists and watches Nodes; resolves after the first list (or its failure, then retried). */
  async start(): Promise<void> {
    const k8s = await import('@kubernetes/client-node');
    const kc = new k8s.KubeConfig();
    if (this.#kubeconfig) kc.loadFromFile(this.#kubeconfig);
    else kc.loadFromCluster();
    const api = kc.makeApiClient(k8s.CoreV1Api);
    this.#api = api;
    this.#patchOptions = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch);
    const informer = k8s.makeInformer<V1Node>(kc, '/api/v1/nodes', async () => {
      const list = await api.listNode();
      this.#relistFailures = 0;
      // Records of nodes Kubernetes no longer has are removed by their reconcile.
      const names = new Set(list.items.map((n) => n.metadata?.name ?? ''));
      void this.#queueStrays(names);
      return list;
    });
    const onNode = (node: V1Node): void => {
      if (node.metadata?.name) this.#queue.add(node.metadata.name);
    };
    informer.on('add', onNode);
    informer.on('update', onNode);
    informer.on('delete', onNode);
    informer.on('error', (err: unknown) => {
      if (!this.#running) return;
      const delay = Math.min(30_000, this.#relistDelayMs * 2 ** this.#relistFailures++);
      this.#log.warn(
        { err: (err as Error)?.message ?? String(err) },
        `node list/watch failed, re-listing in ${delay} ms: ${(err as Error)?.message ?? String(err)}`,
      );
      clearTimeout(this.#relistTimer);
      this.#relistTimer = setTimeout(() => void informer.start(), delay);
    });
    this.#informer = informer;
    this.#running = true;
    this.#queue.start();
    await informer.start();
  }

  /** Stops watching and waits for the reconciles in flight. */
  async stop(): Promise<void> {
    this.#running = false;
    clearTimeout(this.#relistTimer);
    await this.#informer?.stop();
    await this.#queue.stop();
  }

  /** The controller recorded CIDRs for `name` (or saw it go): bring the Node in line. */
  notify(name: string): void {
    if (this.#running) this.#queue.add(name);
  }

  async #queueStrays(names: ReadonlySet<string>): Promise<void> {
    try {
      for (const n of await listNodes(this.#store)) if (!names.has(n.record.name)) this.#queue.add(n.record.name);
    } catch (e) {
      this.#log.warn({ err: (e as Error).message }, `cannot list node records: ${(e as Error).message}`);
    }
  }

  /** One node: Node vs record, in whichever direction is behind. Throws to be retried. */
  async #reconcile(name: string): Promise<void> {
    const entry = await this.#store.get(nodeKey(name));
    const rec = entry ? decodeNodeRecord(entry.key, entry.value) : undefined;
    // The informer's cache is no proof of absence (its list may have failed, or lag a watch
    // event): a record is deleted only when the API server itself answers 404 for its Node.
    const node = this.#informer?.get(name) ?? (rec ? await this.#getNode(name) : undefined);
    if (!node) {
      if (!rec) return;
      try {
        const gone = await deleteNode(this.#store, name, { by: 'kubernetes' });
        this.#log.info({ node: name }, `node deleted in Kubernetes; record removed${gone.podCIDRs.length ? `, freed ${gone.podCIDRs.join(',')}` : ''}`);
      } catch (e) {
        if (!(e instanceof UnknownNodeError)) throw e;
      }
      this.#controller.enqueue(name);
      return;
    }
    const labels = node.metadata?.labels ?? {};
    const kubeCidrs = this.#nodeCidrs(node);
    if (!entry || !rec) {
      await addNode(this.#store, { name, labels, podCIDRs: kubeCidrs });
      this.#controller.enqueue(name);
      return;
    }
    // A Node's podCIDRs cannot change once set: the record follows Kubernetes, unless it only
    // holds more (a family Kubernetes lacks; patching that in would be refused).
    const adopt = kubeCidrs.some((c) => !rec.podCIDRs.includes(c));
    if (adopt || !sameLabels(labels, rec.labels)) {
      const next: NodeRecord = { ...rec, labels: { ...labels }, podCIDRs: adopt ? kubeCidrs : rec.podCIDRs };
      const out = await writeNodeRecord(this.#store, { name, rev: entry.rev, prev: rec }, next);
      if (!out.ok) {
        const [cidr, owner] = [...out.claimedBy][0] ?? [];
        if (cidr) throw new Error(`node ${name}: spec.podCIDRs ${cidr} is already claimed by node ${owner}`);
        throw new NodeConflictError(name, 1);
      }
      if (adopt) this.#log.info({ node: name }, `node has spec.podCIDRs ${kubeCidrs.join(',')} in Kubernetes; record follows`);
      this.#controller.enqueue(name);
      return;
    }
    if (kubeCidrs.length === 0 && rec.podCIDRs.length > 0) await this.#patch(name, rec.podCIDRs);
  }

  /** The Node as the API server has it now; undefined only on its 404. Any other failure throws (the queue retries). */
  async #getNode(name: string): Promise<V1Node | undefined> {
    try {
      return await (this.#api as CoreV1Api).readNode({ name });
    } catch (e) {
      if ((e as { code?: unknown }).code === 404) return undefined;
      throw new Error(`node ${name} is not in the informer's cache and the API server cannot say whether it exists: ${(e as Error).message.split('\n')[0]}`, {
        cause: e,
      });
    }
  }

  /** spec.podCIDRs (or the old single spec.podCIDR), canonical; unparsable entries are logged and dropped. */
  #nodeCidrs(node: V1Node): string[] {
    const raw = node.spec?.podCIDRs?.length ? node.spec.podCIDRs : node.spec?.podCIDR ? [node.spec.podCIDR] : [];
    const out: string[] = [];
    for (const c of raw) {
      try {
        out.push(formatPrefix(parsePrefix(c, { strict: false })));
      } catch {
        this.#log.info({ node: node.metadata?.name }, `node ${node.metadata?.name} has an unreadable spec.podCIDRs entry ${JSON.stringify(c)}; ignored`);
      }
    }
    return out;
  }

  async #patch(name: string, cidrs: readonly string[]): Promise<void> {
    const body = { spec: { podCIDR: cidrs[0], podCIDRs: cidrs } };
    await (this.#api as CoreV1Api).patchNode({ name, body }, this.#patchOptions as Parameters<CoreV1Api['patchNode']>[1]);
    this.#log.info({ node: name, podCIDRs: cidrs.join(',') }, 'patched spec.podCIDRs');
  }
}
