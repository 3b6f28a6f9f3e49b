/**
 * The warm pool's watch of the datastore: an idle address is handed out only while the
 * datastore still gives it to this node's warm pool and a pod of this node could be given it.
 * Two watches, from the revision read before a full check:
 * - the `config` record, which every pool, reservation and settings write rewrites: the view
 *   (pools, reservations, the node's labels) is read again and idle addresses that are now
 *   reserved, or in no usable pool selecting this node, are withdrawn and returned at once
 *   (WarmRefiller.refreshPools). A change of the node's labels alone is seen by the maintenance
 *   loop's periodic read of the same view (`poolViewMs`);
 * - this node's warm handles (`handles/podipam-warm:<node>:…`): a handle deleted, or holding
 *   fewer addresses than the agent believes, is re-read, and the addresses it no longer holds
 *   (an `ipam release --ip --force`, a GC) leave the idle queue and the resource DB (an in-use
 *   one when its pod releases it): never handed out again.
 * A watch that fails (datastore away, history compacted) is started again after `retryMs` from
 * the revision then, after the same full check, so nothing between is missed. Until an event
 * arrives an ADD serves from the view it has: the window is the watch's delay (SQLite polls its
 * change log every 20 ms; etcd pushes).
 */
import { decodeHandle } from '../cluster/records/index.js';
import { CONFIG_KEY, HANDLE_PREFIX } from '../cluster/records/index.js';
import { formatAddr, parseAddr } from '../ip/index.js';
import type { Store, WatchEvent } from '../store/index.js';
import { plantedBug } from '../util/planted-bug.js';
import type { WarmRefiller } from './warm-refiller.js';
import type { WarmState } from './warm-state.js';
import { pause } from '../util/pause.js';

/** Pause before a failed watch starts again. */
const RETRY_MS = 1000;

export class WarmTrust {
  readonly #s: WarmState;
  readonly #refiller: WarmRefiller;
  readonly #ac = new AbortController();
  #loops: Promise<void>[] = [];
  readonly counters = { viewEvents: 0, handleEvents: 0, handlesReread: 0, gone: 0 };

  constructor(state: WarmState, refiller: WarmRefiller) {
    this.#s = state;
    this.#refiller = refiller;
  }

  /** Starts both watches (each waits until the pools are restored). */
  start(): void {
    this.#loops = [this.#follow(CONFIG_KEY, (b) => this.#onView(b)), this.#follow(HANDLE_PREFIX + this.#s.warmHandlePrefix(), (b) => this.#onHandles(b))];
  }

  async stop(): Promise<void> {
    this.#ac.abort();
    await Promise.all(this.#loops);
  }

  async #follow(prefix: string, apply: (batch: readonly WatchEvent[] | undefined) => Promise<void>): Promise<void> {
    const signal = this.#ac.signal;
    const s = this.#s;
    let lastError = '';
    while (!signal.aborted && !s.closed) {
      try {
        if (!s.isReady) throw new Error('warm pool not ready yet');
        const store: Store = await s.ds(async (ipam) => ipam.store);
        const from = (await store.revision()) + 1;
        await apply(undefined); // everything as of now: nothing before the watch is missed
        if (lastError !== '') s.log.info({ node: s.node, prefix }, 'warm pool: watching the datastore again');
        lastError = '';
        for await (const batch of store.watch(prefix, from, { signal })) await apply(batch);
        return; // aborted, or the store closed
      } catch (e) {
        if (signal.aborted) return;
        const msg = (e as Error).message;
        if (msg !== lastError && s.isReady)
          s.log.warn({ node: s.node, prefix, error: msg }, 'warm pool: datastore watch failed; the periodic pool view stands in until it runs again');
        lastError = msg;
      }
      await pause(RETRY_MS, signal);
    }
  }

  async #onView(batch: readonly WatchEvent[] | undefined): Promise<void> {
    if (batch !== undefined) this.counters.viewEvents += batch.length;
    await this.#refiller.refreshPools();
  }

  /**
   * `batch` undefined: every handle the agent knows is compared with the datastore's listing.
   * A handle only ever loses addresses behind the agent's back (each refill writes a fresh
   * one), so a handle holding as many as the agent knows is not read again.
   */
  async #onHandles(batch: readonly WatchEvent[] | undefined): Promise<void> {
    if (plantedBug('warm-trust-blind')) return;
    const s = this.#s;
    const known = new Map<string, string[]>();
    for (const [a, m] of s.meta) known.set(m.handle, [...(known.get(m.handle) ?? []), a]);
    const now = new Map<string, number>(); // handle → addresses its record counts (0: deleted)
    if (batch === undefined) {
      const entries = await s.ds((ipam) => ipam.store.list(HANDLE_PREFIX + s.warmHandlePrefix()));
      const listed = new Map(entries.map((e) => [e.key.slice(HANDLE_PREFIX.length), e] as const));
      for (const h of known.keys()) {
        const e = listed.get(h);
        now.set(h, e === undefined ? 0 : total(e));
      }
    } else {
      this.counters.handleEvents += batch.length;
      for (const e of batch) {
        const h = e.key.slice(HANDLE_PREFIX.length);
        if (known.has(h)) now.set(h, e.type === 'delete' ? 0 : total({ key: e.key, value: e.value, rev: e.modRevision }));
      }
    }
    const suspect = [...now].filter(([h, n]) => n < (known.get(h)?.length ?? 0)).map(([h]) => h);
    if (suspect.length === 0) return;
    const holds = new Map<string, Set<string>>();
    await s.ds(async (ipam) => {
      for (const h of suspect) holds.set(h, new Set(((await ipam.addressesOf(h)) ?? []).map((a) => formatAddr(a.addr))));
    });
    this.counters.handlesReread += suspect.length;
    let n = 0;
    for (const h of suspect) {
      // Known now, not held: gone (an address the agent returned meanwhile is no longer known).
      for (const a of known.get(h) ?? []) {
        const addr = parseAddr(a);
        if (s.meta.get(a)?.handle === h && !holds.get(h)!.has(a) && !s.gone.has(a) && !s.pools.get(addr.family)?.isReturning(addr)) {
          s.gone.add(a);
          n++;
        }
      }
    }
    if (n === 0) return;
    this.counters.gone += n;
    s.log.warn(
      { node: s.node, handles: suspect, addrs: [...s.gone] },
      "warm pool: the datastore no longer gives these addresses to this node's warm handles (released behind the agent); they are never handed out again",
    );
    this.#refiller.withdraw(s.now());
  }
}

/** How many addresses a handle record counts; 0 for a record that does not decode (re-read, never trusted). */
function total(e: { key: string; value: string; rev: number }): number {
  try {
    let n = 0;
    for (const c of decodeHandle(e).blocks.values()) n += c;
    return n;
  } catch {
    return 0;
  }
}
