/**
 * `ClusterOps` on the cluster block-IPAM service (`ClusterIpam`, the object the CNI plugin's
 * cluster mode uses), one instance for the life of the server: its hints make a node's next
 * pod through the API one transaction, as for a long-lived agent.
 */
import { ClusterIpam } from '../cluster/index.js';
import { formatAddr, formatPrefix, parseAddr } from '../ip/index.js';
import type { Store } from '../store/index.js';
import type { AllocatedAddress, AllocateInput, CheckReport, ClusterOps, PoolInput } from './cluster-ops.js';

export function clusterOps(store: Store): ClusterOps {
  const ipam = new ClusterIpam(store);
  return {
    async createPool(input: PoolInput): Promise<void> {
      await ipam.createPool(input);
    },
    async setPoolDisabled(name: string, disabled: boolean): Promise<void> {
      await ipam.setPoolDisabled(name, disabled);
    },
    deletePool(name: string): Promise<void> {
      return ipam.deletePool(name);
    },
    async allocate(input: AllocateInput): Promise<AllocatedAddress[]> {
      const got = await ipam.assign({
        node: input.node,
        handle: input.handle,
        attrs: { network: input.network, containerId: input.containerId, ifname: input.ifname },
        ...(input.ips ? { ips: input.ips.map((ip) => parseAddr(ip)) } : { auto: 'each-family' as const }),
        ...(input.pools ? { pools: input.pools } : {}),
      });
      return got.map((a) => ({ ip: formatAddr(a.addr), family: a.addr.family, block: formatPrefix(a.block), pool: a.pool, prefixLen: a.prefixLen, gateway: formatAddr(a.gateway) }));
    },
    async releaseHandle(handle: string, node?: string): Promise<string[]> {
      return (await ipam.releaseHandle(handle, node)).map((r) => formatAddr(r.addr));
    },
    async releaseIp(ip: string, handle?: string): Promise<string | undefined> {
      return (await ipam.releaseAddresses([parseAddr(ip)], handle === undefined ? undefined : new Set([handle])))[0]?.handle;
    },
    check(): Promise<CheckReport> {
      return ipam.check();
    },
    releaseLeak: (leak) => ipam.releaseLeak(leak),
    releaseDeletedNodeBlock: (key) => ipam.releaseDeletedNodeBlock(key),
    releaseDeletedNode: (node) => ipam.releaseDeletedNode(node),
    utilisation: () => ipam.utilisation({ skipCorrupt: true }),
    listAllocations: (filter) => ipam.listAllocations(filter),
    blockAllocations: (cidr) => ipam.blockAllocations(cidr),
    probe: () => ipam.probe(),
  };
}
