/**
 * What the parts of one node's warm pool share (warm-service.ts composes them): the options,
 * the resource DB, the pod tracker, the pool per family with the block information of each
 * address it holds, whether the pools are restored, and the last datastore error. Each part
 * owns its counters; this holds no logic beyond naming things.
 */
import type { WarmSizing } from './warm-pool-config.js';
import { type Addr, type Family, formatAddr } from '../ip/index.js';
import type { ClusterHost } from '../cluster/service/index.js';
import type { ClusterIpam } from '../cluster/service/index.js';
import type { Log } from '../log/logger.js';
import type { PodTracker } from './pod-tracker.js';
import type { ResourceDb } from './resource-db.js';
import { type WarmOptions, shapedWarmOptions } from './warm-options.js';
import type { WarmPool } from './warm-pool.js';
import { warmHandlePrefix } from './warm-handle.js';
import { warmPodRecordKey } from '../model/warm-pod-record.js';
import type { UnusableView } from './unusable-addrs.js';

/** The block information of an address the node holds: its warm handle, prefix length and gateway. */
export interface WarmMeta {
  readonly handle: string;
  readonly prefixLen: number;
  readonly gateway: Addr;
}

export class WarmState {
  pools = new Map<Family, WarmPool>();
  readonly meta = new Map<string, WarmMeta>();
  isReady = false;
  closed = false;
  lastError: string | undefined;
  /**
   * Addresses of pools that are not usable (unusable-addrs.ts), as of the pool view the
   * maintenance loop last read (`poolsRev`, the config generation); undefined: every pool usable.
   */
  unusable: ((a: Addr) => boolean) | undefined;
  poolsRev: number | undefined;
  /**
   * Called when a refresh applied a new config generation: the holder view naming it is the
   * agent's answer that the change is in force (what `ipam reserve`, `pool drain`… wait for), so
   * WarmService flushes the write-behind at once instead of at its next tick.
   */
  onGeneration: (() => void) | undefined;
  /** The last view read (pools, reservations, the node's labels): `unusable` is computed from it. */
  view: UnusableView | undefined;
  /**
   * Addresses the datastore no longer gives to this node's warm handles (released behind the
   * agent's back): dropped from the pools as soon as they are idle or reserved, never handed out.
   */
  readonly gone = new Set<string>();

  /** The options, every key present in one order (warm-options.ts shapedWarmOptions). */
  readonly o: WarmOptions;

  constructor(
    o: WarmOptions,
    readonly cluster: ClusterHost,
    readonly db: ResourceDb,
    readonly pods: PodTracker,
    readonly log: Log,
    readonly now: () => number,
    /** The validated sizing every family's pool shares (warm-pool-config.ts). */
    readonly sizing: WarmSizing,
  ) {
    this.o = shapedWarmOptions(o);
  }

  get node(): string {
    return this.o.node;
  }

  /** Runs `fn` on the node's cluster allocator (after the node's earlier calls). */
  ds<T>(fn: (ipam: ClusterIpam) => Promise<T>): Promise<T> {
    return this.cluster.run(this.o.datastore, this.o.node, fn);
  }

  /** Every warm handle of this node starts with this. */
  warmHandlePrefix(): string {
    return warmHandlePrefix(this.o.node);
  }

  /** The datastore key of the pod record of attachment `key` (`''`: the prefix of them all). */
  podRecordKey(key: string): string {
    return warmPodRecordKey(this.o.node, key);
  }

  /** The CNI address and gateway of an address the pools hold. */
  ipConfig(a: string): { address: string; gateway: string } {
    const m = this.meta.get(a);
    if (!m) throw new Error(`warm pool: no block information for ${a}`);
    return { address: `${a}/${m.prefixLen}`, gateway: formatAddr(m.gateway) };
  }
}
