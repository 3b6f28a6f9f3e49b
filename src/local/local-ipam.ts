/**
 * The local back end's service: ADD / DEL / CHECK / GC / STATUS on one network directory, as
 * host-local does them (its main.go): open the store, take the lock, run the verb, close. It
 * takes a validated LocalConfig and throws typed errors (errors.ts, each with a `failure`);
 * the plugin edge (src/plugin/local-backend.ts) maps them to CNI codes and shapes the result.
 */
import { type Addr, formatAddr } from '../ip/addr.js';
import { failureOf } from '../model/failure.js';
import { crashPoint } from '../util/crash-point.js';
import { type Allocation, allocate } from './allocate.js';
import { DiskStore, type StoreFile, addrOfName, listNames, matchesAttachment, matchesLegacy } from './disk-store.js';
import { DirectoryError, FileIoError, NotHeldError, RangeSetExhaustedError } from './errors.js';
import type { LocalConfig } from './local-config.js';
import type { Holder } from './local-store.js';
import { formatRangeSet, isExhausted, rangeIndexOf } from './range-allocator.js';
import { refuseUnsafe } from './refuse-unsafe.js';
import type { ResolvConf } from './resolv-conf.js';
import type { ScanCache } from './scan-cache.js';
import { TRACING, addPhase, currentSpan, schedMs, tracePhase, traceSched, untraced } from '../util/call-trace.js';
import { BatchStore } from './batch-store.js';

/** What an ADD hands out: one address per range set, and the `resolvConf` read, if configured. */
export interface LocalAddResult {
  readonly allocations: readonly Allocation[];
  readonly dns?: ResolvConf;
}

/** An address a CHECK's prevResult lists: its text as written and the address it names. */
export interface PrevAddress {
  readonly text: string;
  readonly addr: Addr;
}

/**
 * asyncLockWait: per directory, the call of this process that waits for another process's lock
 * (settled when it got it or gave up). Per process, not per LocalIpam: the agent builds one per call.
 */
const waits = new Map<string, Promise<void>>();

/** An ADD of the agent waiting for its directory's next batch (`#addBatched`). */
interface QueuedAdd {
  readonly cfg: LocalConfig;
  readonly who: Holder;
  readonly resolve: (a: Allocation[]) => void;
  readonly reject: (e: unknown) => void;
  /** PODIPAM_TRACE=1: the call's span and when it was queued. */
  readonly span: Record<string, number> | undefined;
  readonly queued: number;
}

/**
 * Per directory, the agent's ADDs waiting for their batch: the first one schedules the batch
 * (setImmediate: after the requests the event loop has already read; at once when alone),
 * later ones join it until it holds the lock. Per process, as `waits`.
 */
const addQueues = new Map<string, QueuedAdd[]>();

/**
 * `asyncLockWait`: wait for a busy directory lock without blocking the event loop, and batch
 * concurrent ADDs; `scanCache`: remember directories between calls and read only what changed;
 * `alone()`: true when no other call is in flight in this process, so an ADD with no batch to
 * join runs at once rather than after a turn of the event loop (all three: the agent).
 */
export interface LocalIpamOptions {
  readonly asyncLockWait?: boolean;
  readonly scanCache?: ScanCache;
  readonly alone?: () => boolean;
}

export class LocalIpam {
  readonly #asyncLockWait: boolean;
  readonly #cache: ScanCache | undefined;
  readonly #alone: (() => boolean) | undefined;

  constructor(options: LocalIpamOptions = {}) {
    this.#asyncLockWait = options.asyncLockWait ?? false;
    this.#cache = options.scanCache;
    this.#alone = options.alone;
  }

  async add(cfg: LocalConfig, who: Holder): Promise<LocalAddResult> {
    const dns = cfg.resolvConf ? (await import('./resolv-conf.js')).readResolvConf(cfg.resolvConf) : undefined;
    const allocations = this.#asyncLockWait ? await this.#addBatched(cfg, who) : await this.#withStore(cfg, (store) => allocate(store, cfg, who));
    crashPoint('local.add.before-answer');
    return { allocations, dns };
  }

  /**
   * The agent's ADD: queued for its directory's batch, which serves every ADD that arrived
   * before it got the lock under that ONE lock acquisition and ONE directory scan (BatchStore
   * keeps the scan current from the batch's own writes), each ADD with its own config, result
   * or error, exactly as if they had run one after another. Each reservation is written as an
   * unbatched ADD writes it; every answer of the batch is sent only after all of its
   * reservations are on disk and the lock is dropped. A new batch starts after the requests
   * the event loop has already read (setImmediate), so that they join it; when `alone()` says
   * no other call is in flight, none can, and it starts at once.
   */
  #addBatched(cfg: LocalConfig, who: Holder): Promise<Allocation[]> {
    return new Promise<Allocation[]>((resolve, reject) => {
      const item: QueuedAdd = { cfg, who, resolve, reject, span: currentSpan(), queued: TRACING ? performance.now() : 0 };
      const queue = addQueues.get(cfg.dir);
      if (queue) {
        queue.push(item);
        return;
      }
      addQueues.set(cfg.dir, [item]);
      // Outside the first call's trace span: the batch adds its phases to every call's own.
      if (this.#alone?.()) untraced(() => void this.#runBatch(cfg.dir));
      else untraced(() => setImmediate(() => void this.#runBatch(cfg.dir)));
    });
  }

  async #runBatch(dir: string): Promise<void> {
    const waiting = [...(addQueues.get(dir) ?? [])]; // a copy: calls join the queue while it waits
    const first = waiting[0];
    if (!first) return;
    let batch: QueuedAdd[] | undefined;
    const results: ({ ok: Allocation[] } | { err: unknown })[] = [];
    let locked = 0;
    let lockedMs = 0;
    let writeMs = 0;
    let sched = { cpu: 0, runq: 0 };
    try {
      await this.#withStore(first.cfg, (store) => {
        // The lock is held from here to the end of this stretch: nothing can join any more.
        batch = addQueues.get(dir) ?? [];
        addQueues.delete(dir);
        locked = TRACING ? performance.now() : 0;
        sched = schedMs();
        const view = new BatchStore(store);
        for (const it of batch) {
          try {
            results.push({ ok: allocate(view, it.cfg, it.who) });
          } catch (e) {
            results.push({ err: e });
          }
        }
        // Still under the lock: the cache takes what the batch wrote from it, not from disk again.
        const known = view.known;
        if (known && this.#cache) this.#cache.absorb(store, known);
        if (TRACING) {
          lockedMs = performance.now() - locked;
          writeMs = view.writeMs;
        }
      });
    } catch (e) {
      if (batch) {
        // After the work (closing the directory failed): as an unbatched ADD, each call fails.
        for (const it of batch) it.reject(e);
        return;
      }
      // Opening the directory or taking the lock failed: the calls that were waiting get that
      // error; calls that joined while it waited for the lock get a batch of their own.
      const rest = (addQueues.get(dir) ?? []).slice(waiting.length);
      if (rest.length) {
        addQueues.set(dir, rest);
        setImmediate(() => void this.#runBatch(dir));
      } else addQueues.delete(dir);
      for (const it of waiting) it.reject(e);
      return;
    }
    const served = batch ?? [];
    served.forEach((it, i) => {
      if (TRACING) {
        addPhase(it.span, 'batchWait', locked - it.queued);
        addPhase(it.span, 'locked', lockedMs);
        addPhase(it.span, 'write', writeMs);
        addPhase(it.span, 'batch', served.length);
        traceSched(it.span, 'sinceLocked', sched, locked);
      }
      const r = results[i]!;
      if ('ok' in r) it.resolve(r.ok);
      else it.reject(r.err);
    });
  }

  /** Releases what the attachment holds; then reports the entries it refuses to open. */
  async del(cfg: LocalConfig, who: Holder): Promise<void> {
    await this.#withStore(cfg, (store) => {
      const files = store.scan();
      const errors: string[] = [];
      for (const f of releasable(files, who, cfg.rangeSets.length)) {
        try {
          store.remove(f.name);
          crashPoint('local.del.removed');
        } catch (e) {
          errors.push((e as Error).message);
        }
      }
      // Released what it could; entries it refuses to open are reported after.
      for (const f of files) if (f.refused) errors.push(f.refused.message);
      if (errors.length) throw new DirectoryError(errors, ';');
    });
  }

  /**
   * host-local's CHECK (the attachment holds something), and beyond it: each of `prev` (the
   * prevResult's addresses) inside this network's range sets must be held by the attachment.
   */
  async check(cfg: LocalConfig, who: Holder, prev: readonly PrevAddress[]): Promise<void> {
    await this.#withStore(cfg, (store) => {
      const files = refuseUnsafe(store.scan());
      const mine = files.filter((f) => matchesAttachment(f.content, who.containerId, who.ifname));
      const held = mine.length ? mine : files.filter((f) => matchesLegacy(f.content, who.containerId));
      if (held.length === 0) throw new NotHeldError(who.containerId, who.ifname);
      const names = new Set(held.map((f) => f.name));
      for (const { text, addr } of prev) {
        if (!cfg.rangeSets.some((s) => rangeIndexOf(s, addr) >= 0)) continue;
        if (!names.has(formatAddr(addr))) throw new NotHeldError(who.containerId, who.ifname, text);
      }
    });
  }

  /**
   * Removes those of `names` (address files of directory `at.dir`) that `who` still holds, under
   * the directory's lock — a file meanwhile taken by another attachment stays. Returns the names
   * removed; throws on the first file it cannot remove (those removed before stay removed).
   */
  async releaseHeld(at: Pick<LocalConfig, 'dir' | 'lockTimeoutMs'>, who: Holder, names: readonly string[]): Promise<string[]> {
    const wanted = new Set(names);
    return this.#withStore(at, (store) => {
      const removed: string[] = [];
      for (const f of store.scan()) {
        if (f.refused || !wanted.has(f.name) || !matchesAttachment(f.content, who.containerId, who.ifname)) continue;
        store.remove(f.name);
        removed.push(f.name);
      }
      return removed;
    });
  }

  /** Releases every reservation not held by one of `valid`; keeps going, reports at the end. */
  async gc(cfg: LocalConfig, valid: readonly Holder[]): Promise<void> {
    const keep = new Set(valid.map((a) => `${a.containerId.trim()}\r\n${a.ifname}`));
    const keepIds = new Set(valid.map((a) => a.containerId.trim()));
    await this.#withStore(cfg, (store) => {
      const errors: string[] = [];
      for (const f of store.scan()) {
        if (f.refused) {
          errors.push(f.refused.message); // never opened, never removed: the operator looks at it
          continue;
        }
        if (!addrOfName(f.name)) continue; // lock, last_reserved_ip.*, anything not an address
        const c = f.content?.trim();
        if (c !== undefined && (keep.has(c) || keepIds.has(c))) continue;
        try {
          store.remove(f.name);
          crashPoint('local.gc.removed');
        } catch (e) {
          errors.push(`${f.name}: ${(e as Error).message}`);
        }
      }
      if (errors.length) throw new DirectoryError(errors, '; ', 'GC could not release: ');
    });
  }

  /** RangeSetExhaustedError for the first range set with no free address. */
  status(cfg: LocalConfig): void {
    // Read without creating or locking anything: a status probe must not write.
    const taken = listNames(cfg.dir).flatMap((n) => {
      const a = addrOfName(n);
      return a && formatAddr(a) === n ? [a] : [];
    });
    cfg.rangeSets.forEach((set, i) => {
      if (isExhausted(set, taken)) throw new RangeSetExhaustedError(i, formatRangeSet(set));
    });
  }

  /**
   * Opens the network directory, runs `fn` under the lock (waiting at most cfg.lockTimeoutMs,
   * then LockTimeoutError), always unlocks and closes. `fn` runs synchronously once the lock is
   * held.
   *
   * With `asyncLockWait` (the agent: many calls of one process at once) the lock is taken and
   * `fn` run and the lock dropped in one synchronous stretch whenever the lock is free, so no
   * other call of this process can find it held. Only when another process holds it does a call
   * wait, yielding to the event loop: that one call polls the lock (flock(2) has no timeout),
   * the process's other calls on the directory wait for it on a promise, in arrival order, and
   * then take their turn the same way. (Before, each waiting call polled on its own with
   * back-off timers, and a call that got the lock yielded once before using it, so the agent's
   * own calls in a burst found each other's lock and backed off: hundreds of ms.)
   */
  async #withStore<T>(cfg: Pick<LocalConfig, 'dir' | 'lockTimeoutMs'>, fn: (store: DiskStore) => T): Promise<T> {
    if (!this.#asyncLockWait) return this.#withStoreBlocking(cfg, fn);
    const deadline = Date.now() + cfg.lockTimeoutMs;
    const tq = TRACING ? performance.now() : 0;
    for (let turn = waits.get(cfg.dir); turn; turn = waits.get(cfg.dir)) await turn;
    if (TRACING) tracePhase('queue', performance.now() - tq);
    const t0 = TRACING ? performance.now() : 0;
    const store = this.#open(cfg);
    try {
      if (!store.tryLock()) {
        // Another process holds it: wait for it here; this process's next calls wait for us.
        let done!: () => void;
        waits.set(cfg.dir, new Promise<void>((resolve) => (done = resolve)));
        const tw = TRACING ? performance.now() : 0;
        try {
          await store.lockAsync(Math.max(0, deadline - Date.now()));
        } finally {
          waits.delete(cfg.dir);
          done(); // the waiters run after this call's synchronous `fn` below
          if (TRACING) tracePhase('lockWait', performance.now() - tw);
        }
      }
      crashPoint('local.lock.held');
      return this.#traced(t0, store, fn);
    } finally {
      store.close(); // closing drops the lock
    }
  }

  /** The per-pod plugin's way: one call per process, blocking on the lock. */
  #withStoreBlocking<T>(cfg: Pick<LocalConfig, 'dir' | 'lockTimeoutMs'>, fn: (store: DiskStore) => T): T {
    const t0 = TRACING ? performance.now() : 0;
    const store = this.#open(cfg);
    try {
      store.lock(cfg.lockTimeoutMs);
      crashPoint('local.lock.held');
      return this.#traced(t0, store, fn);
    } finally {
      store.close(); // closing drops the lock
    }
  }

  #open(cfg: Pick<LocalConfig, 'dir'>): DiskStore {
    try {
      return DiskStore.open(cfg.dir, this.#cache);
    } catch (e) {
      if (failureOf(e)) throw e;
      throw new FileIoError('open', cfg.dir, (e as Error).message, { cause: e });
    }
  }

  /** Runs `fn`; with PODIPAM_TRACE=1 records its time (and the open and wait before it, from `t0`). */
  #traced<T>(t0: number, store: DiskStore, fn: (store: DiskStore) => T): T {
    if (!TRACING) return fn(store);
    const t1 = performance.now();
    const sched = schedMs();
    tracePhase('openAndWait', t1 - t0);
    try {
      return fn(store);
    } finally {
      tracePhase('locked', performance.now() - t1);
      traceSched(currentSpan(), 'locked', sched, t1);
    }
  }
}

/**
 * The files DEL removes, as host-local does it: every file matching (id, ifname); when there is
 * none, the legacy files matching the bare id. host-local repeats its release once per range set,
 * so with two or more sets the legacy files go as well.
 */
function releasable(files: readonly StoreFile[], who: Holder, rangeSets: number): StoreFile[] {
  const exact = files.filter((f) => matchesAttachment(f.content, who.containerId, who.ifname));
  if (exact.length > 0 && rangeSets < 2) return exact;
  return [...exact, ...files.filter((f) => matchesLegacy(f.content, who.containerId))];
}
