/**
 * Runtime reconciliation, the I/O: each pass asks the container runtime for its sandboxes
 * (CRI ListPodSandbox, every state), keeps the last few successful answers, lists this node's
 * allocations from every source, and frees what planRuntimeReconcile proves stale through the
 * source's own release path (reason `runtime-absent`). A failed or undecodable answer clears
 * the kept answers — proof then needs two fresh ones — and frees nothing; so does a source that
 * cannot list (its allocations are not judged). Right before each release the in-flight
 * ADD/DEL ids are asked again. Every release is logged with its evidence (the two list times,
 * the container id, the age) and counted; status() reports suspected leaks, errors, the last
 * success and the last releases. `dryRun` plans and frees nothing.
 */
import type { Log } from '../log/logger.js';
import { Periodic } from '../util/periodic.js';
import type { AllocationSource, SourcedAllocation } from './allocation-source.js';
import type { CriRuntime } from './cri-runtime.js';
import { type AbsenceEvidence, type RuntimeReconcilePlan, type SandboxList, type SuspectReason, planRuntimeReconcile } from './plan-runtime-reconcile.js';

/** Successful answers kept (the proof uses two; one more lets a shrink be seen). */
const KEPT_LISTS = 3;
/** Entries kept in the status's lists. */
const REPORTED = 50;

export interface RuntimeReconcilerOptions {
  /** Names the runtime in logs and status (its endpoint). */
  readonly endpoint: string;
  readonly runtime: Pick<CriRuntime, 'listPodSandbox'>;
  /** The sources to judge this pass (asked each pass: the agent opens datastores as calls come). */
  readonly sources: () => readonly AllocationSource[];
  /** Container ids with an ADD or DEL being served now. */
  readonly inFlight: () => ReadonlySet<string>;
  /**
   * When an ADD or DEL of a container id last began in this process, if it remembers one
   * (util/call-tracker.ts): the allocation's age counts from then at the latest (a repeated ADD
   * restarts the grace even when it rewrote no record), and one begun since the listing stops
   * its release.
   */
  readonly touchedAt?: (containerId: string) => number | undefined;
  readonly graceMs: number;
  /** Period of the loop (start()); also the least spacing of the two answers that prove an absence. */
  readonly intervalMs: number;
  readonly log: Log;
  readonly dryRun?: boolean;
  readonly now?: () => number;
}

export interface SuspectedLeak {
  readonly source: string;
  readonly network: string;
  readonly containerId: string;
  readonly ifname: string;
  readonly addresses: readonly string[];
  readonly reason: SuspectReason;
}

export interface FreedLeak extends AbsenceEvidence {
  readonly source: string;
  readonly network: string;
  readonly ifname: string;
  /** Addresses freed (dry run: that would be freed). */
  readonly addresses: readonly string[];
  /** When it was freed (ms). */
  readonly at: number;
}

export interface RuntimeReconcileStatus {
  readonly endpoint: string;
  readonly intervalMs: number;
  readonly graceMs: number;
  /** pending: fewer than two answers yet; ok: the last pass completed; failed: the runtime or a source failed; refused: the lists were not trusted. */
  readonly state: 'pending' | 'ok' | 'failed' | 'refused';
  readonly passes: number;
  readonly errors: number;
  readonly lastSuccessAt?: string;
  readonly lastError?: string;
  readonly refused?: string;
  /** Sandboxes in the runtime's latest answer. */
  readonly sandboxes?: number;
  readonly allocations: number;
  readonly suspectedCount: number;
  /** The first REPORTED suspected leaks. */
  readonly suspected: readonly SuspectedLeak[];
  /** Allocations freed, by reason. */
  readonly freed: Readonly<Record<string, number>>;
  /** The last REPORTED releases, newest last. */
  readonly lastFreed: readonly FreedLeak[];
}

/** What one pass saw and did. */
export interface PassOutcome {
  readonly plan: RuntimeReconcilePlan<SourcedAllocation>;
  readonly freed: readonly FreedLeak[];
  /** Sources that could not list (their allocations were not judged). */
  readonly sourceErrors: readonly string[];
}

export class RuntimeReconciler {
  readonly #o: RuntimeReconcilerOptions;
  readonly #now: () => number;
  readonly #loop: Periodic;
  #lists: SandboxList[] = [];
  readonly #firstSeen = new Map<string, number>();
  #passes = 0;
  #errors = 0;
  #lastSuccessAt: number | undefined;
  #lastError: string | undefined;
  #refused: string | undefined;
  #allocations = 0;
  #suspected: SuspectedLeak[] = [];
  #freedCount = 0;
  readonly #lastFreed: FreedLeak[] = [];

  constructor(o: RuntimeReconcilerOptions) {
    if (!(o.graceMs >= 0) || !(o.intervalMs > 0))
      throw new RangeError(`runtime reconciliation: grace ${o.graceMs} ms and interval ${o.intervalMs} ms must be ≥ 0 and > 0`);
    this.#o = o;
    this.#now = o.now ?? Date.now;
    this.#loop = new Periodic({
      name: 'runtime reconciliation',
      intervalMs: o.intervalMs,
      firstDelayMs: 0,
      jitter: 0.1,
      task: () => this.pass().then(() => undefined),
      log: o.log,
    });
  }

  start(): void {
    this.#loop.start();
  }

  stop(): Promise<void> {
    return this.#loop.stop();
  }

  /** Errors counted so far (metrics). */
  get errors(): number {
    return this.#errors;
  }

  /**
   * One pass (see the module comment). Rejects when the runtime gave no usable answer or a
   * source could not list (after recording it); nothing is freed on a runtime failure.
   */
  async pass(): Promise<PassOutcome> {
    this.#passes++;
    const at = this.#now();
    let ids: Set<string>;
    try {
      ids = new Set((await this.#o.runtime.listPodSandbox()).map((s) => s.id));
    } catch (e) {
      this.#lists = [];
      this.#fail(`listing the runtime's sandboxes: ${(e as Error).message}`, e);
    }
    this.#lists = [...this.#lists, { at, ids }].slice(-KEPT_LISTS);
    const allocations: SourcedAllocation[] = [];
    const sourceErrors: string[] = [];
    for (const s of this.#o.sources()) {
      try {
        allocations.push(...(await s.list()));
      } catch (e) {
        sourceErrors.push(`${s.name}: ${(e as Error).message}`);
      }
    }
    const seenAt = this.#now();
    // A call began for the id: another version of the allocation, its sandbox's creation begun
    // no earlier than that call.
    const touched = new Map<string, number | undefined>();
    const versions = allocations.map((a) => {
      const t = this.#o.touchedAt?.(a.containerId);
      const v = t === undefined ? a : { ...a, id: `${a.id}|touched@${t}`, since: Math.max(a.since ?? t, t) };
      touched.set(v.id, t);
      return v;
    });
    const present = new Set(versions.map((a) => a.id));
    for (const id of this.#firstSeen.keys()) if (!present.has(id)) this.#firstSeen.delete(id);
    const judged = versions.map((a) => {
      const first = this.#firstSeen.get(a.id);
      if (first === undefined) this.#firstSeen.set(a.id, seenAt);
      // Seen for the first time now: it existed by the time its listing began (`at` ≤ seenAt).
      return { ...a, firstSeen: first ?? seenAt };
    });
    const plan = planRuntimeReconcile({
      allocations: judged,
      lists: this.#lists,
      inFlight: this.#o.inFlight(),
      graceMs: this.#o.graceMs,
      spacingMs: this.#o.intervalMs,
      now: seenAt,
    });
    this.#allocations = judged.length;
    this.#suspected = plan.suspected.map(({ allocation: a, reason }) => ({
      source: a.source,
      network: a.network,
      containerId: a.containerId,
      ifname: a.ifname,
      addresses: a.addresses,
      reason,
    }));
    this.#refused = plan.refused;
    if (plan.refused !== undefined)
      this.#o.log.warn({ endpoint: this.#o.endpoint, refused: plan.refused }, `runtime reconciliation: nothing freed: ${plan.refused}`);
    const freed: FreedLeak[] = [];
    const releaseErrors: string[] = [];
    for (const { allocation: a, evidence } of plan.free) {
      if (this.#o.inFlight().has(a.containerId)) continue; // an ADD or DEL runs
      if (this.#o.touchedAt?.(a.containerId) !== touched.get(a.id)) continue; // one began since the listing
      const source = this.#o.sources().find((s) => s.name === a.source);
      if (!source) continue;
      let addresses: readonly string[] = a.addresses;
      if (!this.#o.dryRun) {
        try {
          addresses = await source.release(a, evidence);
        } catch (e) {
          releaseErrors.push(`${a.source} ${a.containerId}/${a.ifname}: ${(e as Error).message}`);
          continue;
        }
        if (addresses.length === 0) continue; // changed since it was listed: not what the proof was about
      }
      const f: FreedLeak = { ...evidence, source: a.source, network: a.network, ifname: a.ifname, addresses, at: this.#now() };
      freed.push(f);
      if (this.#o.dryRun) continue;
      this.#freedCount++;
      this.#lastFreed.push(f);
      if (this.#lastFreed.length > REPORTED) this.#lastFreed.shift();
      this.#firstSeen.delete(a.id);
      this.#o.log.info(
        {
          reason: 'runtime-absent',
          source: a.source,
          network: a.network,
          containerId: a.containerId,
          ifname: a.ifname,
          addresses,
          lists: evidence.lists.map((t) => new Date(t).toISOString()),
          ageMs: evidence.ageMs,
        },
        `runtime reconciliation freed ${a.containerId}/${a.ifname} (${addresses.join(', ')}): not among the runtime's sandboxes at ${new Date(evidence.lists[0]).toISOString()} and ${new Date(evidence.lists[1]).toISOString()}, ${Math.round(evidence.ageMs / 1000)} s old`,
      );
    }
    const problems = [...sourceErrors, ...releaseErrors];
    if (problems.length > 0) this.#fail(problems.join('; '));
    this.#lastSuccessAt = this.#now();
    this.#lastError = undefined;
    return { plan, freed, sourceErrors };
  }

  status(): RuntimeReconcileStatus {
    const state: RuntimeReconcileStatus['state'] =
      this.#lastError !== undefined ? 'failed' : this.#refused !== undefined ? 'refused' : this.#lists.length < 2 ? 'pending' : 'ok';
    const latest = this.#lists[this.#lists.length - 1];
    return {
      endpoint: this.#o.endpoint,
      intervalMs: this.#o.intervalMs,
      graceMs: this.#o.graceMs,
      state,
      passes: this.#passes,
      errors: this.#errors,
      ...(this.#lastSuccessAt !== undefined ? { lastSuccessAt: new Date(this.#lastSuccessAt).toISOString() } : {}),
      ...(this.#lastError !== undefined ? { lastError: this.#lastError } : {}),
      ...(this.#refused !== undefined ? { refused: this.#refused } : {}),
      ...(latest ? { sandboxes: latest.ids.size } : {}),
      allocations: this.#allocations,
      suspectedCount: this.#suspected.length,
      suspected: this.#suspected.slice(0, REPORTED),
      freed: { 'runtime-absent': this.#freedCount },
      lastFreed: [...this.#lastFreed],
    };
  }

  #fail(message: string, cause?: unknown): never {
    this.#errors++;
    this.#lastError = message;
    throw new Error(`runtime reconciliation (${this.#o.endpoint}): ${message}`, cause === undefined ? undefined : { cause });
  }
}
