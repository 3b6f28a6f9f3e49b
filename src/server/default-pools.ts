/**
 * The pools `podipam serve` creates on a store that has none, so `npm start` on a fresh
 * machine works at once: Kubernetes' conventional pod network (kubeadm's and flannel's
 * 10.244.0.0/16) and its IPv6 counterpart, with Calico's default block sizes.
 */
import type { ClusterIpam } from '../cluster/index.js';
import type { ClusterSummary } from './summary/cluster-summary.js';

export interface DefaultPool {
  readonly name: string;
  readonly cidr: string;
}

export const DEFAULT_POOLS: readonly DefaultPool[] = [
  { name: 'default-ipv4', cidr: '10.244.0.0/16' },
  { name: 'default-ipv6', cidr: 'fd00:10:244::/56' },
];

/**
 * The cluster CIDRs the node-CIDR controller cuts node pod CIDRs from by default. They are kept
 * apart from the default pools on purpose: a node allocating inside its pod CIDR (`usePodCidr`,
 * local back end) and a node allocating from the pools' blocks (cluster back end) must never
 * draw from the same addresses.
 */
export const DEFAULT_CLUSTER_CIDRS = '10.245.0.0/16,fd00:10:245::/56';

/** Creates `pools` when the store has no pool at all; returns the names created. */
export async function ensureDefaultPools(
  ipam: Pick<ClusterIpam, 'createPool'>,
  summary: () => Promise<ClusterSummary>,
  pools: readonly DefaultPool[],
): Promise<string[]> {
  if ((await summary()).pools.length > 0) return [];
  const created: string[] = [];
  for (const p of pools) {
    try {
      await ipam.createPool({ name: p.name, cidr: p.cidr });
      created.push(p.name);
    } catch (e) {
      // Another server creating the same default at the same moment is fine.
      if ((e as Error).name !== 'PoolConflictError') throw e;
    }
  }
  return created;
}
