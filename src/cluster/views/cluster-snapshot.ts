/**
 * The cluster-wide settings an allocation depends on — IPAM config, pools, reservations, ip-sets —
 * read together and tagged with the config record's revision. Because every writer of pools
 * and reservations also rewrites `config` (see ipam-config.ts), an allocation txn that
 * compares `config` at `configRev` proves the whole snapshot is still current.
 */
import { crashPoint } from '../../util/crash-point.js';
import { IpRangeSet } from '../../ip/index.js';
import type { Entry, Store } from '../../store/index.js';
import {
  type IpamConfig,
  decodeConfig,
  CONFIG_KEY,
  IPSET_PREFIX,
  POOL_PREFIX,
  RESERVATION_PREFIX,
  type IpSet,
  decodeIpSet,
  ipSetAddrs,
  type Pool,
  decodePool,
  type Reservation,
  decodeReservation,
  reservedSet,
} from '../records/index.js';

export interface ClusterSnapshot {
  /** Revision of the `config` record (0 when absent). */
  readonly configRev: number;
  readonly config: IpamConfig;
  /** Sorted by name. */
  readonly pools: readonly Pool[];
  readonly reservations: readonly Reservation[];
  readonly reserved: IpRangeSet;
  /** Sorted by name. */
  readonly ipSets: readonly IpSet[];
  /** Every ip-set's addresses: only requests naming their set get them. */
  readonly ipSetAddrs: IpRangeSet;
  /** What auto-assignment never hands out: `reserved` and `ipSetAddrs` together. */
  readonly autoExcluded: IpRangeSet;
  /** The raw entries, so the snapshot can be saved and restored exactly. */
  readonly entries: readonly Entry[];
}

/**
 * Reads a snapshot: `config` first, then pools, reservations and ip-sets (in parallel). The order
 * matters: a pool created after our config read bumps config, so the stale snapshot fails
 * its first compare; read the other way round, a new pool could slip between the two reads.
 * Four round trips (the last three in parallel). Throws CorruptRecordError for a record that does not decode.
 */
export async function loadSnapshot(store: Store): Promise<ClusterSnapshot> {
  const config = await store.get(CONFIG_KEY);
  const [pools, reservations, ipSets] = await Promise.all([store.list(POOL_PREFIX), store.list(RESERVATION_PREFIX), store.list(IPSET_PREFIX)]);
  crashPoint('cluster.snapshot.loaded');
  return snapshotFromEntries(config, [...pools, ...reservations, ...ipSets]);
}

/** Builds a snapshot from raw entries (config entry or undefined, then pool/reservation/ip-set entries). */
export function snapshotFromEntries(config: Entry | undefined, entries: readonly Entry[]): ClusterSnapshot {
  const pools = entries.filter((e) => e.key.startsWith(POOL_PREFIX)).map(decodePool);
  pools.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const reservations = entries.filter((e) => e.key.startsWith(RESERVATION_PREFIX)).map(decodeReservation);
  const ipSets = entries.filter((e) => e.key.startsWith(IPSET_PREFIX)).map(decodeIpSet);
  ipSets.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const reserved = reservedSet(reservations);
  const setAddrs = ipSetAddrs(ipSets);
  return {
    configRev: config?.rev ?? 0,
    config: decodeConfig(config),
    pools,
    reservations,
    reserved,
    ipSets,
    ipSetAddrs: setAddrs,
    autoExcluded: setAddrs.ranges.length === 0 ? reserved : new IpRangeSet([...reserved.ranges, ...setAddrs.ranges]),
    entries: config ? [config, ...entries] : [...entries],
  };
}
