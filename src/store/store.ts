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

export type Op = { readonly type: 'put'; readonly key: string; readonly value: string } | { readonly type: 'delete'; readonly key: string };

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

/** One change a watch reports. */
export interface WatchEvent {
  readonly type: 'put' | 'delete';
  readonly key: string;
  /** The value written by a put; '' for a delete. */
  readonly value: string;
  /** The revision of the write (for a delete, the revision that deleted the key). */
  readonly modRevision: number;
}

export interface WatchOptions {
  /** Aborting it ends the watch: the iteration returns (no error). */
  readonly signal?: AbortSignal;
}

export interface Store {
  /** The URL the store was opened with (for messages). */
  readonly url: string;
  /** Round trips made to the backing engine since open: what the benchmarks count. */
  readonly roundTrips: number;
  get(key: string): Promise<Entry | undefined>;
  /**
   * The current entries of `keys` (undefined where absent), in the order of `keys`, read as
   * one snapshot: a read, which takes no write lock and proposes nothing. Duplicates allowed.
   * One round trip per MAX_TXN_OPS keys on etcd, one on the other back ends.
   */
  getMany(keys: readonly string[]): Promise<(Entry | undefined)[]>;
  /** The store's current revision (that of its last write; 0 for a new store), a read. */
  revision(): Promise<number>;
  /**
   * What tells this datastore apart from another one at the same URL, a read: etcd's cluster id,
   * a random id kept in the SQLite file (written the first time it is asked for), a random id per
   * memory store's data. A datastore replaced by a new one answers another identity; one restored
   * from its own image (etcd's snapshot, a copy of the SQLite file) may answer the same one, with
   * a lower revision (the history follower checks both).
   */
  identity(): Promise<string>;
  /** Every entry whose key starts with `prefix`, in key order. */
  list(prefix: string, options?: ListOptions): Promise<Entry[]>;
  /**
   * Every entry under `prefix` and the store revision they were read at, as one snapshot (a
   * read: SQLite one read transaction, etcd pages read at one revision, memory one tick), for
   * backups. Unlike listAll, a write during the read is either wholly in it or not at all.
   */
  snapshot(prefix: string): Promise<{ readonly rev: number; readonly entries: Entry[] }>;
  /**
   * Atomically: if every compare holds, apply every op in order. A failed compare applies
   * nothing and is not an error (succeeded: false). Throws StoreUnavailableError when the
   * engine cannot be reached within the store's deadline — the caller cannot know whether the
   * write landed, so racing callers re-read before retrying.
   */
  txn(compares: readonly Compare[], ops: readonly Op[]): Promise<TxnResult>;
  /**
   * Every change to keys starting with `prefix` at revision `fromRevision` or later, in
   * revision order (within one revision, in the txn's op order), each exactly once, as
   * batches of whole revisions. `fromRevision` ≥ 1; watch from `revision() + 1` (or a
   * listing's `rev + 1`, see listAll) to see what follows a read. Ends (returns) when the
   * signal aborts or the store is closed. When the history from `fromRevision` is gone
   * (etcd compaction, the bounded change log of SQLite and memory) it throws
   * StoreCompactedError, at once or later if the watch falls that far behind: relist and
   * watch again from the listing's revision. Transient outages are ridden out (etcd:
   * reconnect to any member from the last revision seen), not reported.
   */
  watch(prefix: string, fromRevision: number, options?: WatchOptions): AsyncIterable<WatchEvent[]>;
  close(): Promise<void>;
}
