/**
 * The agent's masquerade (src/masq/): on start and every `intervalMs`, the datastore's pools
 * (every pool, disabled or being deleted included: their pods still run) become the node's
 * PODIPAM-MASQ chains — traffic from a pod pool to anything outside every pool leaves with the
 * node's address, pod-to-pod traffic never does. The loop runs beside the calls and never in
 * their way: a pod start does not wait for it, and iptables missing, refusing or the datastore
 * down only make it report (a warning per distinct failure, its recovery once, the status
 * `masquerade` section) and try again next period.
 */
import { decodePool } from '../cluster/records/index.js';
import { POOL_PREFIX } from '../cluster/records/index.js';
import type { Log } from '../log/logger.js';
import type { FamilyOutcome } from '../masq/masquerade-iptables.js';
import type { Store } from '../store/index.js';
import { listAll } from '../store/list-all.js';
import { Periodic } from '../util/periodic.js';

type Prefix = ReturnType<typeof decodePool>['cidr'];

export interface MasqueradeLoopOptions {
  readonly intervalMs: number;
  /** The datastore's store (shared with the calls); undefined while the agent knows none (no --datastore, no cluster call yet). */
  readonly openStore: () => Promise<Store | undefined>;
  /** Applies the chains (default: src/masq/masquerade-iptables.ts syncMasquerade). */
  readonly sync?: (pools: readonly Prefix[]) => Promise<FamilyOutcome[]>;
  readonly log: Log;
}

export interface MasqueradeStatus {
  /** pending (no sync finished yet, or no datastore known yet), synced (every family written), failed (see error). */
  readonly state: 'pending' | 'synced' | 'failed';
  readonly intervalMs: number;
  readonly syncs: number;
  readonly failures: number;
  readonly lastSyncAt?: string;
  /** Per family, as the last sync that reached iptables left it. */
  readonly families: readonly FamilyOutcome[];
  readonly error?: string;
}

export class MasqueradeLoop {
  readonly #o: MasqueradeLoopOptions;
  readonly #loop: Periodic;
  #families: readonly FamilyOutcome[] = [];
  #state: MasqueradeStatus['state'] = 'pending';
  #error: string | undefined;
  #lastSyncAt: string | undefined;

  constructor(o: MasqueradeLoopOptions) {
    this.#o = o;
    this.#loop = new Periodic({ name: 'masquerade sync', intervalMs: o.intervalMs, firstDelayMs: 0, jitter: 0.1, task: () => this.#sync(), log: o.log });
  }

  start(): void {
    this.#loop.start();
  }

  /** Syncs now (tests, a pool change seen); resolves when that sync has ended, never rejects. */
  runNow(): Promise<void> {
    return this.#loop.runNow();
  }

  stop(): Promise<void> {
    return this.#loop.stop();
  }

  status(): MasqueradeStatus {
    const p = this.#loop.status();
    return {
      state: this.#state,
      intervalMs: p.intervalMs,
      syncs: p.runs,
      failures: p.failures,
      ...(this.#lastSyncAt !== undefined ? { lastSyncAt: this.#lastSyncAt } : {}),
      families: this.#families,
      ...(this.#error !== undefined ? { error: this.#error } : {}),
    };
  }

  async #sync(): Promise<void> {
    let pools: Prefix[];
    try {
      const store = await this.#o.openStore();
      if (store === undefined) return;
      pools = (await listAll(store, POOL_PREFIX)).map((e) => decodePool(e).cidr);
    } catch (e) {
      this.#fail(`reading the pools: ${(e as Error).message}`);
    }
    const sync = this.#o.sync ?? (await import('../masq/masquerade-iptables.js')).syncMasquerade;
    this.#families = await sync(pools);
    this.#lastSyncAt = new Date().toISOString();
    const failed = this.#families.filter((f) => f.state === 'failed');
    if (failed.length > 0) this.#fail(failed.map((f) => `IPv${f.family}: ${f.error}`).join('; '));
    if (this.#state !== 'synced')
      this.#o.log.info({ families: this.#families.map((f) => ({ family: f.family, state: f.state, pools: f.cidrs })) }, 'masquerade synced');
    this.#state = 'synced';
    this.#error = undefined;
  }

  /** Records the failure and throws it (the loop logs it once per distinct message). */
  #fail(message: string): never {
    this.#state = 'failed';
    this.#error = message;
    throw new Error(`masquerade: ${message}`);
  }
}
