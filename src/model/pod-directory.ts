/**
 * What a hosting process (the node agent with an API server) knows of pods and namespaces from
 * its watch-fed cache, for placement (namespace annotations, the pod's own when the runtime did
 * not pass them) and stickiness (the pod's owner). Lookups are synchronous and never call the
 * API server: a pod start costs no round trip. `undefined` means "not in the cache" — never
 * proof that the pod or namespace does not exist.
 */
import type { ClassifiedError } from './failure.js';

export interface CachedPod {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string | undefined;
  readonly annotations: Readonly<Record<string, string>>;
  /** The controller's kind (`ownerReferences` with `controller: true`, else the first); undefined: no owner. */
  readonly ownerKind: string | undefined;
  /** `spec.nodeName`; undefined: not scheduled. */
  readonly node: string | undefined;
}

export interface PodDirectory {
  /**
   * True once the cache has listed pods and namespaces (it keeps what it holds when the API
   * server goes away later). Before that, a pod's namespace annotations are unknown.
   */
  readonly synced: boolean;
  /** Resolves once synced, or after `timeoutMs` (whichever comes first); never rejects. */
  whenSynced?(timeoutMs: number): Promise<void>;
  /** The pod as last seen by the watch; undefined when the cache does not hold it. */
  pod(namespace: string, name: string): CachedPod | undefined;
  /** The namespace's annotations as last seen; undefined when the cache does not hold it. */
  namespaceAnnotations(namespace: string): Readonly<Record<string, string>> | undefined;
}

/**
 * The host has a pod cache that has not listed namespaces yet, and the runtime's call does not
 * say enough to place the pod without them: a namespace annotation might choose its pools, so
 * allocating from the defaults could put it in the wrong pool. Not ready: the runtime retries
 * (CNI code 11, 50 for STATUS).
 */
export class PodCacheNotSyncedError extends Error implements ClassifiedError {
  override readonly name = 'PodCacheNotSyncedError';
  readonly failure = 'not-ready';

  constructor(readonly namespace: string) {
    super(
      `the agent's pod cache has not listed namespaces from the API server yet: the placement annotations of namespace ${JSON.stringify(namespace)} are unknown, so the pod is not placed by guess; try again`,
    );
  }
}
