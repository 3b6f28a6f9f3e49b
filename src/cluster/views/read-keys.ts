/**
 * Reads several keys as one snapshot with the store's getMany (a read: no write lock on
 * SQLite, a txn of ranges on etcd, one round trip per 128 keys there). A single key is a
 * plain get.
 */
import type { Entry, Store } from '../../store/index.js';

/** Current entries of `keys` (undefined where absent). Throws what the store throws. */
export async function readKeys(store: Store, keys: readonly string[]): Promise<Map<string, Entry | undefined>> {
  const unique = [...new Set(keys)];
  const out = new Map<string, Entry | undefined>();
  if (unique.length === 1) {
    out.set(unique[0]!, await store.get(unique[0]!));
    return out;
  }
  const entries = await store.getMany(unique);
  unique.forEach((key, i) => out.set(key, entries[i]));
  return out;
}
