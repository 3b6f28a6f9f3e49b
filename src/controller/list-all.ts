import type { Entry, Store } from '../store/index.js';

const PAGE = 1000;

/**
 * Every entry under `prefix`, in key order, read in pages of 1,000 so no single answer grows
 * with the cluster. Not a snapshot: entries written during the walk may or may not appear.
 */
export async function listAll(store: Store, prefix: string): Promise<Entry[]> {
  const out: Entry[] = [];
  let after: string | undefined;
  // Bounded by the number of entries: every page but the last is full and moves `after` on.
  for (;;) {
    const page = await store.list(prefix, { limit: PAGE, after });
    out.push(...page);
    if (page.length < PAGE) return out;
    after = (page[page.length - 1] as Entry).key;
  }
}
