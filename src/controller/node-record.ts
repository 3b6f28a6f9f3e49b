/**
 * The node record (`nodes/<name>` in the datastore): written by `podipam node add` or by the
 * Kubernetes adapter, given its pod CIDRs by the node-CIDR controller, read by the cluster
 * back end (label selectors, `ipam check`) and by `usePodCidr` in the local back end.
 */
export interface NodeRecord {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  /** Pod CIDRs in canonical text, at most one per family, cluster-CIDR order (as spec.podCIDRs). */
  readonly podCIDRs: readonly string[];
  /** ISO time of registration. */
  readonly createdAt: string;
  /** Set when the node is being deleted: the controller releases its CIDRs, then removes the record. */
  readonly deleting?: boolean;
}

/** The datastore key of a node record. */
export function nodeKey(name: string): string {
  return `nodes/${name}`;
}

/** The key prefix under which every node record lives. */
export const NODE_PREFIX = 'nodes/';
