/**
 * The history store's interface: holds of addresses, kept by `podipam serve` in its own
 * SQLite file (`--history-db`, default the datastore's own: src/cli/history-path.ts), fed by the
 * follower (src/history) from the datastore's change stream, read by the CLI (`podipam ipam
 * history`, opening the file read-only), the API and the dashboard.
 *
 * A hold is one address held by one handle from `from` until `until` (absent while held). The
 * follower applies batches: every start, end and gap of one stretch of revisions together with the
 * position it reached, in one SQLite transaction — a crash leaves the store at the previous
 * position, never half a batch, and the follower resumes from `position().revision + 1`.
 */
import type { HistoryGap, HistoryTime, Hold, HolderAt, HolderInfo, ReleaseEvidence, ReleaseReason } from '../model/history.js';
import type { UsageCounts } from './usage-series.js';

/** An address became held. */
export interface HoldStart extends HolderInfo {
  readonly from: HistoryTime;
}

/** An address held by `handle` stopped being held. */
export interface HoldEnd {
  readonly address: string;
  readonly handle: string;
  readonly until: HistoryTime;
  readonly why: ReleaseReason;
  /** What a `runtime-absent` release rested on (the writer's stamp). */
  readonly evidence?: ReleaseEvidence;
}

/** Where the follower is: the datastore it follows and the last revision applied. */
export interface FollowPosition {
  /** The datastore's URL, redacted (redact-store-url.ts): a history file follows one datastore. */
  readonly source: string;
  readonly revision: number;
  /** The time of the last change applied (its stamp's, else when the follower saw it). */
  readonly at: number;
  /**
   * The datastore's identity (Store.identity) when the follower applied this batch; absent in
   * files written before it was kept. Another identity, or a revision below `revision`, means
   * the datastore was restored or replaced.
   */
  readonly identity?: string;
}

export interface HistoryBatch {
  /** Applied in this order: ends, then starts (an address released and reassigned in one batch). */
  readonly ends: readonly HoldEnd[];
  readonly starts: readonly HoldStart[];
  readonly gaps?: readonly HistoryGap[];
  readonly position: FollowPosition;
}

/** A time window; both bounds inclusive, either absent: unbounded. */
export interface TimeRange {
  readonly since?: number;
  readonly until?: number;
}

/** One line of the export (`podipam ipam history --since T -o jsonl`), in time order. */
export type HistoryRecord =
  | ({ readonly event: 'assigned'; readonly at: number; readonly earliest?: number } & HolderInfo)
  | ({
      readonly event: 'released';
      readonly at: number;
      readonly earliest?: number;
      readonly why: ReleaseReason;
      readonly evidence?: ReleaseEvidence;
    } & HolderInfo)
  | ({ readonly event: 'gap' } & HistoryGap);

export interface HistoryDb {
  /** The file the store lives in (for messages). */
  readonly path: string;
  /** Where the follower got to; undefined for a new store. */
  position(): FollowPosition | undefined;
  /**
   * Applies one batch in one transaction. An end closes the open hold of (address, handle); an
   * end with no open hold (the hold began before history did) is kept as a hold whose `from` is
   * unknown. A start for an (address, handle) already open is ignored (replayed revisions).
   */
  apply(batch: HistoryBatch): void;
  /** Every hold still open (the follower's state after a restart). */
  openHolds(): Hold[];
  /** The holds of `address` overlapping `range`, oldest first. */
  holdsOfAddress(address: string, range?: TimeRange): Hold[];
  /** Who held `address` at `at`: the hold, none, or unknown (the instant is in a gap or an unknown bound). */
  holderAt(address: string, at: number): HolderAt;
  /** The holds of pod `namespace/name` (every incarnation: any uid), overlapping `range`, oldest first. */
  holdsOfPod(namespace: string, name: string, range?: TimeRange): Hold[];
  /** The gaps overlapping `range`, oldest first. */
  gaps(range?: TimeRange): HistoryGap[];
  /** The export: assignments, releases and gaps at or after `since`, in time order, at most `limit`. */
  records(since: number, limit?: number): Iterable<HistoryRecord>;
  /**
   * Per pool: the holds open now, and the holds begun and ended after `since` counted by grid
   * step of `step` ms (usage-series.ts; a time known only within bounds counts at its `at`).
   * Holds of no pool are left out. The work is bounded by the open holds and the changes after `since`.
   */
  poolUsage(since: number, step: number): Map<string, UsageCounts>;
  /** Retention: drops holds that ended and gaps that closed before `before`; returns the holds dropped. */
  purge(before: number): number;
  /** Counts and the file's size (BENCHMARKS states bytes per event). */
  stats(): { readonly holds: number; readonly openHolds: number; readonly gaps: number; readonly bytes: number };
  close(): void;
}
