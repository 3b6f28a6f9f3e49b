/**
 * The blocks a node at its per-host cap borrows from, read a page at a time: a scan of the
 * block keys in key order from just after a start key (chosen by the planner, see
 * AssignPlan's `list-blocks`) to the end, then from the first block key round to the start key
 * itself — every block once. The assignment loop asks for one page per `list-blocks` plan and
 * stops as soon as a plan finds a free address, so a borrow reads a page or two whatever the
 * cluster's size; only a cluster with no free address anywhere is read whole — in pages that
 * double, so that costs a few round trips (log₂ of the blocks), at most twice the blocks. Pages are read
 * at different revisions: the plan's compares prove every block it uses, as for any hint.
 */
import { compareKeys, type Entry, type Store } from '../../store/index.js';
import { BLOCK_PREFIX } from '../records/index.js';

/** Blocks in the first page (a block record is at most a few KiB); each later page is twice the one before. */
export const BORROW_PAGE = 64;

export interface BorrowPage {
  readonly entries: readonly Entry[];
  /** True for a key this page proves absent when it is not among `entries` (the key range the page covered). */
  readonly covers: (key: string) => boolean;
}

export class BorrowScan {
  readonly #store: Store;
  readonly #start: string;
  #pageSize: number;
  #after: string;
  #wrapped: boolean;
  #done = false;

  /** `start`: a block key (or '' for the first block); the scan covers every block key once. */
  constructor(store: Store, start: string, pageSize = BORROW_PAGE) {
    if (!Number.isInteger(pageSize) || pageSize < 1)
      throw new RangeError(`Cannot scan blocks as 'pageSize' must be a positive integer: current value is ${pageSize}`);
    this.#store = store;
    this.#pageSize = pageSize;
    // A start outside the block keys scans from the first block, in one pass.
    const inside = start.startsWith(BLOCK_PREFIX) && start.length > BLOCK_PREFIX.length;
    this.#start = inside ? start : BLOCK_PREFIX;
    this.#after = this.#start;
    this.#wrapped = !inside;
  }

  /** True once every block key was covered by a page. */
  get done(): boolean {
    return this.#done;
  }

  /** The next page; after the last one (done) an empty page that covers nothing. */
  async next(): Promise<BorrowPage> {
    if (this.#done) return { entries: [], covers: () => false };
    const page = await this.#store.list(BLOCK_PREFIX, { after: this.#after, limit: this.#pageSize });
    const lo = this.#after;
    const last = page.at(-1)?.key;
    const full = page.length === this.#pageSize && last !== undefined;
    this.#pageSize *= 2;
    if (!this.#wrapped) {
      // First leg: (start, end of the block keys].
      const hi = full ? last : undefined;
      if (full) this.#after = last;
      else {
        this.#wrapped = true;
        this.#after = BLOCK_PREFIX;
      }
      return { entries: page, covers: (k) => compareKeys(k, lo) > 0 && (hi === undefined || compareKeys(k, hi) <= 0) };
    }
    // Second leg: (first block key, start], or the only leg when the scan started at the first block.
    const end = this.#start === BLOCK_PREFIX ? undefined : this.#start;
    const entries = end === undefined ? page : page.filter((e) => compareKeys(e.key, end) <= 0);
    let hi: string | undefined;
    if (full && (end === undefined || compareKeys(last, end) < 0)) {
      hi = last;
      this.#after = last;
    } else {
      hi = end;
      this.#done = true;
    }
    return { entries, covers: (k) => compareKeys(k, lo) > 0 && (hi === undefined || compareKeys(k, hi) <= 0) };
  }
}
