/**
 * The warm pool's refills and returns: refills (WarmPool.plan, a miss) are one `assign` of up
 * to MAX_ADDRESSES_PER_REQUEST addresses per family to a fresh warm handle — both families in
 * one txn; returns are one `releaseAddresses` of every surplus address; both back off
 * (doubling, to BACKOFF_MAX_MS) on failure. A maintenance loop (Periodic, every tickMs) tops
 * the pools up to minIdle and returns above maxIdle; until the pools are restored it retries
 * the restore instead. The view (pools, reservations, the node's labels) is read at each config
 * change by the watch (warm-trust.ts) and every poolViewMs by the loop (the watch may be down):
 * idle addresses no pod of the node may be given now are withdrawn (WarmPool.withdraw, here and
 * synchronously before every ADD's acquire) and go back in the same return txn as the surplus;
 * ones the datastore no longer gives the node are forgotten (WarmPool.forget). Refills never
 * come from such a pool (assign skips it). A refill or return whose answer was lost is settled
 * by a re-read before the next plan (warm-unknown.ts). Each view also carries the pools'
 * reuseAfter, which the pools apply at once to addresses the node's pods released
 * (WarmPool.setReuseAfter): no read on the ADD path.
 */
import { crashPoint } from '../util/crash-point.js';
import { Periodic } from '../util/periodic.js';
import { MAX_ADDRESSES_PER_REQUEST } from '../cluster/txn/index.js';
import { type Addr, type Family, formatAddr, formatPrefix, parseAddr } from '../ip/index.js';
import { BACKOFF_MAX_MS, POOL_VIEW_MS, TICK_MS } from './warm-options.js';
import { WARM_NETWORK } from './warm-handle.js';
import type { WarmState } from './warm-state.js';
import { unusableAddrs } from './unusable-addrs.js';
import { type Pool, poolSpace, reuseAfterOfAddr } from '../cluster/records/index.js';
import { WarmUnknown } from './warm-unknown.js';
import { addUsableFamilies } from './warm-families.js';

export class WarmRefiller {
  readonly #s: WarmState;
  readonly #ensureReady: () => Promise<void>;
  #loop: Periodic | undefined;
  #refillRun: Promise<void> | undefined;
  #again = false;
  readonly #demand = new Map<Family, number>();
  #backoffUntil = 0;
  #backoffMs = 0;
  #lastFailure: Error | undefined;
  #refillSeq = 0;
  /** ADDs waiting for a refill: while there are any, nothing idle is returned as surplus. */
  #waiters = 0;
  /** Addresses withdrawn (their pool is not usable) and not yet in a return txn. */
  #withdrawn: Addr[] = [];
  /** The pools' reuseAfter last applied to the pools (setReuseAfter), as `space=ms` pairs. */
  #reuseAfterKey: string | undefined;
  readonly counters = { refillTxns: 0, refilled: 0, returnTxns: 0, returned: 0 };
  /** Refills and returns whose answer was lost: settled by a re-read at the next run (warm-unknown.ts). */
  readonly unknown: WarmUnknown;

  /** `ensureReady`: the restore (warm-restore.ts) the loop retries until the pools are ready. */
  constructor(state: WarmState, ensureReady: () => Promise<void>) {
    this.#s = state;
    this.#ensureReady = ensureReady;
    this.unknown = new WarmUnknown(state);
  }

  /** Starts the maintenance loop. */
  start(): void {
    this.#loop = new Periodic({ name: 'warm pool maintenance', intervalMs: this.#s.o.tickMs ?? TICK_MS, task: () => this.#tick(), log: this.#s.log });
    this.#loop.start();
  }

  /** Stops the loop (its timer at once; a run under way sees `closed` and ends) and waits for a refill in flight. */
  async stop(): Promise<void> {
    void this.#loop?.stop();
    await this.#refillRun?.catch(() => undefined);
  }

  /** One maintenance run now (what the loop does): refill to minIdle, return above maxIdle. */
  maintain(): Promise<void> {
    return this.refill(false);
  }

  /**
   * Withdraws the idle addresses of unusable pools (as of the last pool view) from every
   * family's pool; synchronous, no I/O: the ADD path calls it before acquiring, with the same
   * `now`. What it takes goes back in the next maintenance run's return txn (started soon).
   */
  withdraw(now: number): void {
    this.#forgetGone(now);
    if (this.#take(now) > 0) this.#kickSoon();
  }

  /** Idle and reserved addresses the datastore no longer gives to this node leave the pools and the resource DB. */
  #forgetGone(now: number): void {
    const s = this.#s;
    if (s.gone.size === 0) return;
    const out: string[] = [];
    for (const pool of s.pools.values()) out.push(...pool.forget((a) => s.gone.has(formatAddr(a)), now).map(formatAddr));
    if (out.length > 0) {
      s.db.dropHeld(out);
      s.pods.store.unreserveAddrs(out);
      for (const a of out) s.meta.delete(a);
      s.log.warn(
        { node: s.node, addrs: out },
        "warm pool: addresses the datastore no longer gives to this node's warm handles are dropped from the idle queue",
      );
    }
    // Forgotten, or returned meanwhile: nothing left to watch for.
    for (const a of s.gone) if (!s.meta.has(a)) s.gone.delete(a);
  }

  #take(now: number): number {
    const pred = this.#s.unusable;
    if (pred === undefined) return 0;
    let n = 0;
    for (const pool of this.#s.pools.values()) {
      const w = pool.withdraw(pred, now);
      n += w.length;
      this.#withdrawn.push(...w);
    }
    return n;
  }

  /**
   * Reads the view (pools, reservations, the node's labels: one batched read, the pool list
   * reloaded only when the config generation changed) and which held addresses are now unusable;
   * withdraws those idle at once.
   */
  async refreshPools(): Promise<void> {
    const s = this.#s;
    const view = await s.ds((ipam) => ipam.warmView(s.o.node));
    s.view = view;
    if (s.isReady) addUsableFamilies(s, s.sizing, view.pools);
    this.#applyReuseAfter(view.pools);
    const was = s.unusable !== undefined;
    this.recheck();
    if ((s.unusable !== undefined) !== was) {
      s.log.info(
        { node: s.o.node, configRev: view.configRev, unusable: s.unusable !== undefined },
        s.unusable
          ? 'warm pool: the node holds addresses no pod of it may be given now (reserved, in no usable pool selecting this node): idle ones are returned'
          : 'warm pool: every address the node holds may be handed out again',
      );
    }
    this.withdraw(s.now());
    // Only now is the generation applied: the holder view names it (the agent's answer that the
    // change is in force, warm-view-publisher.ts), sent at once — after a change, not the first
    // generation a start applies (that one goes out with the write-behind's next flush).
    const changed = s.poolsRev !== undefined && s.poolsRev !== view.configRev;
    s.poolsRev = view.configRev;
    if (changed) s.onGeneration?.();
  }

  /**
   * A pod's DEL gives its address back to this node's idle queue, not to the datastore (whose
   * blocks record the cluster's quarantine): the pools apply the pools' reuseAfter themselves,
   * from this view (a change applies at once, to addresses released before it too).
   */
  #applyReuseAfter(pools: readonly Pool[]): void {
    const key = pools
      .filter((p) => p.reuseAfterMs > 0)
      .map((p) => `${formatPrefix(poolSpace(p))}=${p.reuseAfterMs}`)
      .join(',');
    if (key === this.#reuseAfterKey) return;
    this.#reuseAfterKey = key;
    const of = reuseAfterOfAddr(pools);
    for (const pool of this.#s.pools.values()) pool.setReuseAfter(of);
  }

  /** Recomputes `unusable` from the last view against what the node holds now. */
  recheck(): void {
    const s = this.#s;
    if (s.view === undefined) return;
    s.unusable = unusableAddrs(s.view, [...s.meta.keys()].map(parseAddr));
  }

  /** A miss of family `f` asks for one more address in the next refill. */
  demand(f: Family): void {
    this.#demand.set(f, (this.#demand.get(f) ?? 0) + 1);
  }

  /**
   * An ADD that missed in `missed` waits for an urgent refill (nothing idle is returned as
   * surplus meanwhile); throws the last refill failure when backing off with none idle.
   */
  async waitForRefill(missed: Family): Promise<void> {
    this.#waiters++;
    try {
      await this.refill(true);
    } finally {
      this.#waiters--;
    }
    if (this.#lastFailure !== undefined && this.#backoffUntil > this.#s.now() && this.#s.pools.get(missed)!.counts().idle === 0) {
      throw this.#lastFailure;
    }
  }

  /**
   * Refills are batched: the loop tops the pools up to minIdle once per tick; only a pool that
   * fell to half of minIdle is topped up at once (one txn for the whole shortfall), so a burst
   * is not one refill per pod.
   */
  lowWater(): void {
    const low = Math.ceil(this.#s.o.minIdle / 2);
    for (const p of this.#s.pools.values()) {
      const c = p.counts();
      if (c.idle + c.pending < low) return this.#kickSoon();
    }
  }

  #kickSoon(): void {
    if (!this.#s.isReady || this.#s.closed) return;
    setImmediate(() => void this.refill(false).catch(() => undefined));
  }

  /** When the pool view was last read (ms, s.now()); -Infinity: at the first tick. */
  #poolViewAt = -Infinity;

  async #tick(): Promise<void> {
    if (this.#s.closed) return;
    if (!this.#s.isReady) {
      await this.#ensureReady().catch(() => undefined);
      return;
    }
    // A failed read keeps the last view; the refill's own failure (if any) backs off.
    const now = this.#s.now();
    if (now - this.#poolViewAt >= (this.#s.o.poolViewMs ?? POOL_VIEW_MS)) {
      this.#poolViewAt = now;
      await this.refreshPools().catch((e: unknown) =>
        this.#s.log.debug({ node: this.#s.o.node, error: (e as Error).message }, 'warm pool: pool view not refreshed'),
      );
    }
    await this.refill(false).catch(() => undefined);
  }

  /**
   * One maintenance run (or joins the one in flight, then runs again so a demand that came
   * meanwhile is served): plan each pool, take the addresses misses asked for and the refills
   * to minIdle in one txn per ≤32 per family, return the surplus in one txn. `urgent`: a miss
   * is waiting, ignore the back-off.
   */
  refill(urgent: boolean): Promise<void> {
    if (this.#refillRun) {
      this.#again = true;
      // The run in flight loops once more for this demand; starting another run when it ends
      // would plan again before the waiters took their addresses, and return them as surplus.
      return this.#refillRun.then(() => this.#refillRun);
    }
    const run = (async () => {
      do {
        this.#again = false;
        if (this.#s.closed) break;
        if (!urgent && this.#s.now() < this.#backoffUntil) {
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
    for (const [f, n] of this.#demand) this.#s.pools.get(f)?.refillFailed(n);
    this.#demand.clear();
  }

  async #refillOnce(): Promise<void> {
    const s = this.#s;
    // Outcomes in doubt first: a re-read decides which addresses are still the node's.
    const recovered = this.unknown.counters.settledRecovered;
    await this.unknown
      .settle()
      .catch((e: unknown) =>
        s.log.warn(
          { node: s.o.node, inDoubt: this.unknown.pending, error: (e as Error).message },
          'warm pool: refills or returns whose answer was lost are not settled yet (their addresses stay out of the idle queue)',
        ),
      );
    // A refill that landed before a reservation (or drain…) with its answer lost brings addresses
    // the view may rule out: judged before any ADD can run (no await from here to the #take below).
    if (this.unknown.counters.settledRecovered !== recovered) this.recheck();
    const now = s.now();
    const want = new Map<Family, number>();
    const returns: Addr[] = [];
    for (const [f, pool] of s.pools) {
      const p = pool.plan(now);
      const n = p.refill + (this.#demand.get(f) ?? 0);
      if (n > 0) want.set(f, n);
      // Addresses refilled for waiting ADDs are idle until those take them: not surplus.
      if (this.#waiters > 0) pool.returnFailed(p.returns);
      else returns.push(...p.returns);
    }
    this.#demand.clear();
    // Withdrawn addresses go back even while ADDs wait: none of them may have one.
    this.#take(now);
    returns.push(...this.#withdrawn.splice(0));
    let failed = false;
    // Refills: up to 32 per family per txn, both families in one txn.
    while ([...want.values()].some((n) => n > 0)) {
      const take = new Map([...want].map(([f, n]) => [f, Math.min(n, MAX_ADDRESSES_PER_REQUEST)] as const).filter(([, n]) => n > 0));
      for (const [f, n] of take) want.set(f, want.get(f)! - n);
      if (failed) {
        for (const [f, n] of take) s.pools.get(f)!.refillFailed(n);
        continue;
      }
      const handle = `${s.warmHandlePrefix()}${this.#refillId()}`;
      try {
        // Before the datastore's txn: a restart finding the handle there but not here knows its addresses were never handed out.
        s.db.refillIntent(handle, s.now());
        const got = await s.ds((ipam) =>
          ipam.assign({
            node: s.o.node,
            handle,
            attrs: { network: WARM_NETWORK, containerId: s.o.node, ifname: 'warm' },
            auto: { 4: take.get(4) ?? 0, 6: take.get(6) ?? 0 },
            // Present when unset too: a request of one shape whether or not the agent names pools
            // (the warm-up's pool does), else V8 throws the assignment's optimised code away at the agent's first refill.
            pools: s.o.pools,
          }),
        );
        crashPoint('agent.refill.committed');
        this.counters.refillTxns++;
        this.counters.refilled += got.length;
        const t = s.now();
        s.db.addHeld(
          got.map((a) => ({ addr: formatAddr(a.addr), family: a.addr.family, handle, prefixLen: a.prefixLen, gateway: formatAddr(a.gateway), freeAt: t })),
          handle,
        );
        crashPoint('agent.refill.recorded');
        for (const a of got) s.meta.set(formatAddr(a.addr), { handle, prefixLen: a.prefixLen, gateway: a.gateway });
        for (const [f, n] of take) {
          const mine = got.filter((a) => a.addr.family === f).map((a) => a.addr);
          s.pools.get(f)!.refilled(mine, t);
          if (mine.length < n) s.pools.get(f)!.refillFailed(n - mine.length);
        }
        this.#succeeded();
      } catch (e) {
        failed = true;
        for (const [f, n] of take) s.pools.get(f)!.refillFailed(n);
        // The txn may have landed with its answer lost: the handle is re-read before the next plan.
        this.unknown.takeInDoubt(handle);
        this.#failed('refill', e);
      }
    }
    if (returns.length === 0) return;
    for (let i = 0; i < returns.length; i += MAX_ADDRESSES_PER_REQUEST) {
      const chunk = returns.slice(i, i + MAX_ADDRESSES_PER_REQUEST);
      const byFamily = (f: Family): Addr[] => chunk.filter((a) => a.family === f);
      if (failed) {
        for (const [f, pool] of s.pools) pool.returnFailed(byFamily(f));
        continue;
      }
      try {
        // Only while the node's warm handle still holds each address: one freed behind the
        // agent's back and handed to another pod meanwhile is not the agent's to free.
        const holders = new Set(chunk.flatMap((a) => s.meta.get(formatAddr(a))?.handle ?? []));
        const freed = await s.ds((ipam) => ipam.releaseAddresses(chunk, holders));
        if (freed.length < chunk.length) {
          s.log.warn(
            { returned: chunk.length, freed: freed.length },
            "warm pool: some returned addresses were no longer held by this node's warm handles (left to their holder)",
          );
        }
        crashPoint('agent.return.committed');
        this.counters.returnTxns++;
        this.counters.returned += chunk.length;
        const texts = chunk.map(formatAddr);
        s.db.dropHeld(texts);
        for (const a of texts) s.meta.delete(a);
        for (const [f, pool] of s.pools) pool.returned(byFamily(f));
        this.#succeeded();
      } catch (e) {
        failed = true;
        // Never "not written": the txn may have landed with its answer lost, and another node may
        // hold these addresses by now. They stay returning until a re-read settles them.
        this.unknown.returnInDoubt(chunk);
        this.#failed('return', e);
      }
    }
  }

  #succeeded(): void {
    if (this.#s.unusable !== undefined) this.recheck();
    this.#backoffMs = 0;
    this.#backoffUntil = 0;
    this.#s.lastError = undefined;
    this.#lastFailure = undefined;
  }

  #failed(what: string, e: unknown): void {
    this.#backoffMs = Math.min(BACKOFF_MAX_MS, this.#backoffMs === 0 ? 500 : this.#backoffMs * 2);
    this.#backoffUntil = this.#s.now() + this.#backoffMs;
    this.#s.lastError = (e as Error).message;
    this.#lastFailure = e instanceof Error ? e : new Error(String(e));
    this.#s.log.warn({ node: this.#s.o.node, error: this.#s.lastError, backoffMs: this.#backoffMs }, `warm pool ${what} failed; backing off`);
  }

  #refillId(): string {
    return `${this.#s.now().toString(36)}-${process.pid.toString(36)}-${(++this.#refillSeq).toString(36)}`;
  }
}
