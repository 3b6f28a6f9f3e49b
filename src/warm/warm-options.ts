/** What a node's warm pool is started with, and its loops' periods. */
import type { Log } from '../log/logger.js';
import type { PodDirectory } from '../model/pod-directory.js';
import type { OpenPodSource } from './pod-source.js';
import type { StickyPolicy } from './sticky-policy.js';

/** Pool maintenance (plan → refill/return) period. */
export const TICK_MS = 1000;
/** Period of the pool view read (WarmOptions.poolViewMs): a drained pool's idle addresses are returned within it. */
export const POOL_VIEW_MS = 5000;
/** Write-behind: the queue is drained this often (a pod's record lands within about this delay; 1 s keeps steady churn at a few hundredths of a txn per pod; a burst's records go WRITE_BATCH per txn). */
export const WRITE_DELAY_MS = 1000;
/** Write-behind: most records per transaction (etcd allows 128 ops). */
export const WRITE_BATCH = 64;
/** The holder view (warm-view-publisher.ts) is published at most this often when it changes, and unchanged every 6 such periods. */
export const VIEW_INTERVAL_MS = 5000;
/** Refill/return back-off: doubling from 500 ms up to this. */
export const BACKOFF_MAX_MS = 30_000;

export interface WarmOptions {
  readonly datastore: string;
  readonly node: string;
  readonly dataDir: string;
  readonly pools?: readonly string[];
  readonly minIdle: number;
  readonly maxIdle: number;
  readonly capacity: number;
  readonly cooldownMs: number;
  readonly stickyForMs: number;
  /** Which pods are sticky without a kubeconfig (or which StatefulSet pods with one): sticky-policy.ts. */
  readonly sticky?: StickyPolicy;
  /** Pods are looked up, and the GC loop lists them, through this kubeconfig's API server. */
  readonly kubeconfig?: string;
  /** The pod GC loop's period (default 5 minutes, jittered). */
  readonly gcIntervalMs?: number;
  /** Maintenance period (tests shorten it). */
  readonly tickMs?: number;
  /**
   * How often the maintenance loop reads the `config` record to learn of pools that became
   * unusable (draining, disabled, deleting): one small read per node per period, so a large
   * cluster's agents do not read it every tick (default POOL_VIEW_MS).
   */
  readonly poolViewMs?: number;
  readonly writeDelayMs?: number;
  /** false: no datastore watch (warm-trust.ts); tests that drive every loop by hand, as with a long tickMs. Default true. */
  readonly watch?: boolean;
  /** The holder view's publish period (default VIEW_INTERVAL_MS; checked on each write-behind flush). */
  readonly viewIntervalMs?: number;
  readonly now?: () => number;
  /** Opens the pod source of `kubeconfig` (the host's Kubernetes client, src/agent/kube-pods.ts). */
  readonly openPodSource?: OpenPodSource;
  /** The host's watch-fed pod cache: a pod's owner kind from there on ADD, with no API request (pod-tracker.ts). */
  readonly pods?: PodDirectory;
  readonly log?: Log;
}

/**
 * `o` with every key present, in one order (absent ones undefined): every warm pool's options
 * then have one hidden class in V8, whoever built them. The agent's warm-up runs a warm pool of
 * its own (src/agent/warm-up.ts) to get the pool's code optimised before the first pod; options
 * of another shape at the agent's own pool would throw that code away at its first call (and,
 * with V8 optimising only during the warm-up, for good).
 */
export function shapedWarmOptions(o: WarmOptions): WarmOptions {
  const shaped: { readonly [K in keyof Required<WarmOptions>]: WarmOptions[K] } = {
    datastore: o.datastore,
    node: o.node,
    dataDir: o.dataDir,
    pools: o.pools,
    minIdle: o.minIdle,
    maxIdle: o.maxIdle,
    capacity: o.capacity,
    cooldownMs: o.cooldownMs,
    stickyForMs: o.stickyForMs,
    sticky: o.sticky,
    kubeconfig: o.kubeconfig,
    gcIntervalMs: o.gcIntervalMs,
    tickMs: o.tickMs,
    poolViewMs: o.poolViewMs,
    writeDelayMs: o.writeDelayMs,
    watch: o.watch,
    viewIntervalMs: o.viewIntervalMs,
    now: o.now,
    openPodSource: o.openPodSource,
    pods: o.pods,
    log: o.log,
  };
  return shaped;
}
