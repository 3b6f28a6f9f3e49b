/** The input and the answer of planAssign (plan-assign.ts). */
import type { Block } from '../../alloc/block.js';
import type { Compare, Op } from '../../store/index.js';
import type { HandleRecord, AssignRequest, Assignment } from '../records/index.js';
import type { ClusterSnapshot, KnownBlock, OwnBlockIndex } from '../views/index.js';

export interface PlanInput {
  readonly req: AssignRequest;
  readonly snap: ClusterSnapshot;
  /** The node's labels and record revision; undefined when not read yet. */
  readonly labels: { readonly rev: number; readonly labels: Readonly<Record<string, string>> } | undefined;
  /** Blocks affine to the node. */
  readonly mine: OwnBlockIndex;
  /** Other blocks seen during this call (foreign ones and known-absent ones). */
  readonly others: ReadonlyMap<string, KnownBlock>;
  /** True once every block was listed (a whole circle of list-blocks pages): an unknown key is then known to be absent. */
  readonly allListed: boolean;
  /** Claims that failed because the block existed; after MAX_CLAIM_MISSES the planner asks for a list. */
  readonly claimMisses: number;
  /** Keys of every block claimed by some node (from the affinity list), once listed. */
  readonly claimed: ReadonlySet<string> | undefined;
  /** Keys of blocks seen held by other nodes in earlier calls (NodeView.claimedByOthers): skipped when claiming. */
  readonly claimedByOthers?: ReadonlySet<string>;
  /** The revision of the node's DEL fence as believed (del-fence-record.ts; 0 = absent): the txn compares it. */
  readonly delFence: number;
  /** The handle as believed: rev 0 and no record = absent. */
  readonly handle: { readonly rev: number; readonly record: HandleRecord | undefined };
  /** ISO time written on claimed affinities. */
  readonly now: string;
  /** The state of `req.takeOver`'s hold (record undefined = absent); omitted = not read yet. */
  readonly hold?: { readonly rev: number; readonly record: HandleRecord | undefined };
}

export type AssignPlan =
  | { readonly kind: 'read'; readonly keys: readonly string[] }
  /** List the affinities: which block CIDRs are claimed (small records; enough to choose a claim). */
  | { readonly kind: 'list-claimed' }
  /**
   * The next page of blocks with their contents (to borrow from another node's block): the
   * loop scans the blocks in key order from just after `from` round to `from` itself, one
   * page per ask, feeding each page into `others`; once the circle is complete it sets
   * `allListed`. A borrow reads pages only until one holds a free address, so it costs a page
   * or two in a cluster of any size, not a list of every block.
   */
  | { readonly kind: 'list-blocks'; readonly from: string }
  | {
      readonly kind: 'txn';
      readonly compares: readonly Compare[];
      readonly ops: readonly Op[];
      /** Everything the handle holds once the txn succeeds (IPv4 first). */
      readonly assignments: readonly Assignment[];
      /** Blocks the txn writes, by key. */
      readonly blocks: ReadonlyMap<string, Block>;
      /** The handle record after the txn (undefined when the handle holds nothing). */
      readonly handle: HandleRecord | undefined;
      /** True when the txn writes the handle record. */
      readonly writesHandle: boolean;
      /** Keys of blocks this txn creates (a failed compare on one means someone else has it). */
      readonly claims: readonly string[];
      /** Keys of other-sized blocks the claims compare absent (a failed one: a block overlaps the claim). */
      readonly guards: readonly string[];
      /** True when the txn takes `req.takeOver`'s addresses over (and deletes the hold). */
      readonly tookOver?: boolean;
    };
