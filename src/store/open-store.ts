import { parseStoreUrl } from './parse-store-url.js';
import type { Store } from './store.js';
import { resolveTimeoutMs, type StoreOptions } from './store-options.js';

/**
 * Opens the datastore a URL names (see parseStoreUrl): `memory:[NAME]`, `sqlite:PATH`,
 * `etcd://HOST:PORT[,…]`, `etcds://…` (TLS and credentials also from PODIPAM_ETCD_*, see
 * EtcdStore.open). Each back end is imported only when its URL is opened, so the CNI
 * plugin on etcd never loads SQLite's native module, and the reverse.
 * Throws StoreUrlError for a bad URL or etcd settings (the password never shown), RangeError for a bad timeout, StoreError or
 * StoreUnavailableError when the SQLite file cannot be opened. Opening etcd makes no request:
 * an unreachable cluster shows on the first call.
 */
export async function openStore(url: string, options?: StoreOptions): Promise<Store> {
  const target = parseStoreUrl(url);
  resolveTimeoutMs(options);
  switch (target.kind) {
    case 'memory': {
      const { MemoryStore } = await import('./memory/memory-store.js');
      return new MemoryStore(target.name);
    }
    case 'sqlite': {
      const { SqliteStore } = await import('./sqlite/sqlite-store.js');
      return SqliteStore.open(url, target.path, options);
    }
    case 'etcd': {
      const { EtcdStore } = await import('./etcd/etcd-store.js');
      return EtcdStore.open(url, target, options);
    }
  }
}
