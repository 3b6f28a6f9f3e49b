/** Shared pieces of the cluster service suites (cluster-ipam-suite.ts, cluster-admin-suite.ts). */
import { formatAddr } from '../../src/ip/index.js';
import type { Store } from '../../src/store/index.js';
import { ClusterIpam } from '../../src/cluster/service/cluster-ipam.js';
import type { Assignment } from '../../src/cluster/records/assignment.js';
import { mulberry32 } from '../../src/util/mulberry32.js';

export const T0 = new Date('2026-01-01T00:00:00Z');

export function ipam(store: Store, maxAttempts?: number): ClusterIpam {
  return new ClusterIpam(store, { now: () => T0, maxAttempts });
}

export const text = (as: readonly Assignment[]): string[] => as.map((a) => `${formatAddr(a.addr)}/${a.prefixLen}`);

export async function twoPools(c: ClusterIpam): Promise<void> {
  await c.createPool({ name: 'v4', cidr: '10.10.0.0/16' });
  await c.createPool({ name: 'v6', cidr: 'fd00:10::/64' });
}

/** A test body on a freshly opened store, closed afterwards. */
export function withStoreOf(open: () => Promise<Store>) {
  return (fn: (s: Store) => Promise<void>) => async () => {
    const s = await open();
    try {
      await fn(s);
    } finally {
      await s.close();
    }
  };
}

export function formatPrefixOf(a: Assignment): string {
  return `${formatAddr({ family: a.block.family, value: a.block.base })}/${a.block.len}`;
}

export const prng = mulberry32;

/**
 * The same store, except that the k-th call "crashes": it throws without reaching the store
 * (landed=false) or after the store applied it (landed=true, a lost answer), and every call
 * after it throws too — as if the process died there.
 */
export function crashAfter(store: Store, k: number, landed: boolean): Store {
  let calls = 0;
  const gate = async <T>(fn: () => Promise<T>): Promise<T> => {
    calls++;
    if (calls < k) return fn();
    if (calls === k && landed) await fn();
    throw new Error(`simulated crash at call ${calls}`);
  };
  return {
    url: store.url,
    get roundTrips() {
      return store.roundTrips;
    },
    get: (key) => gate(() => store.get(key)),
    getMany: (keys) => gate(() => store.getMany(keys)),
    revision: () => gate(() => store.revision()),
    identity: () => gate(() => store.identity()),
    watch: (prefix, from, o) => store.watch(prefix, from, o),
    list: (prefix, o) => gate(() => store.list(prefix, o)),
    snapshot: (prefix) => gate(() => store.snapshot(prefix)),
    txn: (c, o) => gate(() => store.txn(c, o)),
    close: async () => undefined,
  };
}
