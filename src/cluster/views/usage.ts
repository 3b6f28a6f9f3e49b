/**
 * Utilisation per pool and per block as `podipam ipam show` prints it: a projection of
 * clusterUtilisation (src/cluster/views/utilisation.ts), exact counts.
 */
import { formatPrefix } from '../../ip/index.js';
import type { IpamContext } from './ipam-context.js';
import { poolText } from '../records/index.js';
import { clusterUtilisation, type UtilisationOptions } from './utilisation.js';

export interface PoolUsage {
  readonly name: string;
  readonly cidr: string;
  readonly blockSize: number;
  readonly nodeSelector: string;
  readonly disabled: boolean;
  readonly deleting: boolean;
  /** Addresses the pool can hand out: blocks × usable addresses per block (can exceed 2^53 for IPv6). */
  readonly capacity: bigint;
  readonly allocated: number;
  /** Of `allocated`, addresses idle in node agents' warm pools (when the caller says which). */
  readonly idle: number;
  /** Blocks claimed in the pool. */
  readonly blocks: number;
}

export interface BlockUsage {
  readonly cidr: string;
  /** The pool containing the block ('' when none does). */
  readonly pool: string;
  /** The node the block is affine to, or null. */
  readonly node: string | null;
  /** Addresses the block can hand out (network, gateway and IPv4 broadcast excluded). */
  readonly capacity: number;
  /** Addresses held (an address at an excluded ordinal, written by an older version, counts too). */
  readonly allocated: number;
  /** Of `allocated`, addresses idle in the node agent's warm pool (when the caller says which). */
  readonly idle: number;
}

export interface IpamUsage {
  readonly pools: readonly PoolUsage[];
  readonly blocks: readonly BlockUsage[];
}

/**
 * `ipam show`'s rows, projected from clusterUtilisation (the one computation the API and the
 * dashboard show too). Throws what the store throws, CorruptRecordError.
 */
export async function ipamUsage(ctx: IpamContext, options: UtilisationOptions = {}): Promise<IpamUsage> {
  const u = await clusterUtilisation(ctx, options);
  return {
    pools: u.pools.map((p) => ({ ...poolText(p.pool), capacity: p.capacity, allocated: Number(p.allocated), idle: Number(p.idle), blocks: p.blocks })),
    blocks: u.blocks.map((b) => ({
      cidr: formatPrefix(b.cidr),
      pool: b.pool ?? '',
      node: b.node,
      capacity: Number(b.capacity),
      allocated: Number(b.allocated),
      idle: Number(b.idle),
    })),
  };
}
