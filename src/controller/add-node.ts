import type { Store } from '../store/index.js';
import { CidrClaimedError, NodeConflictError, NodeExistsError } from './errors.js';
import { validateNodeName } from '../model/node-name.js';
import type { NodeRecord } from '../model/node-record.js';
import { writeNodeRecord } from './write-node-record.js';

export interface AddNodeInput {
  readonly name: string;
  readonly labels?: Readonly<Record<string, string>>;
  /** CIDRs the node already has (a Kubernetes node with spec.podCIDRs); claimed in the same write. */
  readonly podCIDRs?: readonly string[];
}

/**
 * Registers a node: writes `nodes/<name>` only if absent (with claims for any podCIDRs given);
 * the running controller then assigns its CIDRs. Throws TypeError for a bad name,
 * NodeExistsError when the record exists, CidrClaimedError when a given CIDR belongs to another
 * node; nothing is written then.
 */
export async function addNode(store: Store, input: AddNodeInput, now = new Date()): Promise<NodeRecord> {
  const record: NodeRecord = {
    name: validateNodeName(input.name),
    labels: { ...(input.labels ?? {}) },
    podCIDRs: [...(input.podCIDRs ?? [])],
    createdAt: now.toISOString(),
  };
  let own: ReadonlyMap<string, number> = new Map();
  // Two turns at most: the second only takes over leftover claims that already name this node.
  for (let attempt = 1; attempt <= 2; attempt++) {
    const out = await writeNodeRecord(store, { name: record.name, rev: 0 }, record, own);
    if (out.ok) return record;
    if (out.stale) throw new NodeExistsError(record.name);
    const [cidr, owner] = [...out.claimedBy][0] ?? [];
    if (cidr !== undefined && owner !== undefined) throw new CidrClaimedError(record.name, cidr, owner);
    own = out.ownClaims;
  }
  throw new NodeConflictError(record.name, 2);
}
