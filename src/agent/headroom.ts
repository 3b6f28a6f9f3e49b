/**
 * The agent's view of its node's headroom (src/cluster/views/node-headroom.ts): a Periodic resync
 * (every `--headroom-interval`, and right after an ADD answered code 100) reads the datastore
 * (a few round trips, never on a pod's start path), adds the warm pool's idle addresses, keeps
 * the result for `agent status` and the metric, and — given an API server — sets or clears the
 * `podipam.io/ip-exhausted` taint on the agent's Node (node-taint.ts decides, node-taint-patch.ts
 * writes). Without an API server the exhausted state follows the same hysteresis in memory.
 * A resync whose datastore read fails changes nothing (the last figures stay, marked by `error`).
 */
import type { CoreV1Api } from '@kubernetes/client-node';
import type { FamilyHeadroom } from '../cluster/views/index.js';
import type { Log } from '../log/logger.js';
import type { Store } from '../store/index.js';
import { Periodic } from '../util/periodic.js';
import { type Family, decideTaints, exhaustedValue, nextExhausted } from './node-taint.js';

export interface HeadroomOptions {
  readonly node: string;
  readonly intervalMs: number;
  /** A family exhausted stops being so once its headroom is at least this (≥ 1). */
  readonly clearAt: number;
  /** The datastore to read (undefined: none in use yet; the resync waits for one). */
  readonly datastore: () => string | undefined;
  readonly openStore: (datastore: string) => Promise<Store>;
  /** The warm pool's idle addresses per family, and the pools it draws from. */
  readonly warm?: () => { readonly idle: Partial<Record<Family, number>>; readonly pools?: readonly string[] } | undefined;
  /** Taint the Node through this API client (the agent's one: src/agent/kube-client.ts); undefined: no API server, metric and status only. */
  readonly taintApi?: CoreV1Api;
  readonly log: Log;
}

/** One family's headroom as `agent status` shows it. */
export type FamilyHeadroomStatus = FamilyHeadroom & { readonly exhausted: boolean };

export interface HeadroomStatus {
  readonly intervalMs: number;
  readonly clearAt: number;
  /** "kube": the Node's taint is kept; "off": metric and status only (no API server). */
  readonly taint: 'kube' | 'off';
  /** By family ("ipv4", "ipv6"), families with a candidate pool only. */
  readonly families: Record<string, FamilyHeadroomStatus>;
  /** When the figures were computed (absent: not yet). */
  readonly at?: string;
  readonly datastore?: string;
  /** The last resync's failure (datastore or API server), if it failed. */
  readonly error?: string;
  /** The taint value last written or seen on the Node ("" for none). */
  readonly taintValue?: string;
}

export class HeadroomMonitor {
  readonly #o: HeadroomOptions;
  readonly #loop: Periodic;
  #families: Record<string, FamilyHeadroomStatus> = {};
  #exhausted = new Set<Family>();
  #at: string | undefined;
  #datastore: string | undefined;
  #error: string | undefined;
  #taintValue: string | undefined;

  constructor(o: HeadroomOptions) {
    this.#o = o;
    this.#loop = new Periodic({ name: 'headroom resync', intervalMs: o.intervalMs, firstDelayMs: 0, task: () => this.#resync(), log: o.log });
  }

  start(): void {
    this.#loop.start();
  }

  /** Resync now (after an exhausted ADD); resolves when it has run. */
  poke(): Promise<void> {
    return this.#loop.runNow();
  }

  stop(): Promise<void> {
    return this.#loop.stop();
  }

  status(): HeadroomStatus {
    return {
      intervalMs: this.#o.intervalMs,
      clearAt: this.#o.clearAt,
      taint: this.#o.taintApi !== undefined ? 'kube' : 'off',
      families: this.#families,
      ...(this.#at !== undefined ? { at: this.#at } : {}),
      ...(this.#datastore !== undefined ? { datastore: this.#datastore } : {}),
      ...(this.#error !== undefined ? { error: this.#error } : {}),
      ...(this.#taintValue !== undefined ? { taintValue: this.#taintValue } : {}),
    };
  }

  async #resync(): Promise<void> {
    try {
      await this.#run();
      this.#error = undefined;
    } catch (e) {
      this.#error = (e as Error).message;
      throw e;
    }
  }

  async #run(): Promise<void> {
    const datastore = this.#o.datastore();
    if (datastore === undefined) return;
    const warm = this.#o.warm?.();
    const { loadNodeHeadroom } = await import('../cluster/views/index.js');
    const store = await this.#o.openStore(datastore);
    const rows = await loadNodeHeadroom(store, this.#o.node, { ...(warm?.pools ? { onlyPools: warm.pools } : {}), ...(warm ? { idle: warm.idle } : {}) });
    this.#datastore = datastore;
    this.#at = new Date().toISOString();
    if (this.#o.taintApi === undefined) {
      this.#exhausted = nextExhausted(this.#exhausted, rows, this.#o.clearAt);
      this.#publish(rows);
      return;
    }
    // Published first: a failing API server leaves the figures current, only the taint behind.
    this.#publish(rows, nextExhausted(this.#exhausted, rows, this.#o.clearAt));
    const api = this.#o.taintApi;
    const { applyNodeTaints } = await import('./node-taint-patch.js');
    let exhausted = this.#exhausted;
    const r = await applyNodeTaints(api, this.#o.node, (current) => {
      const d = decideTaints(current, rows, this.#o.clearAt, new Date());
      exhausted = d.exhausted;
      return d.taints;
    });
    const value = exhaustedValue(exhausted);
    if (r.wrote !== undefined)
      this.#o.log.info(
        { node: this.#o.node, taint: value || '(none)', headroom: headroomText(rows) },
        value
          ? `node out of addresses: tainted podipam.io/ip-exhausted=${value}:NoSchedule`
          : 'node has addresses again: podipam.io/ip-exhausted taint removed',
      );
    this.#publish(rows, exhausted);
  }

  #publish(rows: readonly FamilyHeadroom[], exhausted: Set<Family> = this.#exhausted): void {
    this.#exhausted = exhausted;
    this.#taintValue = exhaustedValue(exhausted);
    this.#families = Object.fromEntries(rows.map((h) => [`ipv${h.family}`, { ...h, exhausted: exhausted.has(h.family) }]));
  }
}

function headroomText(rows: readonly FamilyHeadroom[]): string {
  return rows.map((h) => `ipv${h.family} ${h.headroom}`).join(', ');
}
