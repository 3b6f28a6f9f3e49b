/** The cluster (block IPAM) back end's public surface. */
export { ClusterIpam, type ClusterIpamOptions } from './cluster-ipam.js';
export type { AssignRequest, Assignment } from './plan/plan-assign.js';
export type { Released } from './release.js';
export type { NodeGcResult } from './gc-node.js';
export type { NodeAttachment } from './node-allocations.js';
export type { Pool, PoolSpec } from './pool-record.js';
export type { HeldPod, HeldWarm, PoolHeld } from './pool-drain.js';
export type { ResizeResult } from './pool-resize.js';
export type { PoolSettings } from './pool-settings.js';
export { MAX_REUSE_AFTER_MS, parseReuseAfter, reuseAfterText } from './reuse-after.js';
export type { IpamConfig } from './ipam-config.js';
export type { IpamSettings } from './settings.js';
export type { Reservation } from './reservation-record.js';
export type { IpSet } from './ip-set-record.js';
export type { IpSetAddress, IpSetDetail, IpSetInfo, IpSetSpec } from './ip-sets.js';
export { IpSetConflictError, IpSetExhaustedError, IpSetInUseError, NoIpSetError, PoolHasIpSetsError } from './ip-set-errors.js';
export type { IpamUsage, PoolUsage, BlockUsage } from './usage.js';
export type { BorrowedBlock, CheckOptions, CheckReport, Leak, Problem } from './check.js';
export type { Claim, HolderFinding, HolderFindingKind, StaleHolder } from './check-holders.js';
export type { StickyHold } from './sticky-holds.js';
export type { EmptyOrphanBlock } from './empty-orphans.js';
export type { BlockUtilisation, NodeUtilisation, PoolUtilisation, Utilisation, UtilisationOptions } from './utilisation.js';
export type { DeletedNodeBlockRelease } from './gc-findings.js';
export type { AllocationFilter, AllocationPage, AllocationRow, BlockAllocations } from './allocations.js';
export type { AddressHolder, PodHandle } from './handles-of-pod.js';
export { InvalidCursorError } from './allocations.js';
export { ViewCache } from './view-cache.js';
export {
  AddressUnavailableError,
  ContentionError,
  CorruptRecordError,
  NoPoolError,
  NotFoundError,
  PoolConflictError,
  PoolExhaustedError,
  PoolInUseError,
} from './errors.js';
