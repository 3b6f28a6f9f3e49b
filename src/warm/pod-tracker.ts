/**
 * What the warm pool knows about the pods behind its attachments (stickiness and pod GC):
 * - `identify` on ADD: the pod from CNI_ARGS (K8S_POD_NAMESPACE / K8S_POD_NAME / K8S_POD_UID);
 *   sticky or not — the pod's `podipam.io/sticky` annotation ("true": sticky whatever owns it;
 *   "false": not, even a StatefulSet's) when it has one, else a StatefulSet's pod (its owner kind
 *   from the host's watch-fed pod cache, PodDirectory, with no API request; else from the pod
 *   store; else through a GET to the API server), or the sticky policy without an API server;
 *   the pool key (`sticky/<ns>/<name>/<network>:<ifname>` for a
 *   sticky pod, so the pod's next incarnation — a new container id — asks for the same key,
 *   else the attachment key). A failed lookup never fails the ADD: the pod is not sticky (log
 *   line, `lookupsFailed`).
 * - the GC loop (with a kubeconfig): every `gcIntervalMs` (jittered ±10%) lists this node's pods
 *   and releases, through the warm service's release, the attachments whose pods are gone
 *   (pod-gc.ts decides); a failed list releases nothing (log line, `gcListFailures`), and a pod
 *   missing from a list that succeeded is asked for by name first — only its 404, or another
 *   uid under its name, proves it gone (a list can miss a live pod: the agent's node name is not
 *   the Kubernetes node's, a stale or partial answer). Every run
 *   (with or without a kubeconfig) purges pod-store rows deleted over POD_RETENTION_MS ago and
 *   reservation rows whose window ended.
 */
import { escape } from 'node:querystring';
import type { Log } from '../log/logger.js';
import type { PodDirectory } from '../model/pod-directory.js';
import { silentLog } from '../log/logger.js';
import type { OpenPodSource, PodInfo, PodSource } from './pod-source.js';
import { planPodGc } from './pod-gc.js';
import { POD_RETENTION_MS, PodStore, type PodStoreRow } from './pod-store.js';
import type { ResourceDb } from './resource-db.js';
import { type StickyPolicy, checkStickyPolicy, hasStickyFilter, matchesStickyFilters } from './sticky-policy.js';

/** The GC loop's default period (Terway: 5 minutes). */
export const GC_INTERVAL_MS = 300_000;
/** A pod lookup on ADD waits at most this long for the API server. */
export const LOOKUP_TIMEOUT_MS = 2_000;
/** After a failed lookup, ADDs skip the API server (not sticky) this long. */
export const LOOKUP_BACKOFF_MS = 5_000;
/** The owner kind of sticky pods. */
export const STICKY_OWNER_KIND = 'StatefulSet';

export interface PodTrackerOptions {
  readonly node: string;
  readonly stickyForMs: number;
  readonly policy?: StickyPolicy;
  /** Look pods up (and run the GC loop) through the API server of this kubeconfig file. */
  readonly kubeconfig?: string;
  readonly gcIntervalMs?: number;
  readonly lookupTimeoutMs?: number;
  readonly podRetentionMs?: number;
  /** Opens the pod source of `kubeconfig` (the host's Kubernetes client); needed with a kubeconfig. */
  readonly openPodSource?: OpenPodSource;
  /** The host's watch-fed pod cache: a pod it holds is not looked up on the API server. */
  readonly pods?: PodDirectory;
  readonly now: () => number;
  readonly log?: Log;
}

/** Who an ADD is for and under which pool key it takes its addresses. */
export interface PodIdentity {
  readonly namespace: string | undefined;
  readonly name: string | undefined;
  readonly uid: string | undefined;
  /** '' when the pod has no owner; undefined when not known. */
  readonly ownerKind: string | undefined;
  readonly sticky: boolean;
  readonly poolKey: string;
  /** A dead attachment (its pod gone or replaced) holds `poolKey`: release it (sticky) first, then acquire. */
  readonly transferFrom?: string;
}

export interface GcReport {
  readonly at: number;
  readonly ok: boolean;
  readonly error?: string;
  readonly listed?: number;
  readonly released: number;
}

export interface PodTrackerStatus {
  readonly kube: boolean;
  readonly stickyHits: number;
  readonly lookups: number;
  readonly lookupsFailed: number;
  /** Owner kinds read from the host's pod cache (no API request). */
  readonly cacheHits: number;
  readonly gcRuns: number;
  readonly gcReleases: number;
  readonly gcListFailures: number;
  readonly podStore: number;
  readonly purged: number;
  readonly lastGc: GcReport | undefined;
}

/** Releases these attachment keys as gone for good (not sticky); returns how many held addresses. */
export type GcRelease = (keys: readonly string[], now: number) => Promise<number>;

export class PodTracker {
  readonly store: PodStore;
  readonly counters = { stickyHits: 0, lookups: 0, lookupsFailed: 0, cacheHits: 0, gcRuns: 0, gcReleases: 0, gcListFailures: 0, purged: 0 };
  readonly #o: PodTrackerOptions;
  readonly #policy: StickyPolicy;
  readonly #pattern: RegExp | undefined;
  #kube: PodSource | undefined;
  #lookupBackoffUntil = 0;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<unknown> | undefined;
  #stopped = false;
  #lastGc: GcReport | undefined;
  readonly #log: Log;

  constructor(db: ResourceDb, o: PodTrackerOptions) {
    this.#o = o;
    this.#log = o.log ?? silentLog;
    this.#policy = o.policy ?? {};
    this.#pattern = checkStickyPolicy(this.#policy, (k) => k);
    this.store = new PodStore(db.database);
  }

  /** Loads the kubeconfig (throws when it cannot). */
  async open(): Promise<void> {
    if (this.#o.kubeconfig === undefined) return;
    if (!this.#o.openPodSource) throw new Error(`kubeconfig ${this.#o.kubeconfig}: this process has no Kubernetes client to read it with`);
    this.#kube = await this.#o.openPodSource(this.#o.kubeconfig, this.#o.lookupTimeoutMs ?? LOOKUP_TIMEOUT_MS);
  }

  /** The pool key and stickiness of a live attachment (its ADD's), else the attachment key, not sticky. */
  poolKeyOf(attachKey: string): { poolKey: string; sticky: boolean } {
    const r = this.store.get(attachKey);
    return r && r.deletedAt === undefined ? { poolKey: r.poolKey, sticky: r.sticky } : { poolKey: attachKey, sticky: false };
  }

  /**
   * See the top of this file. `sticky`: the pod's `podipam.io/sticky` annotation (or its
   * namespace's), overriding the owner and the policy. Never throws for the API server's sake.
   */
  async identify(
    req: { readonly cniArgs: ReadonlyMap<string, string>; readonly ifname: string; readonly network: string; readonly sticky?: boolean },
    attachKey: string,
    holds: boolean,
  ): Promise<PodIdentity> {
    const namespace = req.cniArgs.get('K8S_POD_NAMESPACE') || undefined;
    const name = req.cniArgs.get('K8S_POD_NAME') || undefined;
    let uid = req.cniArgs.get('K8S_POD_UID') || undefined;
    const plain = (ownerKind?: string): PodIdentity => ({ namespace, name, uid, ownerKind, sticky: false, poolKey: attachKey });
    // The same attachment again (an ADD retried): what its first ADD decided.
    if (holds) {
      const known = this.store.get(attachKey);
      if (known && known.deletedAt === undefined) {
        return { namespace: known.namespace, name: known.name, uid: known.uid, ownerKind: known.ownerKind, sticky: known.sticky, poolKey: known.poolKey };
      }
      return plain(); // held since before the pod store knew it: under its attachment key
    }
    if (namespace === undefined || name === undefined || this.#o.stickyForMs === 0 || req.sticky === false) return plain();
    const forced = req.sticky === true;
    if (!forced && !matchesStickyFilters(this.#policy, this.#pattern, namespace, name)) return plain();
    let ownerKind: string | undefined;
    // The host's cache, when it holds this pod (this uid): its owner with no API request.
    const inCache = this.#o.pods?.pod(namespace, name);
    if (inCache && (uid === undefined || inCache.uid === undefined || inCache.uid === uid)) {
      this.counters.cacheHits++;
      uid ??= inCache.uid;
      ownerKind = inCache.ownerKind ?? '';
      if (!forced && ownerKind !== STICKY_OWNER_KIND) return plain(ownerKind);
    } else if (forced) {
      // Sticky by its annotation: its owner does not matter, and is not asked for.
    } else if (this.#kube) {
      const cached = uid !== undefined ? this.store.byPod(namespace, name).find((r) => r.uid === uid && r.ownerKind !== undefined) : undefined;
      if (cached) ownerKind = cached.ownerKind;
      else {
        const pod = await this.#lookup(namespace, name);
        if (pod === undefined) return plain();
        if (uid !== undefined && pod.uid !== undefined && pod.uid !== uid) {
          this.#log.warn({ namespace, name, uid, apiUid: pod.uid }, 'pod lookup: the API server has another pod of this name; not sticky');
          this.counters.lookupsFailed++;
          return plain();
        }
        uid ??= pod.uid;
        ownerKind = pod.ownerKind ?? '';
      }
      if (ownerKind !== STICKY_OWNER_KIND) return plain(ownerKind);
    } else if (!hasStickyFilter(this.#policy)) {
      return plain();
    }
    const poolKey = stickyKey(namespace, name, req.network, req.ifname);
    const holder = this.store.holder(poolKey);
    if (holder && holder.key !== attachKey) {
      // A pod name exists once at a time: another uid, or a pod the GC saw gone, is dead.
      if (holder.goneAt !== undefined || (uid !== undefined && holder.uid !== undefined && holder.uid !== uid)) {
        return { namespace, name, uid, ownerKind, sticky: true, poolKey, transferFrom: holder.key };
      }
      this.#log.warn(
        { namespace, name, holder: holder.key, attachment: attachKey },
        'sticky pod: its pool key is held by another live attachment (not yet deleted); this one is not sticky',
      );
      return plain(ownerKind);
    }
    return { namespace, name, uid, ownerKind, sticky: true, poolKey };
  }

  async #lookup(namespace: string, name: string): Promise<PodInfo | undefined> {
    const now = this.#o.now();
    this.counters.lookups++;
    if (now < this.#lookupBackoffUntil) {
      this.counters.lookupsFailed++;
      this.#log.warn({ namespace, name }, 'pod lookup skipped (the API server failed a moment ago); not sticky');
      return undefined;
    }
    try {
      const pod = await this.#kube!.get(namespace, name);
      if (pod === undefined) {
        this.counters.lookupsFailed++;
        this.#log.warn({ namespace, name }, 'pod lookup: no such pod in the API server; not sticky');
      }
      return pod;
    } catch (e) {
      this.counters.lookupsFailed++;
      this.#lookupBackoffUntil = this.#o.now() + LOOKUP_BACKOFF_MS;
      this.#log.warn({ namespace, name, error: (e as Error).message }, 'pod lookup failed; not sticky');
      return undefined;
    }
  }

  /** Starts the loop (GC with a kubeconfig, purge always). */
  start(release: GcRelease): void {
    const schedule = (): void => {
      if (this.#stopped) return;
      const base = this.#o.gcIntervalMs ?? GC_INTERVAL_MS;
      this.#timer = setTimeout(
        () => {
          this.#running = this.runOnce(release)
            .catch((e: Error) => this.#log.error({ error: e.message }, 'pod GC failed'))
            .finally(() => {
              this.#running = undefined;
              schedule();
            });
        },
        Math.round(base * (0.9 + 0.2 * Math.random())),
      );
      this.#timer.unref();
    };
    schedule();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running;
  }

  /** One run: purge, then (with a kubeconfig) list, decide, release. */
  async runOnce(release: GcRelease): Promise<GcReport | undefined> {
    const now = this.#o.now();
    this.counters.purged += this.store.purge(now, this.#o.podRetentionMs ?? POD_RETENTION_MS);
    this.store.expireReservations(now);
    if (!this.#kube) return undefined;
    this.counters.gcRuns++;
    const listedAt = this.#o.now();
    let listed: PodInfo[];
    try {
      listed = await this.#kube.listNode(this.#o.node);
    } catch (e) {
      this.counters.gcListFailures++;
      this.#lastGc = { at: listedAt, ok: false, error: (e as Error).message, released: 0 };
      this.#log.warn({ node: this.#o.node, error: (e as Error).message }, "pod GC: cannot list this node's pods; nothing released");
      return this.#lastGc;
    }
    const t = this.#o.now();
    const live = this.store.live();
    let plan = planPodGc({ listed, attachments: live, listedAt, now: t, stickyForMs: this.#o.stickyForMs });
    const missing = new Set([...plan.gone, ...plan.release]);
    if (missing.size > 0) {
      // Absence from a list is no proof (the agent's node name may not be the Kubernetes node's,
      // the answer may be stale or partial): each missing pod is asked for; only its 404, or
      // another uid under its name, says it is gone. A pod that answers is kept; one whose get
      // fails is left for a later run.
      const { present, unknown } = await this.#confirm(live.filter((a) => missing.has(a.key)));
      plan = planPodGc({
        listed: [...listed, ...present],
        attachments: live.filter((a) => !unknown.has(a.key)),
        listedAt,
        now: t,
        stickyForMs: this.#o.stickyForMs,
      });
    }
    for (const k of plan.gone) this.store.gone(k, listedAt);
    for (const k of plan.back) this.store.back(k);
    let released: number;
    if (plan.release.length > 0) {
      released = await release(plan.release, t);
      this.counters.gcReleases += plan.release.length;
      this.#log.info(
        { node: this.#o.node, attachments: plan.release, addresses: released },
        'pod GC: released the attachments of pods gone from the API server',
      );
    }
    this.#lastGc = { at: listedAt, ok: true, listed: listed.length, released: plan.release.length };
    return this.#lastGc;
  }

  /** Gets each pod of `candidates` (8 at a time): the pods that exist as these attachments' own, and the attachment keys whose get failed. */
  async #confirm(candidates: readonly PodStoreRow[]): Promise<{ present: PodInfo[]; unknown: Set<string> }> {
    const byPod = new Map<string, PodStoreRow[]>();
    for (const a of candidates)
      if (a.namespace !== undefined && a.name !== undefined) byPod.set(`${a.namespace}/${a.name}`, [...(byPod.get(`${a.namespace}/${a.name}`) ?? []), a]);
    const present: PodInfo[] = [];
    const unknown = new Set<string>();
    const kept: string[] = [];
    const pods = [...byPod.values()];
    for (let i = 0; i < pods.length; i += 8) {
      await Promise.all(
        pods.slice(i, i + 8).map(async (rows) => {
          const { namespace, name } = rows[0] as PodStoreRow;
          try {
            const pod = await this.#kube!.get(namespace as string, name as string);
            if (pod === undefined) return;
            present.push(pod);
            if (rows.some((a) => a.uid === undefined || pod.uid === undefined || a.uid === pod.uid))
              kept.push(`${namespace}/${name}${pod.node === this.#o.node ? '' : ` (on node ${JSON.stringify(pod.node ?? '')})`}`);
          } catch (e) {
            for (const a of rows) unknown.add(a.key);
            this.#log.warn({ namespace, name, error: (e as Error).message }, 'pod GC: a pod missing from the list cannot be looked up; kept until a later run');
          }
        }),
      );
    }
    if (kept.length > 0) {
      this.#log.warn(
        { node: this.#o.node, pods: kept },
        "pod GC: pods missing from this node's pod list still exist in the API server: kept (is the agent's node name the Kubernetes node name?)",
      );
    }
    return { present, unknown };
  }

  /** An ADD got its sticky reservation back (counted here, reported as `stickyHits`). */
  stickyHit(): void {
    this.counters.stickyHits++;
  }

  report(): PodTrackerStatus {
    return { kube: this.#kube !== undefined, ...this.counters, podStore: this.store.count(), lastGc: this.#lastGc };
  }
}

/** The pool key of a sticky pod's attachment: namespace/name, the network and ifname (one pod may attach twice). */
export function stickyKey(namespace: string, name: string, network: string, ifname: string): string {
  return `sticky/${escape(namespace)}/${escape(name)}/${escape(network)}:${escape(ifname)}`;
}

export type { PodStoreRow };
