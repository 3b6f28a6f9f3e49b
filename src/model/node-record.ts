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

/** The record as stored: JSON with a fixed field order. */
export function encodeNodeRecord(rec: NodeRecord): string {
  const o: Record<string, unknown> = { name: rec.name, labels: rec.labels, podCIDRs: rec.podCIDRs, createdAt: rec.createdAt };
  if (rec.deleting) o.deleting = true;
  return JSON.stringify(o);
}

/**
 * Reads a stored node record. TypeError naming the key when the value is not a record of the
 * shape above (someone wrote it by hand): callers log and skip it rather than guess.
 */
export function decodeNodeRecord(key: string, value: string): NodeRecord {
  let o: unknown;
  try {
    o = JSON.parse(value);
  } catch {
    throw new TypeError(`node record ${key} is not valid JSON: ${JSON.stringify(value.slice(0, 80))}`);
  }
  const r = o as Partial<Record<keyof NodeRecord, unknown>>;
  const ok =
    typeof o === 'object' &&
    o !== null &&
    typeof r.name === 'string' &&
    key === nodeKey(r.name) &&
    typeof r.labels === 'object' &&
    r.labels !== null &&
    Object.values(r.labels).every((v) => typeof v === 'string') &&
    Array.isArray(r.podCIDRs) &&
    r.podCIDRs.every((c) => typeof c === 'string') &&
    typeof r.createdAt === 'string' &&
    (r.deleting === undefined || typeof r.deleting === 'boolean');
  if (!ok) throw new TypeError(`node record ${key} does not hold {name, labels, podCIDRs, createdAt}: ${JSON.stringify(value.slice(0, 120))}`);
  return o as NodeRecord;
}
