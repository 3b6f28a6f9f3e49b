/** What every cluster IPAM operation runs with. */
import type { ReleaseEvidence, ReleaseReason } from '../../model/history.js';
import type { Store } from '../../store/index.js';
import type { ViewCache } from './view-cache.js';

export interface IpamContext {
  readonly store: Store;
  /** Hints (snapshot, node views) shared by the operations of one ClusterIpam. */
  readonly cache: ViewCache;
  /** Attempts per compare-and-swap loop before ContentionError (Calico: 100). */
  readonly maxAttempts: number;
  /** Clock for claim timestamps (tests pin it). */
  readonly now: () => Date;
  /** Who writes (the history stamp's key, history-stamp.ts): a node name, "serve", "cli". */
  readonly writer: string;
  /** Why this context's releases happen (the stamp's `why`); absent: DEL. See ClusterIpam.withReason. */
  readonly why?: ReleaseReason;
  /** What this context's releases rest on (runtime reconciliation's proof), stamped with `why`. */
  readonly evidence?: ReleaseEvidence;
}

/**
 * The clock of every context given none (`IpamContext.now`): one function, not one per context —
 * a call site that met only the agent's warm-up's contexts' clocks would otherwise have its
 * optimised code thrown away at the first call with another's (V8: "wrong call target").
 */
export const wallClock = (): Date => new Date();

/** Calico's datastoreRetries. */
export const DEFAULT_MAX_ATTEMPTS = 100;
