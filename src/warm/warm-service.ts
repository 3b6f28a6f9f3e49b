/**
 * `WarmService`, the agent's warm-pool back end (`"ipam": {"type": "podipam", "agent": SOCK}` with neither
 * `ranges`/`subnet` nor `datastore`): the node keeps idle addresses of the cluster allocator
 * (src/cluster) in a WarmPool per family (warm-pool.ts), and an ADD is served from
 * it with no synchronous datastore round trip — the pod's row is committed to the resource DB
 * (resource-db.ts) before the answer; the datastore learns of the pod later (write-behind).
 *
 * Where the addresses live in the datastore: under the node's WARM HANDLES,
 * `podipam-warm:<node>:<refill id>` (one handle per refill transaction, since an assignment to
 * an existing handle tops it up to a total instead of adding), for their whole stay on the node,
 * idle or in use. So no other node can take them, `ipam show` counts them as allocated on
 * this node and `ipam check` sees them held by a live handle (not leaks). There is no "move
 * between handles" in the cluster allocator; instead of adding one (a new txn kind rewriting
 * block attributes and two handle records, contested by every other writer of the block) the
 * pod's ownership is recorded as `agent-pods/<node>/<pod handle>` → `{addrs, warmHandle, since, …}`
 * records, written behind in batches (one txn of up to WRITE_BATCH ops) within ~WRITE_DELAY_MS,
 * and deleted the same way after DEL. Pods keep starting while the datastore is away; the
 * queue lives in the resource DB and drains when it returns.
 *
 * Refills (WarmPool.plan, a miss) are one `assign` of up to MAX_ADDRESSES_PER_REQUEST addresses
 * per family to a fresh warm handle — both families in one txn; returns are one
 * `releaseAddresses` of every surplus address; both back off (doubling, to BACKOFF_MAX_MS) on
 * failure. On start the pools are rebuilt from the resource DB and reconciled with the
 * datastore's warm handles and pod records of this node (plan-reconcile.ts): an address is
 * idle only on proof (the DB had it idle, or recorded the intent of the refill that took it);
 * a pod record the DB does not know is in use; any other unknown address is quarantined. The
 * data directory is held with `<data-dir>/agent.lock` for the service's life (data-dir-lock.ts).
 *
 * Sticky pods (StatefulSets, or the sticky policy's; pod-tracker.ts decides at ADD) take their
 * addresses under a pool key of their namespace/name instead of the attachment key: their DEL
 * leaves a sticky reservation (the pool's, persisted in the resource DB's pod store tables,
 * pod-store.ts) that the pod's next incarnation (a new container id) gets back within
 * `stickyForMs`. With a kubeconfig, a GC loop releases what pods gone from the API server
 * still hold (pod-gc.ts).
 *
 * Annotated pods (`podipam.io/pools`, `podipam.io/ip`, `podipam.io/ip-set`, Calico's, Cilium's,
 * Spiderpool's: src/model/placement.ts) never take from the idle queue, whose addresses come
 * from the node's configured pools: they are allocated directly on the datastore under their
 * own handle, as the cluster back end would, and recorded as direct attachments in the
 * resource DB (warm-direct.ts).
 *
 * The parts, each its own file, share one WarmState (warm-state.ts): the verbs (warm-verbs.ts),
 * the restore and reconcile at start (warm-restore.ts), the refiller and its maintenance loop
 * (warm-refiller.ts), the write-behind (warm-write-behind.ts). The sizing is validated once,
 * here, by validateWarmSizing (warm-pool-config.ts). The datastore is reached through the
 * cluster back end only (ClusterHost; the warm records API, src/cluster/txn/warm-handles.ts).
 */
import { closeSync } from 'node:fs';
import type { Addr, Family } from '../ip/index.js';
import type { ClusterHost } from '../cluster/service/index.js';
import { silentLog } from '../log/logger.js';
import { lockDataDir } from './data-dir-lock.js';
import { PodTracker, type PodTrackerStatus } from './pod-tracker.js';
import { type PodRow, ResourceDb } from './resource-db.js';
import type { ReleaseEvidence } from '../model/history.js';
import type { WarmOptions } from './warm-options.js';
import { validateWarmSizing } from './warm-pool-config.js';
import { WarmDirect } from './warm-direct.js';
import { WarmRefiller } from './warm-refiller.js';
import type { WarmAnswer, WarmRequest } from './warm-request.js';
import { WarmRestore } from './warm-restore.js';
import { WarmState } from './warm-state.js';
import { WarmTrust } from './warm-trust.js';
import { WarmVerbs } from './warm-verbs.js';
import { WarmWriteBehind } from './warm-write-behind.js';

export { WARM_NETWORK, POD_RECORD_PREFIX } from './warm-handle.js';
export { BACKOFF_MAX_MS, TICK_MS, WRITE_BATCH, WRITE_DELAY_MS, type WarmOptions } from './warm-options.js';
export type { WarmAnswer, WarmRequest } from './warm-request.js';

export interface WarmStatus {
  readonly families: readonly Family[];
  readonly ready: boolean;
  readonly minIdle: number;
  readonly maxIdle: number;
  readonly capacity: number;
  readonly cooldownMs: number;
  /** Per family: idle, in use, returning, pending refills, tokens. */
  readonly pools: Record<string, { idle: number; inUse: number; reserved: number; returning: number; pending: number; tokens: number }>;
  readonly stickyForMs: number;
  /** Sticky reservations waiting for their pods, all families. */
  readonly stickyReservations: number;
  /** Sticky hits, pod lookups, the GC loop, the pod store (pod-tracker.ts). */
  readonly pods: PodTrackerStatus;
  readonly hits: number;
  readonly misses: number;
  /** Attachments freed by runtime reconciliation (their sandbox gone from the runtime). */
  readonly runtimeAbsent: number;
  /** Attachments allocated directly on the datastore (annotated pods, warm-direct.ts), now. */
  readonly direct: number;
  /** Direct allocations made, and direct handles released (DEL, GC). */
  readonly directAdds: number;
  readonly directReleases: number;
  readonly refillTxns: number;
  readonly refilled: number;
  readonly returnTxns: number;
  readonly returned: number;
  readonly writeBehindDepth: number;
  readonly writeBehindAgeMs: number;
  readonly writeTxns: number;
  readonly droppedOnReconcile: number;
  readonly adoptedOnReconcile: number;
  /** Addresses the node's warm handles hold that no evidence shows free (a lost resource DB): held out of the idle queue. */
  readonly quarantined: number;
  /** Addresses the node's warm handles lost behind the agent (its watch saw them freed): dropped, never handed out. */
  readonly droppedByWatch: number;
  /** Refills and returns whose answer was lost, not yet settled by a re-read (warm-unknown.ts). */
  readonly inDoubt: number;
  readonly lastError: string | undefined;
}

/** The counters of the parts, as `report()` gives them. */
export type WarmCounters = Pick<
  WarmStatus,
  | 'hits'
  | 'misses'
  | 'runtimeAbsent'
  | 'directAdds'
  | 'directReleases'
  | 'refillTxns'
  | 'refilled'
  | 'returnTxns'
  | 'returned'
  | 'writeTxns'
  | 'droppedOnReconcile'
  | 'adoptedOnReconcile'
>;

export class WarmService {
  readonly #s: WarmState;
  /** `<data-dir>/agent.lock`, held for the service's life (data-dir-lock.ts). */
  readonly #lockFd: number;
  readonly #restore: WarmRestore;
  readonly #refiller: WarmRefiller;
  readonly #trust: WarmTrust;
  readonly #verbs: WarmVerbs;
  readonly #writes: WarmWriteBehind;
  readonly #direct: WarmDirect;

  /** WarmPoolConfigError (naming the field) when the sizing is out of bounds; DataDirLockedError when another agent holds the data directory. */
  constructor(o: WarmOptions, cluster: ClusterHost) {
    const sizing = validateWarmSizing(o);
    const log = o.log ?? silentLog;
    const now = o.now ?? Date.now;
    const lockFd = lockDataDir(o.dataDir);
    let db: ResourceDb;
    try {
      db = new ResourceDb(o.dataDir);
    } catch (e) {
      closeSync(lockFd);
      throw e;
    }
    this.#lockFd = lockFd;
    // Every key, present or not: one shape of options for every pool's tracker (shapedWarmOptions).
    const pods = new PodTracker(db, {
      node: o.node,
      stickyForMs: o.stickyForMs,
      now,
      policy: o.sticky,
      kubeconfig: o.kubeconfig,
      gcIntervalMs: o.gcIntervalMs,
      openPodSource: o.openPodSource,
      pods: o.pods,
      log,
    });
    this.#s = new WarmState(o, cluster, db, pods, log, now, sizing);
    this.#direct = new WarmDirect(this.#s);
    this.#restore = new WarmRestore(this.#s, sizing, () => this.#refiller.refill(false), this.#direct);
    this.#refiller = new WarmRefiller(this.#s, () => this.#restore.ensureReady());
    this.#trust = new WarmTrust(this.#s, this.#refiller);
    this.#verbs = new WarmVerbs(this.#s, this.#restore, this.#refiller, this.#direct);
    this.#writes = new WarmWriteBehind(this.#s);
    this.#s.onGeneration = () => {
      if (!this.#s.closed) void this.#writes.flush().catch(() => undefined); // a failure: the loop's next tick writes it
    };
  }

  /** Rebuilds, reconciles and preloads (errors logged: retried by the loop and the first call), then starts the loops. */
  async start(): Promise<void> {
    await this.#s.pods.open();
    await this.#restore.ensureReady().catch((e: Error) => this.#s.log.warn({ error: e.message }, 'warm pool not ready yet'));
    this.#refiller.start();
    if (this.#s.o.watch !== false) this.#trust.start();
    this.#writes.start();
    this.#s.pods.start((keys, now) => this.#verbs.gcRelease(keys, now));
  }

  /** Stops the loops, waits for a refill in flight, flushes the write-behind once more, closes the resource DB and the lock. */
  async close(): Promise<void> {
    this.#s.closed = true;
    const loops = [this.#refiller.stop(), this.#writes.stop(), this.#trust.stop()]; // their timers are cleared now
    await this.#s.pods.stop();
    await Promise.all(loops);
    await this.#writes.flush().catch(() => undefined);
    this.#s.db.close();
    closeSync(this.#lockFd);
  }

  // ---- CNI verbs (warm-verbs.ts) ----

  add(req: WarmRequest): Promise<WarmAnswer> {
    return this.#verbs.add(req);
  }

  del(req: WarmRequest): Promise<void> {
    return this.#verbs.del(req);
  }

  /** Succeeds when the attachment holds addresses, among them every one of `expect` (its prevResult's). */
  check(req: WarmRequest, expect: readonly Addr[]): Promise<void> {
    return this.#verbs.check(req, expect);
  }

  /** Releases every attachment of `network` not in `valid`. */
  gc(network: string, valid: readonly { readonly containerId: string; readonly ifname: string }[]): Promise<void> {
    return this.#verbs.gc(network, valid);
  }

  /** Resolves once the pools are restored; a not-ready WarmError otherwise. */
  status(): Promise<void> {
    return this.#restore.ready();
  }

  // ---- runtime reconciliation (src/reconcile/warm-allocations.ts) ----

  /** Container ids with an ADD or DEL running in this service now. */
  inFlight(): ReadonlySet<string> {
    return this.#verbs.inFlight();
  }

  /** The attachments the idle queue served (resource DB pod rows, with `since` and the last ADD/DEL of their container id, `touchedAt`); not-ready WarmError before the restore. */
  podRows(): Promise<(PodRow & { readonly touchedAt?: number })[]> {
    return this.#verbs.podRows();
  }

  /** Frees `row` as a DEL would, only while it is as listed and untouched since the evidence's earlier answer (WarmVerbs.releaseAsListed). */
  releaseAsListed(row: Pick<PodRow, 'key' | 'containerId' | 'since'> & { readonly touchedAt?: number }, evidence: ReleaseEvidence): string[] {
    return this.#verbs.releaseAsListed(row, evidence);
  }

  // ---- runs on demand (tests, benches) ----

  /** One pod GC run now (what its loop does): purge the pod store; with a kubeconfig, list and release. */
  gcPods(): Promise<unknown> {
    return this.#s.pods.runOnce((keys, now) => this.#verbs.gcRelease(keys, now));
  }

  /** One maintenance run now (what the loop does): refill to minIdle, return above maxIdle. */
  maintain(): Promise<void> {
    return this.#refiller.maintain();
  }

  /** Writes the queued pod records now (warm-write-behind.ts). */
  flushWrites(): Promise<void> {
    return this.#writes.flush();
  }

  get counters(): WarmCounters {
    return { ...this.#verbs.counters, ...this.#direct.counters, ...this.#refiller.counters, ...this.#writes.counters, ...this.#restore.counters };
  }

  /** The warm pool's state and counters, for `podipam agent status`. */
  report(): WarmStatus {
    const s = this.#s;
    const pools: WarmStatus['pools'] = {};
    for (const [f, p] of s.pools) {
      const c = p.counts();
      pools[`ipv${f}`] = { idle: c.idle, inUse: c.inUse, reserved: c.reserved, returning: c.returning, pending: c.pending, tokens: c.tokens };
    }
    const w = s.db.writeDepth();
    const { minIdle, maxIdle, capacity, cooldownMs } = s.o;
    return {
      families: [...s.pools.keys()],
      ready: s.isReady,
      minIdle,
      maxIdle,
      capacity,
      cooldownMs,
      pools,
      stickyForMs: s.o.stickyForMs,
      stickyReservations: Object.values(pools).reduce((n, c) => n + c.reserved, 0),
      pods: s.pods.report(),
      ...this.counters,
      direct: this.#direct.size,
      writeBehindDepth: w.depth,
      writeBehindAgeMs: w.oldestAt === undefined ? 0 : Math.max(0, s.now() - w.oldestAt),
      quarantined: this.#restore.quarantined,
      droppedByWatch: this.#trust.counters.gone,
      inDoubt: this.#refiller.unknown.pending,
      lastError: s.lastError,
    };
  }
}
