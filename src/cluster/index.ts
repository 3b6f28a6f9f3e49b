/** The cluster (block IPAM) back end's public surface. */
export { ClusterIpam, type ClusterIpamOptions } from './service/cluster-ipam.js';
export type { AssignRequest, Assignment } from './records/assignment.js';
export type { Released } from './txn/release.js';
export type { NodeGcResult } from './admin/gc-node.js';
export type { NodeAttachment } from './txn/node-allocations.js';
export type { Pool, PoolSpec } from './records/pool-record.js';
export type { HeldPod, HeldWarm, PoolHeld } from './admin/pool-drain.js';
export type { ResizeResult } from './admin/pool-resize.js';
export type { PoolSettings } from './admin/pool-settings.js';
export { MAX_REUSE_AFTER_MS, parseReuseAfter, reuseAfterText } from './records/reuse-after.js';
export type { IpamConfig } from './records/ipam-config.js';
export type { IpamSettings } from './admin/settings.js';
export type { Reservation } from './records/reservation-record.js';
export type { IpSet } from './records/ip-set-record.js';
export type { IpSetAddress, IpSetDetail, IpSetInfo, IpSetSpec } from './admin/ip-sets.js';
export { IpSetConflictError, IpSetExhaustedError, IpSetInUseError, NoIpSetError, PoolHasIpSetsError } from './records/ip-set-errors.js';
export type { IpamUsage, PoolUsage, BlockUsage } from './views/usage.js';
export type { BorrowedBlock, CheckOptions, CheckReport, Leak, Problem } from './reports/check.js';
export type { Claim, HolderFinding, HolderFindingKind, StaleHolder } from './reports/check-holders.js';
export type { StickyHold } from './reports/sticky-holds.js';
export type { EmptyOrphanBlock } from './reports/empty-orphans.js';
export type { BlockUtilisation, NodeUtilisation, PoolUtilisation, Utilisation, UtilisationOptions } from './views/utilisation.js';
export type { DeletedNodeBlockRelease } from './admin/gc-findings.js';
export type { AllocationFilter, AllocationPage, AllocationRow, BlockAllocations } from './views/allocations.js';
export type { AddressHolder, PodHandle } from './views/handles-of-pod.js';
export { InvalidCursorError } from './views/allocations.js';
export { ViewCache } from './views/view-cache.js';
export {
  AddressUnavailableError,
  ContentionError,
  CorruptRecordError,
  NoPoolError,
  NotFoundError,
  PoolConflictError,
  PoolExhaustedError,
  PoolInUseError,
} from './records/errors.js';
