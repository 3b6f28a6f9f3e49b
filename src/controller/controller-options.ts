import type { Log } from '../log/logger.js';
import type { Store } from '../store/index.js';
import type { ControllerConfig } from './controller-config.js';
import type { NodeRecord } from '../model/node-record.js';

/** How a NodeCidrController is built. */
export interface NodeCidrControllerOptions {
  readonly store: Store;
  readonly config: ControllerConfig;
  /** Nodes (or batches) processed at once (default 8). */
  readonly workers?: number;
  /**
   * How often the controller checks whether a resync is due (and, while the datastore is down
   * at start, retries its first listing); changes arrive by a watch on `nodes/` (default 250 ms).
   */
  readonly pollIntervalMs?: number;
  /** How often occupancy is rebuilt from every claim and record, and orphan claims swept (default 30 s). */
  readonly resyncIntervalMs?: number;
  /** Retries of a node whose processing fails (store down, conflicts), with back-off (default 8). */
  readonly maxRetries?: number;
  /** Assign nodes found by a listing in shared transactions (default true). */
  readonly batch?: boolean;
  /** One line per event (the node it concerns as a field); default: text lines on stderr, component "controller". */
  readonly log?: Log;
  /** Called after the controller recorded CIDRs for a node (record) or saw it go (undefined). */
  readonly onChange?: (name: string, record: NodeRecord | undefined) => void;
}

/** What runOnce did. */
export interface ControllerSummary {
  /** Node records known. */
  readonly nodes: number;
  /** CIDR sets recorded since the controller was made. */
  readonly assigned: number;
  /** Nodes waiting for a free CIDR (CIDRNotAvailable). */
  readonly waiting: readonly string[];
  /** Nodes dropped after their last retry. */
  readonly failed: readonly string[];
}
