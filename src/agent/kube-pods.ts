/**
 * The warm pool's view of Kubernetes pods through `@kubernetes/client-node` (the agent's one
 * client, kube-client.ts): one pod by namespace/name (its uid and controller kind, for
 * stickiness) and this node's pods (`spec.nodeName` field selector, for the GC: always a real
 * list — fresh proof from the API server, never the pod cache, whose lack of a pod proves
 * nothing). A lookup is bounded by `timeoutMs` (it delays a pod's ADD), a list page by
 * LIST_TIMEOUT_MS; errors are thrown to the caller, which degrades (lookup) or skips (GC).
 */
import type { CoreV1Api, V1Pod } from '@kubernetes/client-node';
import type { PodInfo, PodSource } from '../warm/pod-source.js';
import { type Kube, openKube } from './kube-client.js';

export type { PodInfo, PodSource };

/** Pages of this many pods per list request. */
const PAGE = 500;
/** Bound on the pages of one list (500 × 100 pods is far above any node's). */
const MAX_PAGES = 100;
/** One list page waits at most this long (the GC is not in a pod's start path). */
const LIST_TIMEOUT_MS = 30_000;

function info(p: V1Pod): PodInfo {
  const owners = p.metadata?.ownerReferences ?? [];
  const owner = owners.find((o) => o.controller === true) ?? owners[0];
  return {
    namespace: p.metadata?.namespace ?? '',
    name: p.metadata?.name ?? '',
    uid: p.metadata?.uid || undefined,
    ownerKind: owner?.kind || undefined,
    node: p.spec?.nodeName || undefined,
  };
}

export class KubePods implements PodSource {
  readonly #api: CoreV1Api;
  readonly #timeoutMs: number;

  private constructor(api: CoreV1Api, timeoutMs: number) {
    this.#api = api;
    this.#timeoutMs = timeoutMs;
  }

  /** Over the agent's loaded client (kube-client.ts openKube). */
  static of(kube: Kube, timeoutMs: number): KubePods {
    return new KubePods(kube.coreApi, timeoutMs);
  }

  /** Loads the kubeconfig file (undefined: the in-cluster service account). Throws when it cannot be loaded. */
  static async open(kubeconfig: string | undefined, timeoutMs: number): Promise<KubePods> {
    return KubePods.of(await openKube(kubeconfig), timeoutMs);
  }

  async get(namespace: string, name: string): Promise<PodInfo | undefined> {
    try {
      return info(await this.#bounded(`get pod ${namespace}/${name}`, this.#api.readNamespacedPod({ namespace, name }), this.#timeoutMs));
    } catch (e) {
      if ((e as { code?: unknown }).code === 404) return undefined;
      throw e;
    }
  }

  async listNode(node: string): Promise<PodInfo[]> {
    const out: PodInfo[] = [];
    let next: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const list = await this.#bounded(
        `list pods of node ${node}`,
        this.#api.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node}`, limit: PAGE, ...(next ? { _continue: next } : {}) }),
        Math.max(LIST_TIMEOUT_MS, this.#timeoutMs),
      );
      out.push(...list.items.map(info));
      next = list.metadata?._continue || undefined;
      if (!next) return out;
    }
    throw new Error(`list pods of node ${node}: more than ${MAX_PAGES} pages of ${PAGE}`);
  }

  #bounded<T>(what: string, p: Promise<T>, ms: number): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: no answer from the API server within ${ms} ms`)), ms);
      timer.unref();
    });
    p.catch(() => undefined); // a late failure after the timeout is not unhandled
    return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
  }
}
