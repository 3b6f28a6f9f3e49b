/**
 * The datastore interface every podipam back end implements (memory:, sqlite:PATH, etcd://…).
 *
 * A store is a flat, ordered key space of string keys and string (JSON) values. Every write
 * bumps one store-wide revision counter; each entry carries the revision of its last write
 * (`rev`, etcd's mod_revision). Racing writers use `txn`: compare the revisions they read,
 * then put/delete atomically — all or nothing.
 */
export interface Entry {
  readonly key: string;
  readonly value: string;
  /** Revision of the entry's last write; always > 0 for an existing entry. */
  readonly rev: number;
}

/** Holds when `key`'s revision equals `rev`; `rev: 0` means "the key does not exist". */
export interface Compare {
  readonly key: string;
  readonly rev: number;
}

export type Op =
  | { readonly type: 'put'; readonly key: string; readonly value: string }
  | { readonly type: 'delete'; readonly key: string };

export interface TxnResult {
  /** True when every compare held and every op was applied. */
  readonly succeeded: boolean;
  /** The store revision after the transaction (the rev of every key it put, on success). */
  readonly rev: number;
  /**
   * On failure only: the current entry of each compared key (undefined where absent), in the
   * order of `compares`, read in the same round trip so a CAS loop can retry without a get.
   */
  readonly current?: readonly (Entry | undefined)[];
}

export interface ListOptions {
  /** Return at most this many entries (in key order). */
  readonly limit?: number;
  /** Only keys strictly greater than this one (for paging). */
  readonly after?: string;
}

export interface Store {
  /** The URL the store was opened with (for messages). */
  readonly url: string;
  /** Round trips made to the backing engine since open: what the benchmarks count. */
  readonly roundTrips: number;
  get(key: string): Promise<Entry | undefined>;
  /** Every entry whose key starts with `prefix`, in key order. */
  list(prefix: string, options?: ListOptions): Promise<Entry[]>;
  /**
   * Atomically: if every compare holds, apply every op in order. A failed compare applies
   * nothing and is not an error (succeeded: false). Throws StoreUnavailableError when the
   * engine cannot be reached within the store's deadline — the caller cannot know whether the
   * write landed, so racing callers re-read before retrying.
   */
  txn(compares: readonly Compare[], ops: readonly Op[]): Promise<TxnResult>;
  close(): Promise<void>;
}
