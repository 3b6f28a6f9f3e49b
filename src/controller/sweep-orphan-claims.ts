import type { Log } from '../log/logger.js';
import type { Entry, Store } from '../store/index.js';
import { decodeNodeCidrClaim, NODE_CIDR_CLAIM_PREFIX } from './node-cidr-claim.js';

/**
 * Deletes claims whose node record no longer lists their CIDR (the record was removed without
 * them, or re-created). `podCidrsOf(node)` gives the podCIDRs of the node's record, undefined
 * when it has none (or `null` when it cannot be read: its claims are kept). `claims` must be
 * listed *before* the records `podCidrsOf` answers from:
 * a claim is written in the same transaction as its record, so a claim read earlier whose
 * record, read later, does not list it is an orphan. Each delete compares the claim's
 * revision, so a claim taken again meanwhile stays. Claims that do not decode are left alone.
 * Returns the CIDRs freed.
 */
export async function sweepOrphanClaims(
  store: Store,
  claims: readonly Entry[],
  podCidrsOf: (name: string) => readonly string[] | null | undefined,
  log: Log,
): Promise<string[]> {
  const swept: string[] = [];
  for (const c of claims) {
    const owner = decodeNodeCidrClaim(c.value);
    if (owner === undefined) continue;
    const cidr = c.key.slice(NODE_CIDR_CLAIM_PREFIX.length);
    const cidrs = podCidrsOf(owner);
    if (cidrs === null || cidrs?.includes(cidr)) continue;
    const res = await store.txn([{ key: c.key, rev: c.rev }], [{ type: 'delete', key: c.key }]);
    if (res.succeeded) {
      swept.push(cidr);
      log.info({ cidr, node: owner }, 'swept orphan claim');
    }
  }
  return swept;
}
