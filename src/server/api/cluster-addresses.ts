/**
 * The API's addresses as text over `ClusterIpam`'s typed ones (the service the CNI plugin's
 * cluster mode uses; serve keeps one instance for its whole life, so its hints make a node's
 * next pod through the API one transaction, as for a long-lived agent): POST
 * /api/v1/allocations answers with these `AllocatedAddress` objects, the releases with the
 * addresses freed as strings.
 */
import type { ClusterIpam } from '../../cluster/index.js';
import { formatAddr, formatPrefix, parseAddr } from '../../ip/index.js';

export interface AllocateInput {
  readonly node: string;
  readonly handle: string;
  readonly network?: string;
  readonly containerId?: string;
  readonly ifname?: string;
  /** Pool names to allocate from (default: every enabled pool matching the node). */
  readonly pools?: readonly string[];
  /** Specific addresses instead of one per family. */
  readonly ips?: readonly string[];
}

export interface AllocatedAddress {
  readonly ip: string;
  readonly family: 4 | 6;
  readonly block: string;
  readonly pool: string;
  /** The block's prefix length, as in the CNI result ("10.244.3.7/26"). */
  readonly prefixLen: number;
  /** The block's gateway, as in the CNI result ("10.244.3.1"); never handed out. */
  readonly gateway: string;
}

/** One address per family of the usable pools (or `ips`), all or nothing; idempotent per handle. */
export async function allocateAddresses(ipam: Pick<ClusterIpam, 'assign'>, input: AllocateInput): Promise<AllocatedAddress[]> {
  const got = await ipam.assign({
    node: input.node,
    handle: input.handle,
    attrs: { network: input.network, containerId: input.containerId, ifname: input.ifname },
    ...(input.ips ? { ips: input.ips.map((ip) => parseAddr(ip)) } : { auto: 'each-family' as const }),
    ...(input.pools ? { pools: input.pools } : {}),
  });
  return got.map((a) => ({
    ip: formatAddr(a.addr),
    family: a.addr.family,
    block: formatPrefix(a.block),
    pool: a.pool,
    prefixLen: a.prefixLen,
    gateway: formatAddr(a.gateway),
  }));
}

/**
 * Releases everything `handle` holds (the history's reason: 'release'); the addresses released (none when it held nothing).
 * `node`: the node releasing, as the CNI plugin's DEL passes it (its empty-block policy).
 */
export async function releaseHandleAddresses(ipam: Pick<ClusterIpam, 'withReason'>, handle: string, node?: string): Promise<string[]> {
  return (await ipam.withReason('release').releaseHandle(handle, node)).map((r) => formatAddr(r.addr));
}

/** Releases one address (with `handle`: only while that handle holds it); the handle that held it, or undefined when nothing was freed. */
export async function releaseAddress(ipam: Pick<ClusterIpam, 'withReason'>, ip: string, handle?: string): Promise<string | undefined> {
  return (await ipam.withReason('release').releaseAddresses([parseAddr(ip)], handle === undefined ? undefined : new Set([handle])))[0]?.handle;
}
