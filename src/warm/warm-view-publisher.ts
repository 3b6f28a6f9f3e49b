/**
 * The agent's holder view (src/cluster/records/agent-view-record.ts): what this node's warm pool holds
 * — idle addresses, cooling ones, sticky reservations, the pods it serves with their addresses —
 * put in the datastore for `ipam check` on any machine to compare with the blocks
 * (src/cluster/reports/check-holders.ts). Never a round trip of its own on a pod's path: the
 * write-behind (warm-write-behind.ts) asks `due` on each flush and puts the view in the same
 * fenced txn as the pod records it writes, or, with none queued, in a txn of its own on that
 * loop. A view goes out when it changed, at most every `viewIntervalMs`, and at least every
 * `refreshMs` (VIEW_REFRESH_FACTOR × viewIntervalMs) unchanged, so a check can tell an agent
 * that has not answered a change yet (its view is older than the change) from one that has.
 * Addresses being returned and refills not yet arrived are left out: the pool hands out neither.
 */
import { formatAddr } from '../ip/index.js';
import { type AgentView, agentViewKey, encodeAgentView } from '../cluster/records/index.js';
import { VIEW_INTERVAL_MS } from './warm-options.js';
import type { WarmState } from './warm-state.js';

/** An unchanged view is published again after this many publish intervals. */
export const VIEW_REFRESH_FACTOR = 6;

export class WarmViewPublisher {
  readonly #s: WarmState;
  readonly #intervalMs: number;
  #lastAt = Number.NEGATIVE_INFINITY;
  #lastBody: string | undefined;
  /** The view handed out by `due`, until its txn commits. */
  #pendingBody: string | undefined;
  #pendingAt = 0;

  constructor(state: WarmState) {
    this.#s = state;
    this.#intervalMs = state.o.viewIntervalMs ?? VIEW_INTERVAL_MS;
  }

  /**
   * The view record to write now with a txn that also writes `inTxn` queued pod records, or
   * undefined when none is due (nothing changed, or published less than an interval ago).
   * Synchronous: the view is the pool's state at this instant.
   */
  due(inTxn: number): { key: string; value: string } | undefined {
    const s = this.#s;
    const now = s.now();
    if (!s.isReady || now - this.#lastAt < this.#intervalMs) return undefined;
    const view = this.build(now, s.db.writeDepth().depth - inTxn);
    const body = JSON.stringify({ ...view, at: '' });
    if (body === this.#lastBody && now - this.#lastAt < VIEW_REFRESH_FACTOR * this.#intervalMs) return undefined;
    this.#pendingBody = body;
    this.#pendingAt = now;
    return { key: agentViewKey(s.node), value: encodeAgentView(view) };
  }

  /** The txn carrying the last `due` view committed. */
  published(): void {
    if (this.#pendingBody === undefined) return;
    this.#lastBody = this.#pendingBody;
    this.#lastAt = this.#pendingAt;
    this.#pendingBody = undefined;
  }

  /** The pool's holders at `now`; `pending`: pod record writes that will still be queued once this view is written. */
  build(now: number, pending: number): AgentView {
    const s = this.#s;
    const idle: string[] = [];
    const cooling: string[] = [];
    const sticky: AgentView['sticky'][number][] = [];
    for (const pool of s.pools.values()) {
      const snap = pool.snapshot();
      for (const e of snap.idle) (e.freeAt <= now ? idle : cooling).push(formatAddr(e.addr));
      for (const r of snap.reserved) {
        const holder = s.pods.store.holder(r.key);
        sticky.push({
          addr: formatAddr(r.addr),
          ...(holder?.namespace !== undefined ? { namespace: holder.namespace } : {}),
          ...(holder?.name !== undefined ? { name: holder.name } : {}),
        });
      }
    }
    const pods = s.db.pods().map((p) => {
      const known = s.pods.store.get(p.key);
      return {
        key: p.key,
        containerId: p.containerId,
        ifname: p.ifname,
        ...(known?.namespace !== undefined ? { namespace: known.namespace } : {}),
        ...(known?.name !== undefined ? { name: known.name } : {}),
        addrs: p.addrs,
      };
    });
    return {
      node: s.node,
      at: new Date(now).toISOString(),
      refreshMs: VIEW_REFRESH_FACTOR * this.#intervalMs,
      pending: Math.max(0, pending),
      idle,
      cooling,
      sticky,
      pods,
      truncated: false,
    };
  }
}
