/**
 * The agent's warm-pool back end (`"ipam": {"type": "podipam", "agent": SOCK}` with neither
 * `ranges`/`subnet` nor `datastore`): the node keeps idle addresses of the cluster allocator
 * (src/cluster) in a WarmPool per family (src/alloc/warm-pool.ts), and an ADD is served from
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
 * pod's ownership is recorded as `agent-pods/<node>/<pod handle>` → `{addrs, warmHandles, …}`
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
 */
import { crashPoint } from '../util/crash-point.js';
import { WarmPool, type WarmPoolConfig } from './warm-pool.js';
import type { Log } from '../log/logger.js';
import { silentLog } from '../log/logger.js';
import { WarmError } from './warm-error.js';
import type { OpenPodSource } from './pod-source.js';
import { MAX_ADDRESSES_PER_REQUEST } from '../cluster/assign.js';
import type { ClusterIpam } from '../cluster/cluster-ipam.js';
import { loadSnapshot } from '../cluster/cluster-snapshot.js';
import { HANDLE_PREFIX } from '../cluster/keys.js';
import { cniHandleId, MAX_HANDLE_LENGTH } from '../model/handle-id.js';
import type { ClusterServices } from '../agent/cluster-services.js';
import { type Addr, type Family, formatAddr, parseAddr } from '../ip/index.js';
import { closeSync } from 'node:fs';
import { type PodRecord, planReconcile } from './plan-reconcile.js';
import { type HeldRow, ResourceDb } from './resource-db.js';
import { lockDataDir } from './data-dir-lock.js';
import { WARM_NETWORK, podRecordKey, warmHandlePrefix } from './warm-handle.js';
import { PodTracker, type PodTrackerStatus } from './pod-tracker.js';
import type { StickyPolicy } from './sticky-policy.js';

export { WARM_NETWORK, POD_RECORD_PREFIX } from './warm-handle.js';
/** Pool maintenance (plan → refill/return) period. */
export const TICK_MS = 1000;
/** Write-behind: the queue is drained this often (a pod's record lands within about this delay; 1 s keeps steady churn at a few hundredths of a txn per pod; a burst's records go WRITE_BATCH per txn). */
export const WRITE_DELAY_MS = 1000;
/** Write-behind: most records per transaction (etcd allows 128 ops). */
export const WRITE_BATCH = 64;
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
  readonly writeDelayMs?: number;
  readonly now?: () => number;
  /** Opens the pod source of `kubeconfig` (the host's Kubernetes client, src/agent/kube-pods.ts). */
  readonly openPodSource?: OpenPodSource;
  readonly log?: Log;
}

/** One attachment's call: the network's name, the container and interface, CNI_ARGS. */
export interface WarmRequest {
  readonly network: string;
  readonly containerId: string;
  readonly ifname: string;
  readonly cniArgs: ReadonlyMap<string, string>;
}

/** What an ADD gives the attachment: one address per family, with its block's prefix length and gateway. */
export interface WarmAnswer {
  readonly ips: readonly { readonly address: string; readonly gateway: string }[];
}

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
  readonly lastError: string | undefined;
}

interface Meta {
  readonly handle: string;
  readonly prefixLen: number;
  readonly gateway: Addr;
}

/** Validates the warm-pool sizing (WarmPoolConfigError naming the field) without starting anything. */
export function warmPoolConfig(o: Pick<WarmOptions, 'minIdle' | 'maxIdle' | 'capacity' | 'cooldownMs' | 'stickyForMs'>, family: Family): WarmPoolConfig {
  return new WarmPool({ family, minIdle: o.minIdle, maxIdle: o.maxIdle, capacity: o.capacity, cooldownMs: o.cooldownMs, stickyForMs: o.stickyForMs }).config;
}

export class WarmService {
  readonly #o: WarmOptions;
  readonly #cluster: ClusterServices;
  readonly #db: ResourceDb;
  /** `<data-dir>/agent.lock`, held for the service's life (data-dir-lock.ts). */
  readonly #lockFd: number;
  #quarantined = 0;
  readonly #pods: PodTracker;
  readonly #now: () => number;
  #pools = new Map<Family, WarmPool>();
  readonly #meta = new Map<string, Meta>();
  #ready: Promise<void> | undefined;
  #isReady = false;
  #timer: NodeJS.Timeout | undefined;
  #writeTimer: NodeJS.Timeout | undefined;
  #closed = false;
  #refillRun: Promise<void> | undefined;
  #again = false;
  readonly #demand = new Map<Family, number>();
  #backoffUntil = 0;
  #backoffMs = 0;
  #flushRun: Promise<void> | undefined;
  #flushAgain: Promise<void> | undefined;
  #refillSeq = 0;
  /** ADDs waiting for a refill: while there are any, nothing idle is returned as surplus. */
  #waiters = 0;
  readonly counters = { hits: 0, misses: 0, refillTxns: 0, refilled: 0, returnTxns: 0, returned: 0, writeTxns: 0, droppedOnReconcile: 0, adoptedOnReconcile: 0 };
  #lastError: string | undefined;
  #lastFailure: unknown;
  readonly #log: Log;

  constructor(o: WarmOptions, cluster: ClusterServices) {
    warmPoolConfig(o, 4);
    this.#o = o;
    this.#log = o.log ?? silentLog;
    this.#cluster = cluster;
    this.#now = o.now ?? Date.now;
    this.#lockFd = lockDataDir(o.dataDir);
    try {
      this.#db = new ResourceDb(o.dataDir);
    } catch (e) {
      closeSync(this.#lockFd);
      throw e;
    }
    this.#pods = new PodTracker(this.#db, {
      node: o.node,
      stickyForMs: o.stickyForMs,
      now: this.#now,
      ...(o.sticky ? { policy: o.sticky } : {}),
      ...(o.kubeconfig !== undefined ? { kubeconfig: o.kubeconfig } : {}),
      ...(o.gcIntervalMs !== undefined ? { gcIntervalMs: o.gcIntervalMs } : {}),
      ...(o.openPodSource ? { openPodSource: o.openPodSource } : {}),
      log: this.#log,
    });
  }

  /** Rebuilds, reconciles and preloads (errors logged: retried by the timer and the first call), then starts the timers. */
  async start(): Promise<void> {
    await this.#pods.open();
    await this.#ensureReady().catch((e: Error) => this.#log.warn({ error: e.message }, 'warm pool not ready yet'));
    this.#timer = setInterval(() => void this.#tick(), this.#o.tickMs ?? TICK_MS);
    this.#timer.unref();
    this.#writeTimer = setInterval(() => void this.flushWrites(), this.#o.writeDelayMs ?? WRITE_DELAY_MS);
    this.#writeTimer.unref();
    this.#pods.start((keys, now) => Promise.resolve(this.#gcRelease(keys, now)));
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
    clearInterval(this.#writeTimer);
    await this.#pods.stop();
    await this.#refillRun?.catch(() => undefined);
    await this.flushWrites().catch(() => undefined);
    this.#db.close();
    closeSync(this.#lockFd);
  }

  // ---- CNI verbs -------------------------------------------------------------------------

  async add(req: WarmRequest): Promise<WarmAnswer> {
    await this.#readyOr11();
    const key = podKey(req, this.#o.node);
    let id = await this.#pods.identify({ network: req.network, ifname: req.ifname, cniArgs: req.cniArgs }, key, this.#db.hasPod(key));
    // Checked again with no await before the acquire: another ADD may have taken the key meanwhile.
    const holder = id.poolKey !== key ? this.#pods.store.holder(id.poolKey) : undefined;
    if (holder && holder.key !== key && holder.key !== id.transferFrom) {
      this.#log.warn({ poolKey: id.poolKey, holder: holder.key, attachment: key }, 'sticky pod: another attachment took its pool key meanwhile; this one is not sticky');
      id = { ...id, sticky: false, poolKey: key, transferFrom: undefined };
    }
    if (id.transferFrom !== undefined) {
      this.#log.info({ namespace: id.namespace, name: id.name, from: id.transferFrom, to: key }, 'sticky pod: the new incarnation takes over what its dead one holds');
      this.#releaseAttachment(id.transferFrom, this.#now(), true);
    }
    const poolKey = id.poolKey;
    let stickyHit = false;
    for (let attempt = 0; attempt < 16; attempt++) {
      const now = this.#now();
      const got: [Family, Addr][] = [];
      let missed: Family | undefined;
      let retryAt: number | undefined;
      let full = false;
      let fresh = false;
      for (const [f, pool] of this.#pools) {
        const r = pool.acquire(poolKey, now, { sticky: id.sticky });
        if (r.kind === 'hit') {
          got.push([f, r.addr]);
          if (r.from !== 'again') fresh = true;
          if (r.from === 'sticky') stickyHit = true;
          continue;
        }
        missed ??= f;
        if (r.refill) this.#demand.set(f, (this.#demand.get(f) ?? 0) + 1);
        else ((full = true), (retryAt = r.retryAt));
      }
      if (missed === undefined) {
        const texts = got.map(([, a]) => formatAddr(a));
        if (fresh) {
          const addrs = texts;
          try {
            this.#db.transaction(() => {
              this.#db.addPod(
                { key, network: req.network, containerId: req.containerId, ifname: req.ifname, addrs, since: now },
                { key: this.#podRecordKey(key), value: JSON.stringify({ network: req.network, containerId: req.containerId, ifname: req.ifname, addrs, warmHandles: got.map(([, a]) => this.#meta.get(formatAddr(a))?.handle), since: new Date(now).toISOString(), namespace: id.namespace, name: id.name, uid: id.uid }) },
              );
              const { namespace, name, uid, ownerKind, sticky } = id;
              this.#pods.store.seen({ key, network: req.network, namespace, name, uid, containerId: req.containerId, ifname: req.ifname, ownerKind, sticky, poolKey, addrs, addedAt: now });
              if (sticky) this.#pods.store.unreserve(poolKey);
            });
          } catch (e) {
            for (const [f] of got) this.#pools.get(f)!.cancel(poolKey, now);
            throw new WarmError('io', this.#o.node, `resource DB ${this.#db.path}: ${(e as Error).message}`);
          }
          crashPoint('agent.add.recorded');
          this.counters.hits += attempt === 0 ? 1 : 0;
          if (stickyHit) this.#pods.counters.stickyHits++;
        }
        this.#lowWater();
        return { ips: texts.map((a) => this.#ipConfig(a)) };
      }
      // Both or neither: what this attempt took goes back where it was.
      for (const [f] of got) this.#pools.get(f)!.cancel(poolKey, now);
      stickyHit = false;
      if (attempt === 0) this.counters.misses++;
      if (full) {
        const wait = retryAt === undefined ? undefined : retryAt - now;
        throw new WarmError('transient', this.#o.node, `warm pool of IPv${missed} on node ${this.#o.node} is at capacity ${this.#o.capacity}${wait !== undefined ? `: the next address is free in ${Math.max(0, Math.ceil(wait / 1000))} s` : ''}`);
      }
      this.#waiters++;
      try {
        await this.#refill(true);
      } finally {
        this.#waiters--;
      }
      if (this.#lastFailure !== undefined && this.#backoffUntil > this.#now() && this.#pools.get(missed)!.counts().idle === 0) {
        throw this.#lastFailure;
      }
    }
    throw new WarmError('transient', this.#o.node, `warm pool on node ${this.#o.node}: no address after repeated refills`);
  }

  async del(req: WarmRequest): Promise<void> {
    await this.#readyOr11();
    this.#releaseAttachment(podKey(req, this.#o.node), this.#now());
  }

  /**
   * Lets the attachment's addresses go: a sticky one's (`sticky` undefined: as its ADD decided;
   * false: gone for good, the GC's) into a reservation for its pool key, else idle after the
   * cooldown. Returns the addresses released (none when the attachment holds none).
   */
  #releaseAttachment(key: string, now: number, sticky?: boolean): string[] {
    const own = this.#pods.poolKeyOf(key);
    const addrs: [Family, string][] = [];
    for (const [f, pool] of this.#pools) {
      const a = pool.release(own.poolKey, now, sticky === undefined ? {} : { sticky });
      if (a) addrs.push([f, formatAddr(a)]);
    }
    const hasPod = this.#db.hasPod(key);
    if (addrs.length === 0 && !hasPod) {
      this.#pods.store.deleted(key, now);
      return [];
    }
    const { stickyForMs, cooldownMs } = this.#o;
    const reserve = (sticky ?? own.sticky) && stickyForMs > 0 && own.poolKey !== key;
    const freeAt = now + (reserve ? Math.max(stickyForMs, cooldownMs) : cooldownMs);
    this.#db.transaction(() => {
      this.#db.removePod(key, addrs.map(([, a]) => a), freeAt, this.#podRecordKey(key), now);
      if (reserve) this.#pods.store.reserve(addrs.map(([family, addr]) => ({ addr, family, poolKey: own.poolKey, expiresAt: now + stickyForMs, freeAt })));
      this.#pods.store.deleted(key, now);
    });
    crashPoint('agent.del.recorded');
    return addrs.map(([, a]) => a);
  }

  /** The pod GC's release (pod-tracker.ts): gone for good; returns how many attachments held addresses. */
  #gcRelease(keys: readonly string[], now: number): number {
    if (!this.#isReady || this.#closed) return 0;
    let n = 0;
    for (const k of keys) if (this.#releaseAttachment(k, now, false).length > 0) n++;
    return n;
  }

  /** Succeeds when the attachment holds addresses, among them every one of `expect` (its prevResult's). */
  async check(req: WarmRequest, expect: readonly Addr[]): Promise<void> {
    await this.#readyOr11();
    const key = podKey(req, this.#o.node);
    const { poolKey } = this.#pods.poolKeyOf(key);
    const held = [...this.#pools.values()].map((p) => p.addressOf(poolKey)).filter((a): a is Addr => a !== undefined);
    if (held.length === 0) throw new WarmError('not-found', this.#o.node, `attachment ${JSON.stringify(key)} holds no warm-pool address on node ${this.#o.node}`);
    for (const want of expect) {
      if (!held.some((a) => a.family === want.family && a.value === want.value)) {
        throw new WarmError('not-found', this.#o.node, `attachment ${JSON.stringify(key)} does not hold ${formatAddr(want)} (it holds ${held.map(formatAddr).join(', ')})`);
      }
    }
  }

  /** Releases every attachment of `network` not in `valid`. */
  async gc(network: string, valid: readonly { readonly containerId: string; readonly ifname: string }[]): Promise<void> {
    await this.#readyOr11();
    const keep = new Set(valid.map((a) => cniHandleId(network, a.containerId, a.ifname)));
    for (const p of this.#db.pods()) {
      if (p.network === network && !keep.has(p.key)) await this.del({ containerId: p.containerId, ifname: p.ifname, cniArgs: new Map(), network });
    }
  }

  async status(): Promise<void> {
    try {
      await this.#ensureReady();
    } catch (e) {
      throw new WarmError('not-ready', this.#o.node, `warm pool on node ${this.#o.node} not ready: ${(e as Error).message}`);
    }
  }

  /** The warm pool's state and counters, for `podipam agent status`. */
  report(): WarmStatus {
    const pools: WarmStatus['pools'] = {};
    for (const [f, p] of this.#pools) {
      const c = p.counts();
      pools[`ipv${f}`] = { idle: c.idle, inUse: c.inUse, reserved: c.reserved, returning: c.returning, pending: c.pending, tokens: c.tokens };
    }
    const w = this.#db.writeDepth();
    const { minIdle, maxIdle, capacity, cooldownMs } = this.#o;
    return {
      families: [...this.#pools.keys()],
      ready: this.#isReady,
      minIdle,
      maxIdle,
      capacity,
      cooldownMs,
      pools,
      stickyForMs: this.#o.stickyForMs,
      stickyReservations: Object.values(pools).reduce((n, c) => n + c.reserved, 0),
      pods: this.#pods.report(),
      ...this.counters,
      writeBehindDepth: w.depth,
      writeBehindAgeMs: w.oldestAt === undefined ? 0 : Math.max(0, this.#now() - w.oldestAt),
      quarantined: this.#quarantined,
      lastError: this.#lastError,
    };
  }

  // ---- start: rebuild and reconcile ----------------------------------------------------------

  async #readyOr11(): Promise<void> {
    try {
      await this.#ensureReady();
    } catch (e) {
      throw new WarmError('not-ready', this.#o.node, `warm pool on node ${this.#o.node} not ready: ${(e as Error).message}`);
    }
  }

  #ensureReady(): Promise<void> {
    if (this.#isReady) return Promise.resolve();
    this.#ready ??= this.#init().then(
      () => {
        this.#isReady = true;
      },
      (e: unknown) => {
        this.#ready = undefined;
        throw e;
      },
    );
    return this.#ready;
  }

  async #init(): Promise<void> {
    const { node } = this.#o;
    const found = await this.#ds(async (ipam) => {
      // The allocator's own cached snapshot of pools (loaded once per agent, refreshed by the
      // allocator when a refusal needs proof): a node's start costs no pool listing.
      const pools = (ipam.cache.snapshot ?? (ipam.cache.snapshot = await loadSnapshot(ipam.store))).pools;
      const families = new Set<Family>();
      for (const p of pools) if (!p.disabled && !p.deleting && (!this.#o.pools || this.#o.pools.includes(p.name))) families.add(p.cidr.family);
      const handles = (await ipam.store.list(HANDLE_PREFIX + this.#warmHandlePrefix())).map((e) => e.key.slice(HANDLE_PREFIX.length));
      const held = new Map<string, HeldRow>();
      for (const h of handles) {
        for (const a of (await ipam.addressesOf(h)) ?? []) {
          held.set(formatAddr(a.addr), { addr: formatAddr(a.addr), family: a.addr.family, handle: h, prefixLen: a.prefixLen, gateway: formatAddr(a.gateway), freeAt: 0 });
        }
      }
      // The pod records written behind: evidence of which held addresses are in use.
      const records = (await ipam.store.list(this.#podRecordKey(''))).map((e) => decodePodRecord(e.key.slice(this.#podRecordKey('').length), e.value));
      return { families, held, records };
    });
    if (found.families.size === 0) throw new Error(this.#o.pools ? `none of the pools [${this.#o.pools.join(', ')}] exists and is enabled` : 'no enabled pool exists');
    const now = this.#now();
    // Reconcile: the datastore is the truth about what the node holds (plan-reconcile.ts).
    const deletes = this.#db.queuedDeletes();
    const released = new Set([...this.#pods.store.all().filter((r) => r.deletedAt !== undefined).map((r) => r.key), ...[...deletes].map((k) => k.slice(this.#podRecordKey('').length))]);
    const records = found.records.filter((r): r is PodRecord => !(r instanceof Error));
    for (const e of found.records) if (e instanceof Error) this.#log.warn({ node, error: e.message }, 'warm pool: a pod record in the datastore cannot be read; its addresses are not known to be free');
    const db = { held: this.#db.held(), pods: this.#db.pods(), quarantined: this.#db.quarantined(), refills: this.#db.refillIntents(), released };
    const plan = planReconcile(db, { held: found.held, records }, now, this.#o.cooldownMs);
    if (this.#db.fresh && found.held.size > 0) {
      this.#log.warn({ node, resourceDb: this.#db.path, held: found.held.size, podRecords: records.length }, 'warm pool: the resource DB is new but the datastore holds addresses for this node: the datastore\'s pod records decide which are in use');
    }
    this.#db.transaction(() => {
      if (plan.gone.length > 0) {
        this.#log.warn({ node, addrs: plan.gone }, 'warm pool: the datastore no longer holds these addresses for this node; dropped from the resource DB');
        this.#db.dropHeld(plan.gone);
        this.#db.unquarantine(plan.gone);
        this.#pods.store.unreserveAddrs(plan.gone);
        this.counters.droppedOnReconcile += plan.gone.length;
      }
      if (plan.forgotten.length > 0) {
        this.#log.info({ node, addrs: plan.forgotten.map((r) => r.addr) }, 'warm pool: addresses a refill put in the datastore before the resource DB recorded them join the idle queue after the cooldown');
        this.#db.addHeld(plan.forgotten);
        this.counters.adoptedOnReconcile += plan.forgotten.length;
      }
      for (const { pod, rows } of plan.adopt) {
        this.#log.warn({ node, pod: pod.key, addrs: pod.addrs }, 'warm pool: a pod the resource DB does not know has a record in the datastore: its addresses stay in use until its DEL or a GC');
        this.#db.addHeld(rows);
        this.#db.unquarantine(rows.map((r) => r.addr));
        this.#db.adoptPod(pod);
        const { namespace, name, uid } = pod;
        this.#pods.store.seen({ key: pod.key, network: pod.network, namespace, name, uid, containerId: pod.containerId, ifname: pod.ifname, ownerKind: undefined, sticky: false, poolKey: pod.key, addrs: pod.addrs, addedAt: pod.since });
      }
      if (plan.quarantine.length > 0) this.#db.quarantine(plan.quarantine, now);
      for (const key of plan.dropRecords) {
        this.#log.warn({ node, pod: key }, 'warm pool: a pod record names no address this node still holds; deleted');
        this.#db.removePod(key, [], now, this.#podRecordKey(key), now);
      }
      for (const c of plan.conflicts) this.#log.error({ node, pod: c.pod, addrs: c.addrs }, 'warm pool: a pod record in the datastore names an address another pod holds; kept, nothing released');
      for (const { pod, keep } of plan.dropPods) {
        this.#log.warn({ node, pod: pod.key, addrs: pod.addrs }, 'warm pool: a pod lost its address in the datastore; its record is dropped');
        this.#db.removePod(pod.key, keep, now + this.#o.cooldownMs, this.#podRecordKey(pod.key), now);
      }
      this.#db.clearRefillIntents();
    });
    const quarantined = this.#db.quarantined();
    this.#quarantined = quarantined.length;
    if (quarantined.length > 0) {
      this.#log.warn({ node, addrs: quarantined.map((r) => r.addr) }, 'warm pool: addresses the node holds that are not known to be free (no record of a pod, no refill of this resource DB): held out of the idle queue; release them with `podipam ipam release --ip` once no pod uses them');
    }
    const held = this.#db.held();
    const inUse = plan.inUse;
    const { inUseOf, reservedOf } = this.#restoreSticky(held, inUse, now);
    const pools = new Map<Family, WarmPool>();
    this.#meta.clear();
    for (const f of [4, 6] as Family[]) {
      if (!found.families.has(f) && !held.some((r) => r.family === f)) continue;
      const rows = held.filter((r) => r.family === f);
      const { entries: inUseRows, keys } = inUseOf(f);
      const reserved = reservedOf(f, keys);
      const taken = new Set([...inUseRows.map((e) => e.addr), ...reserved.map((e) => e.addr)]);
      const pool = WarmPool.restore(warmPoolConfig(this.#o, f), {
        idle: rows.filter((r) => !taken.has(r.addr)).map((r) => ({ addr: parseAddr(r.addr), freeAt: r.freeAt })),
        inUse: inUseRows.map((e) => ({ key: e.key, addr: parseAddr(e.addr), sticky: e.sticky })),
        reserved: reserved.map((e) => ({ key: e.key, addr: parseAddr(e.addr), expiresAt: e.expiresAt, freeAt: e.freeAt })),
      });
      pools.set(f, pool);
    }
    for (const r of this.#db.held()) this.#meta.set(r.addr, { handle: r.handle, prefixLen: r.prefixLen, gateway: parseAddr(r.gateway) });
    this.#pools = pools;
    this.#log.info({ node, families: [...pools.keys()], ...Object.fromEntries([...pools].map(([f, p]) => [`ipv${f}`, p.counts()])) }, 'warm pool ready');
    this.#isReady = true;
    await this.#refill(false).catch(() => undefined); // failures are logged and backed off
  }

  /**
   * The pool keys of the in-use addresses (a sticky pod's namespace/name key, from the pod
   * store) and the sticky reservations to rebuild. Pod-store rows whose pod the DB no longer
   * has are marked deleted; a pool key claimed twice (never written so) falls back to the
   * attachment key, not sticky; reservations of addresses not held or in use are dropped.
   */
  #restoreSticky(held: readonly HeldRow[], inUse: ReadonlyMap<string, string>, now: number) {
    const store = this.#pods.store;
    const podKeys = new Set(inUse.values());
    for (const r of store.live()) if (!podKeys.has(r.key)) store.deleted(r.key, now);
    const familyOf = new Map(held.map((r) => [r.addr, r.family] as const));
    const inUseOf = (f: Family): { entries: { key: string; addr: string; sticky: boolean }[]; keys: Set<string> } => {
      const keys = new Set<string>();
      const entries: { key: string; addr: string; sticky: boolean }[] = [];
      for (const [addr, attach] of inUse) {
        if (familyOf.get(addr) !== f) continue;
        let { poolKey, sticky } = this.#pods.poolKeyOf(attach);
        if (keys.has(poolKey)) {
          this.#log.warn({ poolKey, attachment: attach }, 'warm pool: a pool key is held twice in the resource DB; the attachment is no longer sticky');
          const r = store.get(attach);
          if (r) store.seen({ ...r, poolKey: attach, sticky: false });
          ({ poolKey, sticky } = { poolKey: attach, sticky: false });
        }
        keys.add(poolKey);
        entries.push({ key: poolKey, addr, sticky });
      }
      return { entries, keys };
    };
    const reservations = store.reservations().sort((x, y) => y.expiresAt - x.expiresAt); // a key's latest first
    const stale = reservations.filter((r) => !familyOf.has(r.addr) || inUse.has(r.addr)).map((r) => r.addr);
    if (stale.length > 0) store.unreserveAddrs(stale);
    const reservedOf = (f: Family, usedKeys: ReadonlySet<string>): { key: string; addr: string; expiresAt: number; freeAt: number }[] => {
      const seen = new Set<string>();
      const out: { key: string; addr: string; expiresAt: number; freeAt: number }[] = [];
      for (const r of reservations) {
        if (familyOf.get(r.addr) !== f || inUse.has(r.addr) || usedKeys.has(r.poolKey) || seen.has(r.poolKey)) continue;
        seen.add(r.poolKey);
        out.push({ key: r.poolKey, addr: r.addr, expiresAt: r.expiresAt, freeAt: r.freeAt });
      }
      return out;
    };
    return { inUseOf, reservedOf };
  }

  // ---- refill and return ----------------------------------------------------------------------

  /** One pod GC run now (what its loop does): purge the pod store; with a kubeconfig, list and release. */
  gcPods(): Promise<unknown> {
    return this.#pods.runOnce((keys, now) => Promise.resolve(this.#gcRelease(keys, now)));
  }

  /** One maintenance run now (what the timer does): refill to minIdle, return above maxIdle. */
  maintain(): Promise<void> {
    return this.#refill(false);
  }

  /**
   * Refills are batched: the timer tops the pools up to minIdle once per tick; only a pool that
   * fell to half of minIdle is topped up at once (one txn for the whole shortfall), so a burst
   * is not one refill per pod.
   */
  #lowWater(): void {
    const low = Math.ceil(this.#o.minIdle / 2);
    for (const p of this.#pools.values()) {
      const c = p.counts();
      if (c.idle + c.pending < low) return this.#kickSoon();
    }
  }

  #kickSoon(): void {
    if (!this.#isReady || this.#closed) return;
    setImmediate(() => void this.#refill(false).catch(() => undefined));
  }

  async #tick(): Promise<void> {
    if (this.#closed) return;
    if (!this.#isReady) {
      await this.#ensureReady().catch(() => undefined);
      return;
    }
    await this.#refill(false).catch(() => undefined);
  }

  /**
   * One maintenance run (or joins the one in flight, then runs again so a demand that came
   * meanwhile is served): plan each pool, take the addresses misses asked for and the refills
   * to minIdle in one txn per ≤32 per family, return the surplus in one txn. `urgent`: a miss
   * is waiting, ignore the back-off.
   */
  #refill(urgent: boolean): Promise<void> {
    if (this.#refillRun) {
      this.#again = true;
      // The run in flight loops once more for this demand; starting another run when it ends
      // would plan again before the waiters took their addresses, and return them as surplus.
      return this.#refillRun.then(() => this.#refillRun);
    }
    const run = (async () => {
      do {
        this.#again = false;
        if (this.#closed) break;
        if (!urgent && this.#now() < this.#backoffUntil) {
          // Misses waiting still give their tokens back so the pool's accounting stays true.
          this.#failDemand();
          break;
        }
        await this.#refillOnce();
      } while (this.#again);
    })().finally(() => {
      this.#refillRun = undefined;
    });
    this.#refillRun = run;
    return run;
  }

  #failDemand(): void {
    for (const [f, n] of this.#demand) this.#pools.get(f)?.refillFailed(n);
    this.#demand.clear();
  }

  async #refillOnce(): Promise<void> {
    const now = this.#now();
    const want = new Map<Family, number>();
    const returns: Addr[] = [];
    for (const [f, pool] of this.#pools) {
      const p = pool.plan(now);
      const n = p.refill + (this.#demand.get(f) ?? 0);
      if (n > 0) want.set(f, n);
      // Addresses refilled for waiting ADDs are idle until those take them: not surplus.
      if (this.#waiters > 0) pool.returnFailed(p.returns);
      else returns.push(...p.returns);
    }
    this.#demand.clear();
    let failed = false;
    // Refills: up to 32 per family per txn, both families in one txn.
    while ([...want.values()].some((n) => n > 0)) {
      const take = new Map([...want].map(([f, n]) => [f, Math.min(n, MAX_ADDRESSES_PER_REQUEST)] as const).filter(([, n]) => n > 0));
      for (const [f, n] of take) want.set(f, want.get(f)! - n);
      if (failed) {
        for (const [f, n] of take) this.#pools.get(f)!.refillFailed(n);
        continue;
      }
      const handle = `${this.#warmHandlePrefix()}${this.#refillId()}`;
      try {
        // Before the datastore's txn: a restart finding the handle there but not here knows its addresses were never handed out.
        this.#db.refillIntent(handle, this.#now());
        const got = await this.#ds((ipam) =>
          ipam.assign({ node: this.#o.node, handle, attrs: { network: WARM_NETWORK, containerId: this.#o.node, ifname: 'warm' }, auto: { 4: take.get(4) ?? 0, 6: take.get(6) ?? 0 }, ...(this.#o.pools ? { pools: this.#o.pools } : {}) }),
        );
        crashPoint('agent.refill.committed');
        this.counters.refillTxns++;
        this.counters.refilled += got.length;
        const t = this.#now();
        this.#db.addHeld(got.map((a) => ({ addr: formatAddr(a.addr), family: a.addr.family, handle, prefixLen: a.prefixLen, gateway: formatAddr(a.gateway), freeAt: t })), handle);
        crashPoint('agent.refill.recorded');
        for (const a of got) this.#meta.set(formatAddr(a.addr), { handle, prefixLen: a.prefixLen, gateway: a.gateway });
        for (const [f, n] of take) {
          const mine = got.filter((a) => a.addr.family === f).map((a) => a.addr);
          this.#pools.get(f)!.refilled(mine, t);
          if (mine.length < n) this.#pools.get(f)!.refillFailed(n - mine.length);
        }
        this.#succeeded();
      } catch (e) {
        failed = true;
        for (const [f, n] of take) this.#pools.get(f)!.refillFailed(n);
        this.#failed('refill', e);
      }
    }
    if (returns.length === 0) return;
    for (let i = 0; i < returns.length; i += MAX_ADDRESSES_PER_REQUEST) {
      const chunk = returns.slice(i, i + MAX_ADDRESSES_PER_REQUEST);
      const byFamily = (f: Family): Addr[] => chunk.filter((a) => a.family === f);
      if (failed) {
        for (const [f, pool] of this.#pools) pool.returnFailed(byFamily(f));
        continue;
      }
      try {
        // Only while the node's warm handle still holds each address: one freed behind the
        // agent's back and handed to another pod meanwhile is not the agent's to free.
        const holders = new Set(chunk.flatMap((a) => this.#meta.get(formatAddr(a))?.handle ?? []));
        const freed = await this.#ds((ipam) => ipam.releaseAddresses(chunk, holders));
        if (freed.length < chunk.length) {
          this.#log.warn({ returned: chunk.length, freed: freed.length }, 'warm pool: some returned addresses were no longer held by this node\'s warm handles (left to their holder)');
        }
        crashPoint('agent.return.committed');
        this.counters.returnTxns++;
        this.counters.returned += chunk.length;
        const texts = chunk.map(formatAddr);
        this.#db.dropHeld(texts);
        for (const a of texts) this.#meta.delete(a);
        for (const [f, pool] of this.#pools) pool.returned(byFamily(f));
        this.#succeeded();
      } catch (e) {
        failed = true;
        for (const [f, pool] of this.#pools) pool.returnFailed(byFamily(f));
        this.#failed('return', e);
      }
    }
  }

  #succeeded(): void {
    this.#backoffMs = 0;
    this.#backoffUntil = 0;
    this.#lastError = undefined;
    this.#lastFailure = undefined;
  }

  #failed(what: string, e: unknown): void {
    this.#backoffMs = Math.min(BACKOFF_MAX_MS, this.#backoffMs === 0 ? 500 : this.#backoffMs * 2);
    this.#backoffUntil = this.#now() + this.#backoffMs;
    this.#lastError = (e as Error).message;
    this.#lastFailure = e;
    this.#log.warn({ node: this.#o.node, error: this.#lastError, backoffMs: this.#backoffMs }, `warm pool ${what} failed; backing off`);
  }

  // ---- write-behind -------------------------------------------------------------------------------

  /**
   * Writes the queued pod records, WRITE_BATCH per txn, until the queue is empty or a write
   * fails. While a flush is in flight (the timer's), a call waits for it and then flushes once
   * more, so what was queued before the call is written (or failed) when it resolves.
   */
  flushWrites(): Promise<void> {
    if (this.#flushRun) {
      this.#flushAgain ??= this.#flushRun.then(() => {
        this.#flushAgain = undefined;
        return this.flushWrites();
      });
      return this.#flushAgain;
    }
    const run = this.#flushOnce().finally(() => {
      this.#flushRun = undefined;
    });
    this.#flushRun = run;
    return run;
  }

  async #flushOnce(): Promise<void> {
    for (let i = 0; i < 1000; i++) {
      const batch = this.#db.pendingWrites(WRITE_BATCH);
      if (batch.length === 0) return;
      const last = new Map<string, string | undefined>();
      for (const w of batch) last.set(w.key, w.value);
      const ops = [...last].map(([key, value]) => (value === undefined ? { type: 'delete' as const, key } : { type: 'put' as const, key, value }));
      try {
        await this.#ds((ipam) => ipam.store.txn([], ops));
      } catch (e) {
        this.#lastError = (e as Error).message;
        return;
      }
      crashPoint('agent.writebehind.committed');
      this.counters.writeTxns++;
      this.#db.writesDone(batch[batch.length - 1]!.seq);
    }
  }

  // ---- helpers ----------------------------------------------------------------------------------

  #ds<T>(fn: (ipam: ClusterIpam) => Promise<T>): Promise<T> {
    return this.#cluster.run(this.#o.datastore, this.#o.node, fn);
  }

  #warmHandlePrefix(): string {
    return warmHandlePrefix(this.#o.node);
  }

  #refillId(): string {
    return `${this.#now().toString(36)}-${process.pid.toString(36)}-${(++this.#refillSeq).toString(36)}`;
  }

  #podRecordKey(key: string): string {
    return podRecordKey(this.#o.node, key);
  }

  #ipConfig(a: string): { address: string; gateway: string } {
    const m = this.#meta.get(a);
    if (!m) throw new Error(`warm pool: no block information for ${a}`);
    return { address: `${a}/${m.prefixLen}`, gateway: formatAddr(m.gateway) };
  }
}

/** The attachment's key (its would-be cluster handle); an invalid-config failure when too long. */
function podKey(req: WarmRequest, node: string): string {
  const h = cniHandleId(req.network, req.containerId, req.ifname);
  if (h.length > MAX_HANDLE_LENGTH) throw new WarmError('invalid-config', node, `network name, container id and interface name make a key of ${h.length} characters: at most ${MAX_HANDLE_LENGTH}`);
  return h;
}

/** A pod record's value (`agent-pods/NODE/KEY`, written by add()), or the Error saying why it is not one. */
function decodePodRecord(key: string, value: string): PodRecord | Error {
  try {
    const v = JSON.parse(value) as Record<string, unknown>;
    const str = (k: string): string | undefined => (typeof v[k] === 'string' ? (v[k] as string) : undefined);
    const addrs = v.addrs;
    if (!Array.isArray(addrs) || !addrs.every((a) => typeof a === 'string')) throw new Error('"addrs" is not a list of addresses');
    const since = Date.parse(str('since') ?? '');
    return { key, network: str('network') ?? '', containerId: str('containerId') ?? '', ifname: str('ifname') ?? '', addrs: addrs as string[], since: Number.isNaN(since) ? 0 : since, namespace: str('namespace'), name: str('name'), uid: str('uid') };
  } catch (e) {
    return new Error(`pod record of ${key}: ${(e as Error).message}`);
  }
}
