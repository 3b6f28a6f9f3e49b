/**
 * The agent's holder view (src/cluster/records/agent-view-record.ts): what this node's warm pool holds
 * — idle addresses, cooling ones, sticky reservations, the pods it serves with their addresses —
 * put in the datastore for `ipam check` on any machine to compare with the blocks
 * (src/cluster/reports/check-holders.ts). Never a round trip of its own on a pod's path: the
 * write-behind (warm-write-behind.ts) asks `due` on each flush and puts the view in the same
 * fenced txn as the pod records it writes, or, with none queued, in a txn of its own on that
 * loop. A view goes out when it changed, at most every `viewIntervalMs`. Unchanged, every
 * `refreshMs` (VIEW_REFRESH_FACTOR × viewIntervalMs) only its heartbeat goes out
 * (`agent-beats/<node>` = `{viewRev, at}`, agent-beat-record.ts: tens of bytes, not the whole
 * view), through the same txn, so a check can tell an agent that has not answered a change yet
 * (neither its view nor its heartbeat is newer than the change) from one that has. `viewRev` is
 * the revision of the txn that wrote the view; the agent knows it only from that txn's answer,
 * so after a txn that failed, was refused by the fence or whose answer was lost, the next
 * publish is the whole view again (the datastore may hold either view).
 * Addresses being returned and refills not yet arrived are left out: the pool hands out neither.
 * The view names the config generation the pool has applied (`configRev`); when that changed
 * (an operator's reservation, drain, disable or node selector, seen at the watch event) the view
 * goes out on the next flush whatever the interval: it is the agent's answer that the change is
 * in force, which those commands wait for (src/warm/warm-answers.ts).
 */
import { formatAddr } from '../ip/index.js';
import { type AgentView, agentBeatKey, agentViewKey, encodeAgentBeat, encodeAgentView } from '../cluster/records/index.js';
import { VIEW_INTERVAL_MS } from './warm-options.js';
import type { WarmState } from './warm-state.js';

/** An unchanged view is vouched for by a heartbeat after this many publish intervals. */
export const VIEW_REFRESH_FACTOR = 6;
/** No config generation (a datastore's revisions are positive). */
const NO_CONFIG_REV = -1;

export class WarmViewPublisher {
  readonly #s: WarmState;
  readonly #intervalMs: number;
  /** When the view or its heartbeat last went out (a txn that committed). */
  #lastAt = Number.NEGATIVE_INFINITY;
  #lastBody: string | undefined;
  /** The revision of the txn that wrote `#lastBody`; undefined until one is known to hold it. */
  #viewRev: number | undefined;
  /** The config generation of the last view that went out; NO_CONFIG_REV when none (a number either way: one kind of value for V8). */
  #lastConfigRev = NO_CONFIG_REV;
  /** The record handed out by `due`, until its txn answers. */
  #pending: { kind: 'view' | 'beat'; body: string; at: number; configRev?: number | undefined } | undefined;

  constructor(state: WarmState) {
    this.#s = state;
    this.#intervalMs = state.o.viewIntervalMs ?? VIEW_INTERVAL_MS;
  }

  /**
   * The record to write now with a txn that also writes `inTxn` queued pod records — the whole
   * view when it changed (or the datastore may not hold the last one), its heartbeat when it is
   * unchanged and the refresh is due — or undefined when none is due (nothing changed, or
   * published less than an interval ago). Synchronous: the view is the pool's state at this instant.
   */
  due(inTxn: number): { key: string; value: string } | undefined {
    const s = this.#s;
    const now = s.now();
    if (!s.isReady) return undefined;
    const configChanged = s.poolsRev !== undefined && s.poolsRev !== this.#lastConfigRev;
    if (!configChanged && now - this.#lastAt < this.#intervalMs) return undefined;
    const view = this.build(now, s.db.writeDepth().depth - inTxn);
    const body = JSON.stringify({ ...view, at: '' });
    const unchanged = body === this.#lastBody;
    if (unchanged && now - this.#lastAt < VIEW_REFRESH_FACTOR * this.#intervalMs) return undefined;
    if (unchanged && this.#viewRev !== undefined) {
      this.#pending = { kind: 'beat', body, at: now };
      return { key: agentBeatKey(s.node), value: encodeAgentBeat({ viewRev: this.#viewRev, at: view.at }) };
    }
    this.#pending = { kind: 'view', body, at: now, configRev: view.configRev };
    return { key: agentViewKey(s.node), value: encodeAgentView(view) };
  }

  /** The txn carrying the last `due` record committed at revision `rev`. */
  published(rev: number): void {
    const p = this.#pending;
    if (p === undefined) return;
    if (p.kind === 'view') {
      this.#lastBody = p.body;
      this.#viewRev = rev;
      this.#lastConfigRev = p.configRev ?? NO_CONFIG_REV;
    }
    this.#lastAt = p.at;
    this.#pending = undefined;
  }

  /** The txn carrying the last `due` record failed, was refused, or its answer was lost: the next publish is the whole view. */
  failed(): void {
    this.#pending = undefined;
    this.#lastBody = undefined;
    this.#viewRev = undefined;
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
    // One query for every pod's names (a row deleted meanwhile is read alone, as before).
    const names = s.pods.store.liveNames();
    const pods = s.db.pods().map((p) => {
      const known = names.get(p.key) ?? s.pods.store.get(p.key);
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
      ...(s.poolsRev !== undefined ? { configRev: s.poolsRev } : {}),
    };
  }
}
