/**
 * The writes and checks the API needs from the cluster block-IPAM service (src/cluster),
 * behind one small interface so the routes do not depend on the service's internals. The
 * implementation (`clusterOps`) calls the same functions the CNI plugin's cluster mode calls.
 */
import type { AllocationFilter, AllocationPage, BlockAllocations, CheckReport, Leak, DeletedNodeBlockRelease, Utilisation } from '../cluster/index.js';
import type { Prefix } from '../ip/index.js';

export type { CheckReport, Leak, Problem } from '../cluster/index.js';

export interface PoolInput {
  readonly name: string;
  readonly cidr: string;
  readonly blockSize?: number;
  readonly nodeSelector?: string;
  readonly disabled?: boolean;
}

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


export interface ClusterOps {
  createPool(input: PoolInput): Promise<void>;
  /** Enables or disables a pool (CIDR, block size and selector are fixed at creation). */
  setPoolDisabled(name: string, disabled: boolean): Promise<void>;
  deletePool(name: string): Promise<void>;
  /** One address per family of the usable pools (or `ips`), all or nothing; idempotent per handle. */
  allocate(input: AllocateInput): Promise<AllocatedAddress[]>;
  /**
   * Releases everything `handle` holds; the addresses released (none when it held nothing).
   * `node`: the node releasing, as the CNI plugin's DEL passes it (its empty-block policy).
   */
  releaseHandle(handle: string, node?: string): Promise<string[]>;
  /** Releases one address (with `handle`: only while that handle holds it); the handle that held it, or undefined when nothing was freed. */
  releaseIp(ip: string, handle?: string): Promise<string | undefined>;
  check(): Promise<CheckReport>;
  /** Frees a leaked address found by check, with a CAS retry loop; false when it is no longer a leak. */
  releaseLeak(leak: Leak): Promise<boolean>;
  /** Releases a block of a deleted node (check's block-node-deleted `key`), with its pods' handles, on proof. */
  releaseDeletedNodeBlock(key: string): Promise<DeletedNodeBlockRelease>;
  /** Releases every block of a deleted node now, on the same proof. */
  releaseDeletedNode(node: string): Promise<DeletedNodeBlockRelease[]>;
  /** The one utilisation computation (records that do not decode left out: check reports them). */
  utilisation(): Promise<Utilisation>;
  /** A page of allocations; InvalidCursorError for a bad cursor. */
  listAllocations(filter: AllocationFilter): Promise<AllocationPage>;
  /** One block's allocations, undefined when it does not exist. */
  blockAllocations(cidr: Prefix): Promise<BlockAllocations | undefined>;
  /** One small read: throws what the store throws when it cannot answer. */
  probe(): Promise<void>;
}
