/**
 * A pod's placement (src/model/placement.ts) as the fields of an assignment request: the
 * annotated addresses, ip-set or pools, else the network's configured pools. With `ips` only
 * those addresses are given (Calico's `ipAddrs` meaning); pools named per family (Cilium's,
 * Spiderpool's) keep their families; with an ip-set, the set's family comes
 * from the set and any other family from the configured pools.
 */
import type { Placement } from '../../model/placement.js';
import type { AssignRequest } from '../records/index.js';

export type PlacementFields = Pick<AssignRequest, 'ips' | 'auto' | 'pools' | 'poolsByFamily' | 'ipSet' | 'placedBy'>;

/** `configured`: the network config's `pools` (undefined: every pool selecting the node). */
export function placementRequest(p: Placement, pod: string, configured: readonly string[] | undefined): PlacementFields {
  const defaults = configured ? { pools: configured } : {};
  if (p.ips) return { ips: p.ips.parsed, placedBy: { source: p.ips, pod } };
  if (p.ipSet) return { auto: 'each-family', ...defaults, ipSet: p.ipSet.parsed, placedBy: { source: p.ipSet, pod } };
  if (p.pools)
    return { auto: 'each-family', pools: p.pools.parsed, ...(p.pools.byFamily ? { poolsByFamily: p.pools.byFamily } : {}), placedBy: { source: p.pools, pod } };
  return { auto: 'each-family', ...defaults };
}
