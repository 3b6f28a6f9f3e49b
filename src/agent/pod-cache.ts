/**
 * The agent's watch-fed cache of its node's pods and of every namespace (the PodDirectory the
 * back ends read through src/plugin/placement-of.ts): two reflectors (pod-cache-reflector.ts),
 * pods listed and watched with `fieldSelector=spec.nodeName=<node>`, namespaces whole. A lookup
 * is a map read — no API call on a pod's start. Before the first list of each (the API server
 * down when the agent starts), its lookups answer undefined and callers go on without: the
 * runtime's pod annotations still count. The cache's lack of a pod is never proof that the pod
 * is gone (the pod GC lists the API server itself).
 */
import type { Log } from '../log/logger.js';
import type { CachedPod, PodDirectory } from '../model/pod-directory.js';
import type { KubeTransport } from './kube-client.js';
import { DEFAULT_TIMING, Reflector, type ReflectorStatus, type ReflectorTiming } from './pod-cache-reflector.js';

/** What `podipam agent status` shows of the cache (and the metrics export). */
export interface PodCacheStatus {
  /** Both pods and namespaces listed at least once. */
  readonly synced: boolean;
  readonly pods: number;
  readonly namespaces: number;
  /** Lists after the first of each resource (after a 410 or a failed list). */
  readonly relists: number;
  /** Watches opened after the first of each (resumes from the last resourceVersion). */
  readonly resumes: number;
  readonly events: number;
  /** Failed lists and watches. */
  readonly errors: number;
  readonly lastError?: { readonly at: string; readonly message: string };
}

/** Annotations never read here and large enough to matter when every pod carries one. */
const DROPPED_ANNOTATIONS = new Set(['kubectl.kubernetes.io/last-applied-configuration']);

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function annotationsOf(meta: Record<string, unknown>): Readonly<Record<string, string>> {
  const out: Record<string, string> = {};
  if (isRecord(meta.annotations)) for (const [k, v] of Object.entries(meta.annotations)) if (typeof v === 'string' && !DROPPED_ANNOTATIONS.has(k)) out[k] = v;
  return Object.freeze(out);
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** A pod object (as the API server answers it) as the cache keeps it; undefined without namespace and name. */
export function cachedPodOf(raw: unknown): CachedPod | undefined {
  if (!isRecord(raw) || !isRecord(raw.metadata)) return undefined;
  const m = raw.metadata;
  const namespace = str(m.namespace);
  const name = str(m.name);
  if (!namespace || !name) return undefined;
  const owners = Array.isArray(m.ownerReferences) ? m.ownerReferences.filter(isRecord) : [];
  const owner = owners.find((o) => o.controller === true) ?? owners[0];
  const spec = isRecord(raw.spec) ? raw.spec : {};
  return Object.freeze({ namespace, name, uid: str(m.uid), annotations: annotationsOf(m), ownerKind: str(owner?.kind), node: str(spec.nodeName) });
}

export interface PodCacheOptions {
  readonly transport: KubeTransport;
  readonly node: string;
  readonly log: Log;
  readonly timing?: Partial<ReflectorTiming>;
}

export class PodCache implements PodDirectory {
  readonly #pods: Reflector<CachedPod>;
  readonly #namespaces: Reflector<Readonly<Record<string, string>>>;

  constructor(o: PodCacheOptions) {
    const timing = { ...DEFAULT_TIMING, ...o.timing };
    this.#pods = new Reflector({
      what: `pods of node ${o.node}`,
      path: '/api/v1/pods',
      query: { fieldSelector: `spec.nodeName=${o.node}` },
      keep: (raw) => {
        const p = cachedPodOf(raw);
        return p && { key: `${p.namespace}/${p.name}`, value: p };
      },
      transport: o.transport,
      timing,
      log: o.log,
    });
    this.#namespaces = new Reflector({
      what: 'namespaces',
      path: '/api/v1/namespaces',
      keep: (raw) => {
        const m = isRecord(raw) && isRecord(raw.metadata) ? raw.metadata : undefined;
        const name = m && str(m.name);
        return m && name ? { key: name, value: annotationsOf(m) } : undefined;
      },
      transport: o.transport,
      timing,
      log: o.log,
    });
  }

  pod(namespace: string, name: string): CachedPod | undefined {
    return this.#pods.get(`${namespace}/${name}`);
  }

  namespaceAnnotations(namespace: string): Readonly<Record<string, string>> | undefined {
    return this.#namespaces.get(namespace);
  }

  /** Every pod held (of this node, as last seen). */
  pods(): CachedPod[] {
    return [...this.#pods.values()];
  }

  get synced(): boolean {
    return this.#pods.synced && this.#namespaces.synced;
  }

  /** Resolves once synced or after `timeoutMs` (a call waiting for the first list; checked every 20 ms). */
  async whenSynced(timeoutMs: number): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (!this.synced && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  }

  /** Starts listing and watching; returns at once (never waits for the API server). */
  start(): void {
    this.#pods.start();
    this.#namespaces.start();
  }

  async stop(): Promise<void> {
    await Promise.all([this.#pods.stop(), this.#namespaces.stop()]);
  }

  status(): PodCacheStatus {
    const p = this.#pods.status();
    const n = this.#namespaces.status();
    const after = (s: ReflectorStatus, k: 'lists' | 'watches'): number => Math.max(0, s[k] - 1);
    const last = [p.lastError, n.lastError].filter((e) => e !== undefined).sort((a, b) => (a.at < b.at ? 1 : -1))[0];
    return {
      synced: p.synced && n.synced,
      pods: p.items,
      namespaces: n.items,
      relists: after(p, 'lists') + after(n, 'lists'),
      resumes: Math.max(0, p.watches - p.lists) + Math.max(0, n.watches - n.lists),
      events: p.events + n.events,
      errors: p.errors + n.errors,
      ...(last ? { lastError: last } : {}),
    };
  }
}
