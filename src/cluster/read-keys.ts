/**
 * Reads several keys in one round trip per 128 keys: a txn whose compares can never hold
 * (revision MAX_SAFE_INTEGER) applies nothing and returns every compared key's current entry
 * — the Store contract's `current` — which is a batched get. A single key is a plain get.
 */
import { MAX_TXN_OPS, type Entry, type Store } from '../store/index.js';

/** Current entries of `keys` (undefined where absent). Throws what the store throws. */
export async function readKeys(store: Store, keys: readonly string[]): Promise<Map<string, Entry | undefined>> {
  const unique = [...new Set(keys)];
  const out = new Map<string, Entry | undefined>();
  if (unique.length === 1) {
    out.set(unique[0]!, await store.get(unique[0]!));
    return out;
  }
  for (let i = 0; i < unique.length; i += MAX_TXN_OPS) {
    const chunk = unique.slice(i, i + MAX_TXN_OPS);
    const r = await store.txn(chunk.map((key) => ({ key, rev: Number.MAX_SAFE_INTEGER })), []);
    chunk.forEach((key, j) => out.set(key, r.current?.[j]));
  }
  return out;
}
