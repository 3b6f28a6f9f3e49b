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
 * datastore's warm handles of this node: addresses the datastore holds that the DB forgot
 * become idle after the cooldown; DB entries the datastore no longer holds are dropped (log).
 *
 * Sticky reservations (StatefulSets) need to know the pod's owner (issue 11 item 4): every
 * acquire here is non-sticky, so `stickyFor` is validated and kept but has no effect yet.
 */
import { CniCode, CniError } from '../cni/errors.js';
import { goField } from '../cni/go-decode.js';
import type { Attachment, IpamBackend, IpamRequest, IpamResult, NetConf } from '../cni/ipam-backend.js';
import { WarmPool, type WarmPoolConfig } from '../alloc/warm-pool.js';
import { MAX_ADDRESSES_PER_REQUEST } from '../cluster/assign.js';
import type { ClusterIpam } from '../cluster/cluster-ipam.js';
import { cniErrorOf } from '../cluster/cni-error-of.js';
import { loadSnapshot } from '../cluster/cluster-snapshot.js';
import { HANDLE_PREFIX } from '../cluster/keys.js';
import { cniHandleId, MAX_HANDLE_LENGTH } from '../cluster/handle-id.js';
import type { ClusterServices } from './cluster-services.js';
import { type Addr, type Family, formatAddr, parseAddr } from '../ip/index.js';
import { planReconcile } from './plan-reconcile.js';
import { type HeldRow, ResourceDb } from './resource-db.js';

/** The network name of every warm handle: a CNI network of this name must not use the cluster back end. */
export const WARM_NETWORK = 'podipam-warm';
/** Datastore prefix of the pod records written behind. */
export const POD_RECORD_PREFIX = 'agent-pods/';
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
  /** Maintenance period (tests shorten it). */
  readonly tickMs?: number;
  readonly writeDelayMs?: number;
  readonly now?: () => number;
  readonly log?: (level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void;
}

export interface WarmStatus {
  readonly families: readonly Family[];
  readonly ready: boolean;
  readonly minIdle: number;
  readonly maxIdle: number;
  readonly capacity: number;
  readonly cooldownMs: number;
  /** Per family: idle, in use, returning, pending refills, tokens. */
  readonly pools: Record<string, { idle: number; inUse: number; returning: number; pending: number; tokens: number }>;
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

export class WarmService implements IpamBackend {
  readonly #o: WarmOptions;
  readonly #cluster: ClusterServices;
  readonly #db: ResourceDb;
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

  constructor(o: WarmOptions, cluster: ClusterServices) {
    warmPoolConfig(o, 4);
    this.#o = o;
    this.#cluster = cluster;
    this.#now = o.now ?? Date.now;
    this.#db = new ResourceDb(o.dataDir);
  }

  /** Rebuilds, reconciles and preloads (errors logged: retried by the timer and the first call), then starts the timers. */
  async start(): Promise<void> {
    await this.#ensureReady().catch((e: Error) => this.#o.log?.('warn', 'warm pool not ready yet', { error: e.message }));
    this.#timer = setInterval(() => void this.#tick(), this.#o.tickMs ?? TICK_MS);
    this.#timer.unref();
    this.#writeTimer = setInterval(() => void this.flushWrites(), this.#o.writeDelayMs ?? WRITE_DELAY_MS);
    this.#writeTimer.unref();
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
    clearInterval(this.#writeTimer);
    await this.#refillRun?.catch(() => undefined);
    await this.flushWrites().catch(() => undefined);
    this.#db.close();
  }

  // ---- CNI verbs -------------------------------------------------------------------------

  async add(req: IpamRequest): Promise<IpamResult> {
    const routes = checkConf(req.conf);
    await this.#readyOr11();
    const key = podKey(req);
    for (let attempt = 0; attempt < 16; attempt++) {
      const now = this.#now();
      const got: [Family, Addr][] = [];
      let missed: Family | undefined;
      let retryAt: number | undefined;
      let full = false;
      let fresh = false;
      for (const [f, pool] of this.#pools) {
        const r = pool.acquire(key, now);
        if (r.kind === 'hit') {
          got.push([f, r.addr]);
          if (r.from !== 'again') fresh = true;
          continue;
        }
        missed ??= f;
        if (r.refill) this.#demand.set(f, (this.#demand.get(f) ?? 0) + 1);
        else ((full = true), (retryAt = r.retryAt));
      }
      if (missed === undefined) {
        const texts = got.map(([, a]) => formatAddr(a));
        if (fresh) {
          try {
            this.#db.addPod(
              { key, network: req.conf.name, containerId: req.containerId, ifname: req.ifname, addrs: texts, since: now },
              { key: this.#podRecordKey(key), value: JSON.stringify({ network: req.conf.name, containerId: req.containerId, ifname: req.ifname, addrs: texts, warmHandles: texts.map((a) => this.#meta.get(a)?.handle), since: new Date(now).toISOString() }) },
            );
          } catch (e) {
            for (const [f] of got) this.#pools.get(f)!.cancel(key, now);
            throw new CniError(CniCode.IoFailure, `resource DB ${this.#db.path}: ${(e as Error).message}`);
          }
          this.counters.hits += attempt === 0 ? 1 : 0;
        }
        this.#lowWater();
        return { ips: texts.map((a) => this.#ipConfig(a)), ...(routes ? { routes } : {}) };
      }
      // Both or neither: what this attempt took goes back where it was.
      for (const [f] of got) this.#pools.get(f)!.cancel(key, now);
      if (attempt === 0) this.counters.misses++;
      if (full) {
        const wait = retryAt === undefined ? undefined : retryAt - now;
        throw new CniError(CniCode.TryAgainLater, `warm pool of IPv${missed} on node ${this.#o.node} is at capacity ${this.#o.capacity}${wait !== undefined ? `: the next address is free in ${Math.max(0, Math.ceil(wait / 1000))} s` : ''}`);
      }
      this.#waiters++;
      try {
        await this.#refill(true);
      } finally {
        this.#waiters--;
      }
      if (this.#lastFailure !== undefined && this.#backoffUntil > this.#now() && this.#pools.get(missed)!.counts().idle === 0) {
        throw cniErrorOf(this.#lastFailure, 'ADD');
      }
    }
    throw new CniError(CniCode.TryAgainLater, `warm pool on node ${this.#o.node}: no address after repeated refills`);
  }

  async del(req: IpamRequest): Promise<void> {
    checkConf(req.conf);
    await this.#readyOr11();
    const key = podKey(req);
    const now = this.#now();
    const addrs: string[] = [];
    for (const pool of this.#pools.values()) {
      const a = pool.release(key, now);
      if (a) addrs.push(formatAddr(a));
    }
    if (addrs.length === 0 && !this.#db.hasPod(key)) return;
    this.#db.removePod(key, addrs, now + this.#o.cooldownMs, this.#podRecordKey(key), now);
  }

  async check(req: IpamRequest): Promise<void> {
    checkConf(req.conf);
    await this.#readyOr11();
    const key = podKey(req);
    const held = [...this.#pools.values()].map((p) => p.addressOf(key)).filter((a): a is Addr => a !== undefined);
    if (held.length === 0) throw new CniError(CniCode.NotFound, `attachment ${JSON.stringify(key)} holds no warm-pool address on node ${this.#o.node}`);
    const prev = req.conf.prevResult as { ips?: { address?: unknown }[] } | undefined;
    for (const ip of Array.isArray(prev?.ips) ? prev.ips : []) {
      const want = typeof ip?.address === 'string' ? ip.address.split('/')[0] : undefined;
      if (want !== undefined && !held.some((a) => formatAddr(a) === want)) {
        throw new CniError(CniCode.NotFound, `attachment ${JSON.stringify(key)} does not hold ${want} (it holds ${held.map(formatAddr).join(', ')})`);
      }
    }
  }

  async gc(conf: NetConf, valid: readonly Attachment[]): Promise<void> {
    checkConf(conf);
    await this.#readyOr11();
    const keep = new Set(valid.map((a) => cniHandleId(conf.name, a.containerId, a.ifname)));
    for (const p of this.#db.pods()) {
      if (p.network === conf.name && !keep.has(p.key)) await this.del({ containerId: p.containerId, ifname: p.ifname, cniArgs: new Map(), conf });
    }
  }

  async status(): Promise<void> {
    try {
      await this.#ensureReady();
    } catch (e) {
      throw new CniError(CniCode.NotAvailable, `warm pool on node ${this.#o.node} not ready: ${(e as Error).message}`);
    }
  }

  /** The warm pool's state and counters, for `podipam agent status`. */
  report(): WarmStatus {
    const pools: WarmStatus['pools'] = {};
    for (const [f, p] of this.#pools) {
      const c = p.counts();
      pools[`ipv${f}`] = { idle: c.idle, inUse: c.inUse, returning: c.returning, pending: c.pending, tokens: c.tokens };
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
      ...this.counters,
      writeBehindDepth: w.depth,
      writeBehindAgeMs: w.oldestAt === undefined ? 0 : Math.max(0, this.#now() - w.oldestAt),
      lastError: this.#lastError,
    };
  }

  // ---- start: rebuild and reconcile ----------------------------------------------------------

  async #readyOr11(): Promise<void> {
    try {
      await this.#ensureReady();
    } catch (e) {
      throw new CniError(CniCode.TryAgainLater, `warm pool on node ${this.#o.node} not ready: ${(e as Error).message}`);
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
      return { families, held };
    });
    if (found.families.size === 0) throw new Error(this.#o.pools ? `none of the pools [${this.#o.pools.join(', ')}] exists and is enabled` : 'no enabled pool exists');
    const now = this.#now();
    // Reconcile: the datastore is the truth about what the node holds (plan-reconcile.ts).
    const plan = planReconcile({ held: this.#db.held(), pods: this.#db.pods() }, found.held, now, this.#o.cooldownMs);
    if (plan.gone.length > 0) {
      this.#o.log?.('warn', 'warm pool: the datastore no longer holds these addresses for this node; dropped from the resource DB', { node, addrs: plan.gone });
      this.#db.dropHeld(plan.gone);
      this.counters.droppedOnReconcile += plan.gone.length;
    }
    if (plan.forgotten.length > 0) {
      this.#o.log?.('info', 'warm pool: addresses held in the datastore but not in the resource DB join the idle queue after the cooldown', { node, addrs: plan.forgotten.map((r) => r.addr) });
      this.#db.addHeld(plan.forgotten);
      this.counters.adoptedOnReconcile += plan.forgotten.length;
    }
    for (const { pod, keep } of plan.dropPods) {
      this.#o.log?.('warn', 'warm pool: a pod lost its address in the datastore; its record is dropped', { node, pod: pod.key, addrs: pod.addrs });
      this.#db.removePod(pod.key, keep, now + this.#o.cooldownMs, this.#podRecordKey(pod.key), now);
    }
    const held = this.#db.held();
    const inUse = plan.inUse;
    const pools = new Map<Family, WarmPool>();
    this.#meta.clear();
    for (const f of [4, 6] as Family[]) {
      if (!found.families.has(f) && !held.some((r) => r.family === f)) continue;
      const rows = held.filter((r) => r.family === f);
      const pool = WarmPool.restore(warmPoolConfig(this.#o, f), {
        idle: rows.filter((r) => !inUse.has(r.addr)).map((r) => ({ addr: parseAddr(r.addr), freeAt: r.freeAt })),
        inUse: rows.filter((r) => inUse.has(r.addr)).map((r) => ({ key: inUse.get(r.addr)!, addr: parseAddr(r.addr), sticky: false })),
        reserved: [],
      });
      pools.set(f, pool);
    }
    for (const r of this.#db.held()) this.#meta.set(r.addr, { handle: r.handle, prefixLen: r.prefixLen, gateway: parseAddr(r.gateway) });
    this.#pools = pools;
    this.#o.log?.('info', 'warm pool ready', { node, families: [...pools.keys()], ...Object.fromEntries([...pools].map(([f, p]) => [`ipv${f}`, p.counts()])) });
    this.#isReady = true;
    await this.#refill(false).catch(() => undefined); // failures are logged and backed off
  }

  // ---- refill and return ----------------------------------------------------------------------

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
        const got = await this.#ds((ipam) =>
          ipam.assign({ node: this.#o.node, handle, attrs: { network: WARM_NETWORK, containerId: this.#o.node, ifname: 'warm' }, auto: { 4: take.get(4) ?? 0, 6: take.get(6) ?? 0 }, ...(this.#o.pools ? { pools: this.#o.pools } : {}) }),
        );
        this.counters.refillTxns++;
        this.counters.refilled += got.length;
        const t = this.#now();
        this.#db.addHeld(got.map((a) => ({ addr: formatAddr(a.addr), family: a.addr.family, handle, prefixLen: a.prefixLen, gateway: formatAddr(a.gateway), freeAt: t })));
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
        await this.#ds((ipam) => ipam.releaseAddresses(chunk));
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
    this.#o.log?.('warn', `warm pool ${what} failed; backing off`, { node: this.#o.node, error: this.#lastError, backoffMs: this.#backoffMs });
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
      this.counters.writeTxns++;
      this.#db.writesDone(batch[batch.length - 1]!.seq);
    }
  }

  // ---- helpers ----------------------------------------------------------------------------------

  #ds<T>(fn: (ipam: ClusterIpam) => Promise<T>): Promise<T> {
    return this.#cluster.run(this.#o.datastore, this.#o.node, fn);
  }

  #warmHandlePrefix(): string {
    return cniHandleId(WARM_NETWORK, this.#o.node, '');
  }

  #refillId(): string {
    return `${this.#now().toString(36)}-${process.pid.toString(36)}-${(++this.#refillSeq).toString(36)}`;
  }

  #podRecordKey(key: string): string {
    return `${POD_RECORD_PREFIX}${this.#o.node}/${key}`;
  }

  #ipConfig(a: string): { address: string; gateway: string } {
    const m = this.#meta.get(a);
    if (!m) throw new CniError(CniCode.Internal, `warm pool: no block information for ${a}`);
    return { address: `${a}/${m.prefixLen}`, gateway: formatAddr(m.gateway) };
  }
}

/** The attachment's key (its would-be cluster handle); code 7 when too long. */
function podKey(req: IpamRequest): string {
  const h = cniHandleId(req.conf.name, req.containerId, req.ifname);
  if (h.length > MAX_HANDLE_LENGTH) throw new CniError(CniCode.InvalidConfig, `network name, container id and interface name make a key of ${h.length} characters: at most ${MAX_HANDLE_LENGTH}`);
  return h;
}

const KNOWN = ['type', 'agent', 'routes'];

/** The warm back end's ipam keys (type, agent, routes); returns the routes. Code 7 otherwise. */
function checkConf(conf: NetConf): IpamResult['routes'] {
  for (const k of Object.keys(conf.ipam)) {
    if (!KNOWN.includes(k.toLowerCase())) throw new CniError(CniCode.InvalidConfig, `ipam.${k} ${JSON.stringify(conf.ipam[k])}: unknown key for the agent's warm-pool back end (known: ${KNOWN.join(', ')})`);
  }
  if (conf.name === WARM_NETWORK) throw new CniError(CniCode.InvalidConfig, `name ${JSON.stringify(conf.name)}: reserved for the agent's warm handles`);
  const routes = goField(conf.ipam, 'routes');
  if (routes === undefined) return undefined;
  if (!Array.isArray(routes) || !routes.every((r) => typeof r === 'object' && r !== null && typeof (r as { dst?: unknown }).dst === 'string')) {
    throw new CniError(CniCode.InvalidConfig, `ipam.routes ${JSON.stringify(routes)}: must be a list of {"dst": CIDR, "gw"?: IP}`);
  }
  return routes as IpamResult['routes'];
}
