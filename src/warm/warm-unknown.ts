/**
 * Refills and returns whose outcome is unknown: the datastore's answer never came (a timeout,
 * a connection reset, the store's StoreUnavailableError after the request was sent), so the txn
 * may or may not have landed. Nothing is assumed: a return in doubt keeps its addresses
 * `returning` (never handed out) and a refill in doubt keeps its intent, until `settle` has
 * re-read the warm handles concerned — only then do addresses the handle still holds go back
 * to (or join) the idle queue, and those it no longer holds are forgotten. A failed re-read
 * leaves everything in doubt for the next maintenance run; a restart settles it too (the
 * reconcile reads the same handles, warm-restore.ts).
 */
import { type Addr, formatAddr } from '../ip/index.js';
import type { WarmState } from './warm-state.js';

export class WarmUnknown {
  readonly #s: WarmState;
  /** Addresses of returns in doubt (still `returning` in their pool). */
  #returns: Addr[] = [];
  /** Warm handles of refills in doubt (their intent still in the resource DB). */
  #takes: string[] = [];
  readonly counters = { settledReturned: 0, settledKept: 0, settledRecovered: 0 };

  constructor(state: WarmState) {
    this.#s = state;
  }

  get pending(): number {
    return this.#returns.length + this.#takes.length;
  }

  /** A return of `addrs` (still `returning`) whose answer was lost. */
  returnInDoubt(addrs: readonly Addr[]): void {
    this.#returns.push(...addrs);
  }

  /** A refill to warm handle `handle` (its intent recorded) whose answer was lost. */
  takeInDoubt(handle: string): void {
    this.#takes.push(handle);
  }

  /**
   * Re-reads each handle in doubt: a returned address the handle still holds is idle again, one
   * it does not is forgotten; a refill's handle that holds addresses gives them to the idle
   * queue. Throws what the datastore throws (everything stays in doubt).
   */
  async settle(): Promise<void> {
    if (this.pending === 0) return;
    const s = this.#s;
    const handles = new Set([...this.#takes, ...this.#returns.flatMap((a) => s.meta.get(formatAddr(a))?.handle ?? [])]);
    const holds = new Map<string, { addr: Addr; prefixLen: number; gateway: Addr }[]>();
    await s.ds(async (ipam) => {
      for (const h of handles) holds.set(h, (await ipam.addressesOf(h)) ?? []);
    });
    const now = s.now();
    const returns = this.#returns.splice(0);
    const still = new Set<string>();
    for (const [h, got] of holds) for (const a of got) still.add(`${h} ${formatAddr(a.addr)}`);
    const kept = returns.filter((a) => still.has(`${s.meta.get(formatAddr(a))?.handle ?? ''} ${formatAddr(a)}`));
    const gone = returns.filter((a) => !kept.includes(a));
    for (const [f, pool] of s.pools) {
      pool.returnFailed(kept.filter((a) => a.family === f));
      pool.returned(gone.filter((a) => a.family === f));
    }
    const goneText = gone.map(formatAddr);
    s.db.dropHeld(goneText);
    for (const a of goneText) s.meta.delete(a);
    this.counters.settledKept += kept.length;
    this.counters.settledReturned += gone.length;
    if (returns.length > 0)
      s.log.info(
        { node: s.node, kept: kept.map(formatAddr), returned: goneText },
        'warm pool: returns whose answer was lost, settled by re-reading the warm handles',
      );
    for (const h of this.#takes.splice(0)) {
      const got = (holds.get(h) ?? []).filter((a) => !s.meta.has(formatAddr(a.addr)));
      const t = s.now();
      // addHeld with the handle also forgets its intent, in the same commit.
      s.db.addHeld(
        got.map((a) => ({ addr: formatAddr(a.addr), family: a.addr.family, handle: h, prefixLen: a.prefixLen, gateway: formatAddr(a.gateway), freeAt: t })),
        h,
      );
      for (const a of got) s.meta.set(formatAddr(a.addr), { handle: h, prefixLen: a.prefixLen, gateway: a.gateway });
      for (const [f, pool] of s.pools)
        pool.recovered(
          got.filter((a) => a.addr.family === f).map((a) => a.addr),
          now,
        );
      this.counters.settledRecovered += got.length;
      if (got.length > 0)
        s.log.info(
          { node: s.node, handle: h, addrs: got.map((a) => formatAddr(a.addr)) },
          'warm pool: a refill whose answer was lost had landed; its addresses join the idle queue',
        );
    }
  }
}
