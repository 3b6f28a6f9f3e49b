/**
 * A real store with its `txn` replaced (a fault injected, a txn held back or its answer lost);
 * every other call passes through. The test doubles of the store build on it.
 */
import type { Store } from '../../src/store/index.js';

export function withTxn(inner: Store, txn: Store['txn']): Store {
  return {
    url: inner.url,
    get roundTrips() {
      return inner.roundTrips;
    },
    get: (k) => inner.get(k),
    getMany: (k) => inner.getMany(k),
    revision: () => inner.revision(),
    identity: () => inner.identity(),
    list: (p, o) => inner.list(p, o),
    snapshot: (p) => inner.snapshot(p),
    watch: (p, r, o) => inner.watch(p, r, o),
    close: () => inner.close(),
    txn,
  };
}
