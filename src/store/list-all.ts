import type { Entry, Store } from './store.js';

/** Entries per page of listAll. */
export const LIST_PAGE = 1000;

/**
 * Every entry under `prefix`, in key order, read in pages of `page` (default LIST_PAGE) so
 * no single answer grows with the data. Not a snapshot: entries written during the walk may
 * or may not appear (see listAllWithRevision to watch after it).
 */
export async function listAll(store: Store, prefix: string, page = LIST_PAGE): Promise<Entry[]> {
  if (!Number.isSafeInteger(page) || page < 1) {
    throw new RangeError(`Cannot list the datastore as 'page' must be a positive integer: current value is ${page}`);
  }
  const entries: Entry[] = [];
  let after: string | undefined;
  // Bounded by the number of entries: every page but the last is full and moves `after` on.
  for (;;) {
    const got = await store.list(prefix, { limit: page, ...(after === undefined ? {} : { after }) });
    entries.push(...got);
    if (got.length < page) return entries;
    after = (got[got.length - 1] as Entry).key;
  }
}

/** A whole prefix, and a revision to watch after it from. */
export interface Listing {
  readonly entries: Entry[];
  /**
   * The store revision read before the first page: every write after it is seen by
   * `watch(prefix, rev + 1)`, so list-then-watch misses nothing (it may see again a write
   * the listing already showed; a consumer that keeps the newest revision per key skips it).
   */
  readonly rev: number;
}

/** listAll, after reading the store revision (one round trip more): list, then watch from `rev + 1`. */
export async function listAllWithRevision(store: Store, prefix: string, page = LIST_PAGE): Promise<Listing> {
  const rev = await store.revision();
  return { entries: await listAll(store, prefix, page), rev };
}
