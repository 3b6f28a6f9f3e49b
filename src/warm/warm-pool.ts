/**
 * The agent's warm pool for one node and one address family, pure: which address a pod gets,
 * and what the I/O layer must refill from, or return to, the cluster allocator. Terway's
 * `simpleObjectPool` (pkg/pool/pool.go before v1.7) without its goroutines: time is passed in
 * (`now`, in milliseconds), nothing happens between calls, no I/O, no randomness — the same
 * calls give the same answers.
 *
 * Every address the pool holds is in exactly one state:
 * - **idle**: in the idle queue, ordered by `freeAt` (ties: lower address first), the time from
 *   which any pod may have it. A release sets `freeAt = release + cooldownMs`, so the oldest
 *   release comes out first and none before its cooldown (the network may still route the
 *   address to its old pod); an address refilled from the cluster is free at once.
 * - **in use**: held by one attachment key (the caller's: pod handle, namespace/name, …).
 * - **reserved**: released by a sticky key (a StatefulSet pod, keyed by namespace/name) and kept
 *   for it during `[release, release + stickyForMs)`: the same key acquiring in that window gets
 *   it back; at the window's end it joins the idle queue with
 *   `freeAt = max(window end, release + cooldownMs)`.
 * - **returning**: picked by `plan` to go back to the cluster; held until `returned`.
 * Besides these, `pending` counts refills asked for (by `plan`, or one per miss) not yet arrived.
 *
 * Tokens, Terway's token bucket: `capacity − (idle + in use + reserved + returning + pending)`.
 * A refill takes its tokens before its I/O starts, so the pool never holds more than `capacity`
 * even with refills in flight; `returned` and `refillFailed` give tokens back. Idle counts for
 * `minIdle`/`maxIdle` include addresses still cooling (as Terway's), not reserved ones.
 *
 * The I/O layer's part:
 * - `acquire` → a hit, or a miss. A miss with `refill: true` has taken one token: get one
 *   address from the cluster and `adopt` it for the pod (or `refilled` it and acquire again),
 *   or call `refillFailed(1)`. `refill: false`: at capacity, nothing to refill until an address
 *   frees or a return completes (`retryAt` says when the first idle one stops cooling).
 * - `plan(now)` at start (the preload to `minIdle`), after acquires and releases, and on a
 *   timer: allocate `refill` addresses, then `refilled(got, now)` and `refillFailed(missing)`;
 *   release `returns` in the cluster, then `returned` or `returnFailed`.
 * - `withdraw(pred, now)` when addresses must no longer be handed out (their IP pool drains, is
 *   disabled or deleted): the matching idle ones past their cooldown become `returning`, for the
 *   caller to return like a plan's (call it before `acquire` with the same `now`); in-use and reserved ones are untouched (a reservation that ends joins
 *   the idle queue and is withdrawn by the next call).
 * - `forget(pred)` when the datastore no longer gives matching addresses to the node's warm
 *   handles (released behind the agent's back, or a return whose lost answer a re-read settled):
 *   idle and reserved ones leave the pool at once, whatever their cooldown, and are never handed
 *   out again; in-use ones stay until their release makes them idle (call it again then).
 * - `recovered(addrs, now)`: addresses a refill whose answer was lost turned out to hold.
 * - `snapshot()` into the resource DB; `WarmPool.restore(config, snapshot)` after a restart.
 *
 * Reuse quarantine: an address a pod released stays out of every other pod's hands until
 * `max(cooldownMs, reuseAfter)` after its release, where `reuseAfter` is its IP pool's setting as
 * the caller last saw it (`setReuseAfter`, called again whenever the setting may have changed:
 * the new value applies at once to every address released earlier, as the cluster's blocks
 * apply it). A sticky key's own reservation is not another pod: it gets its address back at once.
 *
 * Dual-stack: one pool per family, paired by the caller. It acquires from both; when one cannot
 * serve, `cancel` puts the other's address back exactly where it was — both or neither.
 */
import { type Addr, type Family, formatAddr } from '../ip/addr.js';
import { type WarmPoolConfig, validateWarmPoolConfig } from './warm-pool-config.js';
import { MinQueue } from './warm-pool-queue.js';
import { type IdleEntry, type ReservedEntry, type WarmPoolSnapshot, checkWarmPoolSnapshot } from './warm-pool-snapshot.js';
import type { AcquireOptions, AcquireResult, ReuseAfterOf, WarmPoolCounts, WarmPoolPlan } from './warm-pool-calls.js';

export { type WarmPoolConfig, WarmPoolConfigError, validateWarmPoolConfig } from './warm-pool-config.js';
export type { IdleEntry, InUseEntry, ReservedEntry, WarmPoolSnapshot } from './warm-pool-snapshot.js';
export type { AcquireOptions, AcquireResult, ReuseAfterOf, WarmPoolCounts, WarmPoolPlan } from './warm-pool-calls.js';

interface InUse {
  readonly addr: Addr;
  readonly sticky: boolean;
  /** Where `cancel` puts the address back; undefined when adopted or restored. */
  readonly origin: IdleEntry | ReservedEntry | undefined;
}

/**
 * An idle entry in the queue: `at`, when any pod may have it — its cooldown's end, or its
 * quarantine's when later. Always all four fields (`releasedAt` undefined for a refilled
 * address): the queue's order compares entries of one hidden class, so V8's optimised heap code
 * is not thrown away when the first released address meets the refilled ones.
 */
interface Idle extends IdleEntry {
  readonly releasedAt: number | undefined;
  readonly at: number;
}

const byAt = (a: Idle, b: Idle): boolean => a.at < b.at || (a.at === b.at && a.addr.value < b.addr.value);
const byExpiry = (a: ReservedEntry, b: ReservedEntry): boolean => a.expiresAt < b.expiresAt || (a.expiresAt === b.expiresAt && a.addr.value < b.addr.value);

/** One node's warm pool of one family (see the top of this file). Synchronous, no I/O. */
export class WarmPool {
  readonly config: WarmPoolConfig;
  readonly #idle = new MinQueue<Idle>(byAt);
  readonly #inUse = new Map<string, InUse>();
  readonly #reserved = new Map<string, ReservedEntry>();
  /** Reservations by expiry; entries no longer in #reserved are dropped when they surface. */
  readonly #expiry = new MinQueue<ReservedEntry>(byExpiry);
  readonly #returning = new Map<bigint, Idle>();
  /** Every address held, to refuse one arriving twice. */
  readonly #held = new Set<bigint>();
  #pending = 0;
  #reuseAfterOf: ReuseAfterOf | undefined;

  /** An empty pool; WarmPoolConfigError when the config fails `validateWarmPoolConfig`. */
  constructor(config: WarmPoolConfig) {
    this.config = validateWarmPoolConfig(config);
  }

  /**
   * A pool rebuilt from a snapshot (see WarmPoolSnapshot: returns in flight become idle again,
   * pending refills are dropped). In-use entries lose their `cancel` origin. A snapshot holding
   * more than `capacity` (capacity lowered across a restart) is accepted with no tokens; `plan`
   * then returns idle addresses past their cooldown until the pool fits. RangeError naming the
   * entry when the snapshot is inconsistent (see checkWarmPoolSnapshot), before anything is built.
   */
  static restore(config: WarmPoolConfig, snapshot: WarmPoolSnapshot): WarmPool {
    const pool = new WarmPool(config);
    checkWarmPoolSnapshot(snapshot, pool.config.family);
    for (const e of [...snapshot.idle, ...(snapshot.returning ?? [])]) pool.#toIdle(e);
    for (const e of snapshot.inUse) {
      pool.#inUse.set(e.key, { addr: e.addr, sticky: e.sticky, origin: undefined });
      pool.#held.add(e.addr.value);
    }
    for (const e of snapshot.reserved) pool.#reserve({ ...e });
    return pool;
  }

  /**
   * The pools' reuse quarantine as the caller sees it now (`of`: an address's pool's reuseAfter
   * in ms; undefined: none). Applies at once to every idle address a pod released, whenever it
   * was released: an address becomes free for any pod at `max(its cooldown's end, releasedAt +
   * of(addr))`. Addresses refilled from the cluster carry no release time (the cluster's blocks
   * quarantined them already). O(idle · log idle).
   */
  setReuseAfter(of: ReuseAfterOf | undefined): void {
    this.#reuseAfterOf = of;
    for (const e of this.#idle.removeWhere(() => true)) this.#idle.push(this.#entry(e));
    for (const [k, e] of this.#returning) this.#returning.set(k, this.#entry(e));
  }

  get family(): Family {
    return this.config.family;
  }

  /** The counts; `tokens` is 0, never negative, when a restored pool is over capacity. */
  counts(): WarmPoolCounts {
    return {
      idle: this.#idle.size,
      inUse: this.#inUse.size,
      reserved: this.#reserved.size,
      returning: this.#returning.size,
      pending: this.#pending,
      tokens: Math.max(0, this.config.capacity - this.#heldCount()),
    };
  }

  /** True while `addr` is being returned (picked by `plan` or `withdraw`, not yet settled). */
  isReturning(addr: Addr): boolean {
    return addr.family === this.config.family && this.#returning.has(addr.value);
  }

  /** The address `key` holds, or undefined. */
  addressOf(key: string): Addr | undefined {
    return this.#inUse.get(key)?.addr;
  }

  /**
   * An address for `key`, in this order: the one it already holds (`again`, nothing changes);
   * its sticky reservation (`sticky`); the idle queue's head if free at `now` (`idle`). Else a
   * miss: with a token left, the token is taken (`pending` + 1) and `refill` is true — the
   * caller must `adopt`, `refilled` or `refillFailed(1)`; at capacity `refill` is false.
   */
  acquire(key: string, now: number, opts: AcquireOptions = {}): AcquireResult {
    this.#expire(now);
    const held = this.#inUse.get(key);
    if (held) return { kind: 'hit', addr: held.addr, from: 'again' };
    const sticky = opts.sticky ?? false;
    const r = this.#reserved.get(key);
    if (r) {
      this.#reserved.delete(key);
      this.#inUse.set(key, { addr: r.addr, sticky, origin: r });
      return { kind: 'hit', addr: r.addr, from: 'sticky' };
    }
    const head = this.#idle.peek();
    if (head && head.at <= now) {
      this.#idle.pop();
      this.#inUse.set(key, { addr: head.addr, sticky, origin: head });
      return { kind: 'hit', addr: head.addr, from: 'idle' };
    }
    const refill = this.#heldCount() < this.config.capacity;
    if (refill) this.#pending++;
    return { kind: 'miss', refill, retryAt: head?.at };
  }

  /**
   * Frees `key`'s address and returns it; undefined (nothing changes) when `key` holds none, so
   * a repeated DEL is harmless. Sticky (`opts.sticky`, else the flag given at acquire) and
   * `stickyForMs > 0`: reserved for `key`; otherwise idle from `now + cooldownMs` (or the end of
   * its pool's reuse quarantine, when later: setReuseAfter). A caller that
   * knows the pod is gone for good (GC) passes `sticky: false`.
   */
  release(key: string, now: number, opts: AcquireOptions = {}): Addr | undefined {
    this.#expire(now);
    const u = this.#inUse.get(key);
    if (!u) return undefined;
    this.#inUse.delete(key);
    this.#held.delete(u.addr.value);
    const { cooldownMs, stickyForMs } = this.config;
    if ((opts.sticky ?? u.sticky) && stickyForMs > 0) {
      this.#reserve({ key, addr: u.addr, expiresAt: now + stickyForMs, freeAt: now + Math.max(stickyForMs, cooldownMs), releasedAt: now });
    } else {
      this.#toIdle({ addr: u.addr, freeAt: now + cooldownMs, releasedAt: now });
    }
    return u.addr;
  }

  /**
   * Undoes `key`'s acquire when the pod never got the address (the other family missed, the
   * write failed): a hit from the idle queue or a reservation goes back exactly where it was
   * (same freeAt, same window); any other holding (adopted, restored) is released as by
   * `release(key, now)`. Returns the address, or undefined when `key` holds none.
   */
  cancel(key: string, now: number): Addr | undefined {
    this.#expire(now);
    const u = this.#inUse.get(key);
    if (!u) return undefined;
    if (u.origin === undefined) return this.release(key, now);
    this.#inUse.delete(key);
    this.#held.delete(u.addr.value);
    if ('key' in u.origin) this.#reserve(u.origin);
    else this.#toIdle(u.origin);
    this.#expire(now);
    return u.addr;
  }

  /**
   * Hands `addr`, just allocated from the cluster for a miss, straight to `key` (in use, no
   * trip through the idle queue); uses the miss's pending token. RangeError, nothing changed,
   * when no refill is pending, `addr` is of the other family or already held, or `key` already
   * holds an address or a reservation.
   */
  adopt(key: string, addr: Addr, now: number, opts: AcquireOptions = {}): void {
    this.#expire(now);
    if (this.#pending < 1) throw new RangeError(`Cannot adopt ${formatAddr(addr)} for ${key}: no refill is pending`);
    this.#checkArriving([addr], 'adopt');
    const had = this.#inUse.get(key)?.addr ?? this.#reserved.get(key)?.addr;
    if (had) throw new RangeError(`Cannot adopt ${formatAddr(addr)} for ${key}: the key already holds ${formatAddr(had)}`);
    this.#pending--;
    this.#inUse.set(key, { addr, sticky: opts.sticky ?? false, origin: undefined });
    this.#held.add(addr.value);
  }

  /**
   * What to do now, and the pool's commitment to it: idle addresses above `maxIdle` (or above
   * `capacity`, after a restore) that are past their cooldown, longest idle first, become
   * `returning` (no longer handed out); then, if idle + pending is below `minIdle`, that many
   * refills up to the tokens left become `pending`. Calling it again before the I/O is done
   * asks for nothing twice.
   */
  plan(now: number): WarmPoolPlan {
    this.#expire(now);
    const { minIdle, maxIdle, capacity } = this.config;
    let surplus = Math.max(this.#idle.size - maxIdle, this.#heldCount() - this.#returning.size - capacity);
    const returns: Addr[] = [];
    for (let head = this.#idle.peek(); surplus > 0 && head && head.at <= now; head = this.#idle.peek(), surplus--) {
      this.#idle.pop();
      this.#returning.set(head.addr.value, head);
      returns.push(head.addr);
    }
    const tokens = capacity - this.#heldCount();
    const refill = Math.max(0, Math.min(minIdle - this.#idle.size - this.#pending, tokens));
    this.#pending += refill;
    return { refill, returns };
  }

  /**
   * Idle addresses `pred` matches that are past their cooldown at `now` leave the idle queue and
   * become `returning`, oldest first: never handed out again; the caller returns them
   * (`returned`/`returnFailed`, which puts them back idle — withdraw again to retry). Ones still
   * cooling stay (`acquire` at `now` cannot take them either) until a later call, so no address
   * reaches another pod before its cooldown. In-use and reserved addresses are untouched;
   * reservations that ended by `now` are idle first, so they are withdrawn too.
   */
  withdraw(pred: (addr: Addr) => boolean, now: number): Addr[] {
    this.#expire(now);
    const out = this.#idle.removeWhere((e) => e.at <= now && pred(e.addr));
    for (const e of out) this.#returning.set(e.addr.value, e);
    return out.map((e) => e.addr);
  }

  /**
   * Idle and reserved addresses `pred` matches leave the pool (not returned: the datastore no
   * longer gives them to this node), whatever their cooldown; returns them. In-use and returning
   * ones are untouched.
   */
  forget(pred: (addr: Addr) => boolean, now: number): Addr[] {
    this.#expire(now);
    const out = this.#idle.removeWhere((e) => pred(e.addr)).map((e) => e.addr);
    for (const [key, r] of this.#reserved) {
      if (!pred(r.addr)) continue;
      this.#reserved.delete(key); // its #expiry entry is dropped when it surfaces
      out.push(r.addr);
    }
    for (const a of out) this.#held.delete(a.value);
    return out;
  }

  /**
   * Addresses a refill whose answer was lost turned out to hold (a re-read of its warm handle):
   * idle, free from `now`. They take no pending token (the failed refill gave its tokens back),
   * so the pool may hold more than `capacity` until `plan` returns the surplus. RangeError,
   * nothing changed, when one is of the other family, already held, or listed twice.
   */
  recovered(addrs: readonly Addr[], now: number): void {
    this.#expire(now);
    this.#checkArriving(addrs, 'recover');
    for (const addr of addrs) this.#toIdle({ addr, freeAt: now });
  }

  /**
   * Refilled addresses arrived (from a plan or a miss): idle, free from `now`, one pending
   * token each. RangeError, nothing changed, when more arrive than are pending, or one is of the
   * other family, already held, or listed twice.
   */
  refilled(addrs: readonly Addr[], now: number): void {
    this.#expire(now);
    if (addrs.length > this.#pending) {
      throw new RangeError(`Cannot take ${addrs.length} refilled addresses: ${this.#pending} pending`);
    }
    this.#checkArriving(addrs, 'take refilled');
    this.#pending -= addrs.length;
    for (const addr of addrs) this.#toIdle({ addr, freeAt: now });
  }

  /** `n` pending refills will not arrive: their tokens come back. RangeError unless 0 ≤ n ≤ pending. */
  refillFailed(n: number): void {
    if (!Number.isInteger(n) || n < 0 || n > this.#pending) {
      throw new RangeError(`Cannot fail refills as 'n' must be an integer from 0 to ${this.#pending}: current value is ${n}`);
    }
    this.#pending -= n;
  }

  /** The cluster took these returning addresses back: the pool forgets them, tokens come back. */
  returned(addrs: readonly Addr[]): void {
    for (const a of this.#takeReturning(addrs)) this.#held.delete(a.addr.value);
  }

  /** Returning addresses the cluster did not take: idle again, in their old place in the queue. */
  returnFailed(addrs: readonly Addr[]): void {
    for (const e of this.#takeReturning(addrs)) this.#idle.push(this.#entry(e));
  }

  /**
   * The whole state (see WarmPoolSnapshot), as of the last call that passed `now`; an idle or
   * returning entry's `freeAt` is when any pod may have it under the reuse quarantine as last
   * set (so a pool restored from it never hands an address out earlier).
   */
  snapshot(): WarmPoolSnapshot {
    const byKey = <T extends { key: string }>(a: T, b: T): number => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
    return {
      idle: this.#idle.sorted().map(entryOf),
      inUse: [...this.#inUse].map(([key, u]) => ({ key, addr: u.addr, sticky: u.sticky })).sort(byKey),
      reserved: [...this.#reserved.values()].map((r) => ({ ...r })).sort(byKey),
      returning: [...this.#returning.values()].sort((a, b) => (byAt(a, b) ? -1 : 1)).map(entryOf),
      pending: this.#pending,
    };
  }

  #heldCount(): number {
    return this.#held.size + this.#pending;
  }

  #toIdle(e: IdleEntry): void {
    this.#idle.push(this.#entry(e));
    this.#held.add(e.addr.value);
  }

  /** `e` as queued: free for any pod at the later of its cooldown's end and its quarantine's. */
  #entry(e: IdleEntry): Idle {
    const { addr, freeAt, releasedAt } = e;
    const q = releasedAt === undefined ? 0 : (this.#reuseAfterOf?.(addr) ?? 0);
    const at = q > 0 ? Math.max(freeAt, releasedAt! + q) : freeAt;
    return { addr, freeAt, releasedAt, at };
  }

  #reserve(r: ReservedEntry): void {
    this.#reserved.set(r.key, r);
    this.#expiry.push(r);
    this.#held.add(r.addr.value);
  }

  /** Reservations whose window ended by `now` join the idle queue. */
  #expire(now: number): void {
    if (!Number.isFinite(now)) throw new RangeError(`Cannot use the warm pool as 'now' must be a finite number: current value is ${now}`);
    for (let r = this.#expiry.peek(); r && r.expiresAt <= now; r = this.#expiry.peek()) {
      this.#expiry.pop();
      if (this.#reserved.get(r.key) !== r) continue; // taken back by its key since
      this.#reserved.delete(r.key);
      this.#idle.push(
        this.#entry(r.releasedAt === undefined ? { addr: r.addr, freeAt: r.freeAt } : { addr: r.addr, freeAt: r.freeAt, releasedAt: r.releasedAt }),
      );
    }
  }

  #checkArriving(addrs: readonly Addr[], action: string): void {
    const seen = new Set<bigint>();
    for (const a of addrs) {
      if (a.family !== this.config.family) throw new RangeError(`Cannot ${action} ${formatAddr(a)}: the pool holds IPv${this.config.family} addresses`);
      if (this.#held.has(a.value) || seen.has(a.value)) throw new RangeError(`Cannot ${action} ${formatAddr(a)}: the pool already holds it`);
      seen.add(a.value);
    }
  }

  #takeReturning(addrs: readonly Addr[]): Idle[] {
    const seen = new Set<bigint>();
    for (const a of addrs) {
      if (a.family !== this.config.family || !this.#returning.has(a.value) || seen.has(a.value)) {
        throw new RangeError(`Cannot settle the return of ${formatAddr(a)}: it is not being returned`);
      }
      seen.add(a.value);
    }
    return addrs.map((a) => {
      const e = this.#returning.get(a.value)!;
      this.#returning.delete(a.value);
      return e;
    });
  }
}

/** A queued entry as a snapshot shows it: `freeAt` is when any pod may have it (see snapshot). */
function entryOf(e: Idle): IdleEntry {
  return e.releasedAt === undefined ? { addr: e.addr, freeAt: e.at } : { addr: e.addr, freeAt: e.at, releasedAt: e.releasedAt };
}
