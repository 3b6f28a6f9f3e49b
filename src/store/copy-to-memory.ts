import { MAX_TXN_OPS } from './check-input.js';
import { listAll } from './list-all.js';
import { MemoryStore } from './memory/memory-store.js';
import type { Store } from './store.js';

/**
 * A private memory store holding every entry of `store` (read in pages, not one snapshot):
 * what a dry run works on, so it runs the very code of the real run and writes nothing.
 * Revisions are the copy's own.
 */
export async function copyToMemory(store: Store): Promise<MemoryStore> {
  const copy = new MemoryStore();
  const entries = await listAll(store, '');
  for (let i = 0; i < entries.length; i += MAX_TXN_OPS) {
    const ops = entries.slice(i, i + MAX_TXN_OPS).map((e) => ({ type: 'put' as const, key: e.key, value: e.value }));
    await copy.txn([], ops);
  }
  return copy;
}
