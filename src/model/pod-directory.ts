/**
 * What a hosting process (the node agent with an API server) knows of pods and namespaces from
 * its watch-fed cache, for placement (namespace annotations, the pod's own when the runtime did
 * not pass them) and stickiness (the pod's owner). Lookups are synchronous and never call the
 * API server: a pod start costs no round trip. `undefined` means "not in the cache" — never
 * proof that the pod or namespace does not exist.
 */

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
  /** The pod as last seen by the watch; undefined when the cache does not hold it. */
  pod(namespace: string, name: string): CachedPod | undefined;
  /** The namespace's annotations as last seen; undefined when the cache does not hold it. */
  namespaceAnnotations(namespace: string): Readonly<Record<string, string>> | undefined;
}
