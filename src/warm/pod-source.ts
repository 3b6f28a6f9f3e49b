/**
 * Where the warm pool learns about pods: the host lends one (the agent's Kubernetes client,
 * src/agent/kube-pods.ts) through `openPodSource`, or a test its own.
 */
import type { ListedPod } from './pod-gc.js';

/** What a lookup learns of a pod. */
export interface PodInfo extends ListedPod {
  /** The controller's kind (`metadata.ownerReferences` with `controller: true`, else the first); undefined: no owner. */
  readonly ownerKind: string | undefined;
  /** `spec.nodeName`; undefined: not scheduled. */
  readonly node?: string;
}

export interface PodSource {
  /** The pod, or undefined when the API server says it does not exist (404). Throws on any other failure. */
  get(namespace: string, name: string): Promise<PodInfo | undefined>;
  /** Every pod whose `spec.nodeName` is `node`. Throws when the list fails. */
  listNode(node: string): Promise<PodInfo[]>;
}

/** Opens the pod source of a kubeconfig file, lookups bounded by `timeoutMs`; throws when it cannot be loaded. */
export type OpenPodSource = (kubeconfig: string, timeoutMs: number) => Promise<PodSource>;
