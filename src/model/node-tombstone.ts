/**
 * The proof that a node is gone (`nodes-deleted/<name>` in the datastore): written in the same
 * transaction that deletes the node's record (src/controller/write-node-record.ts, the one
 * writer of node records), removed by the transaction that adds the record again and by a
 * block claim of that node (the node is alive after all). Cluster GC frees a node's pods and
 * blocks only while its tombstone exists and its record does not: a node without a record
 * and without a tombstone never had a record, which proves nothing.
 */

/** Who deleted the record: an operator (CLI or API), or the Kubernetes adapter/controller. */
export type NodeDeletedBy = 'cli' | 'api' | 'kubernetes' | 'controller';

export interface NodeTombstone {
  readonly name: string;
  /** ISO time of the deletion. */
  readonly deletedAt: string;
  readonly by: NodeDeletedBy;
}

const BY: readonly NodeDeletedBy[] = ['cli', 'api', 'kubernetes', 'controller'];

/** The key prefix under which every tombstone lives (apart from `nodes/`, which it does not match). */
export const NODE_TOMBSTONE_PREFIX = 'nodes-deleted/';

/** The datastore key of a node's tombstone. */
export function nodeTombstoneKey(name: string): string {
  return `${NODE_TOMBSTONE_PREFIX}${name}`;
}

/** The tombstone as stored: JSON with a fixed field order. */
export function encodeNodeTombstone(t: NodeTombstone): string {
  return JSON.stringify({ name: t.name, deletedAt: t.deletedAt, by: t.by });
}

/** Reads a stored tombstone; TypeError naming the key when it is not one (written by hand). */
export function decodeNodeTombstone(key: string, value: string): NodeTombstone {
  let o: unknown;
  try {
    o = JSON.parse(value);
  } catch {
    throw new TypeError(`node tombstone ${key} is not valid JSON: ${JSON.stringify(value.slice(0, 80))}`);
  }
  const r = o as Partial<Record<keyof NodeTombstone, unknown>>;
  const ok =
    typeof o === 'object' &&
    o !== null &&
    typeof r.name === 'string' &&
    key === nodeTombstoneKey(r.name) &&
    typeof r.deletedAt === 'string' &&
    BY.includes(r.by as NodeDeletedBy);
  if (!ok) throw new TypeError(`node tombstone ${key} does not hold {name, deletedAt, by}: ${JSON.stringify(value.slice(0, 120))}`);
  return o as NodeTombstone;
}
