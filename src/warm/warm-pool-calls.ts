/** The options and answers of WarmPool's calls (warm-pool.ts), for its callers to name. */
import type { Addr } from '../ip/addr.js';

/** `sticky`: this attachment's next release reserves its address for its key (`stickyForMs`). */
export interface AcquireOptions {
  readonly sticky?: boolean;
}

/**
 * `hit`: the address, and where it came from — `idle` (the queue's head), `sticky` (the key's
 * own reservation) or `again` (the key already held it: an ADD retried). `miss`: see WarmPool.
 */
export type AcquireResult =
  | { readonly kind: 'hit'; readonly addr: Addr; readonly from: 'idle' | 'sticky' | 'again' }
  | { readonly kind: 'miss'; readonly refill: boolean; readonly retryAt: number | undefined };

/** What the I/O layer must do now: allocate `refill` addresses, return `returns` to the cluster. */
export interface WarmPoolPlan {
  readonly refill: number;
  readonly returns: readonly Addr[];
}

/** How many addresses are in each state, and the tokens left. */
export interface WarmPoolCounts {
  readonly idle: number;
  readonly inUse: number;
  readonly reserved: number;
  readonly returning: number;
  readonly pending: number;
  readonly tokens: number;
}
/** A pool's reuseAfter (ms) for one address; 0: none. */
export type ReuseAfterOf = (addr: Addr) => number;
