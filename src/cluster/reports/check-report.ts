/** What `podipam ipam check` (checkIpam, check.ts) reports, and its options. */
import type { EmptyOrphanBlock } from './empty-orphans.js';
import type { HolderFinding, StaleHolder } from './check-holders.js';
import type { StickyHold } from './sticky-holds.js';

export interface Leak {
  readonly ip: string;
  readonly block: string;
  readonly handle: string;
}

export interface Problem {
  readonly kind:
    | 'handle-block-missing'
    | 'handle-count-mismatch'
    | 'handle-empty'
    | 'block-node-deleted'
    | 'block-node-unregistered'
    | 'affinity-block-missing'
    | 'block-affinity-missing'
    | 'affinity-not-confirmed'
    | 'allocation-outside-pools'
    | 'block-overlap'
    | 'corrupt-record';
  /** The record the problem is about. */
  readonly key: string;
  readonly message: string;
}

export interface CheckReport {
  readonly leaks: readonly Leak[];
  readonly problems: readonly Problem[];
  /** Sticky holds (sticky-holds.ts), when there are any: informational, not problems — a live hold is a sticky pod's kept address. */
  readonly stickyHolds?: readonly StickyHold[];
  /** Borrowed blocks, when there are any: informational (see the module comment). */
  readonly borrowed?: readonly BorrowedBlock[];
  /** Holder findings (check-holders.ts), when there are any: problems, as leaks are. */
  readonly holders?: readonly HolderFinding[];
  /** Holder disagreements an agent may not have answered yet, when there are any: informational. */
  readonly unsettled?: readonly StaleHolder[];
  /** Empty orphan blocks (empty-orphans.ts), when there are any: informational; cluster GC deletes those past their quarantine. */
  readonly emptyOrphans?: readonly EmptyOrphanBlock[];
}

/** `viewMaxAgeMs`: an agent's holder view older than this is stale (default: by its own refresh period, check-holders.ts). */
export interface CheckOptions {
  readonly viewMaxAgeMs?: number | undefined;
}

export interface BorrowedBlock {
  readonly block: string;
  /** The node the block is affine to (proven deleted), or null once GC removed its affinity. */
  readonly node: string | null;
  /** The other nodes' pods holding addresses in it. */
  readonly pods: readonly { readonly address: string; readonly handle: string; readonly node: string; readonly pod?: string }[];
}
