/**
 * The agent's Prometheus metrics: their registration in one registry, apart from any HTTP
 * server (metrics-listener.ts serves them; `podipam docs:metrics` only reads them). Label values are bounded: the verb is one of
 * the CNI verbs or "other" (agent-stats.ts verbLabel), the result "ok" or "code N".
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Agent } from './agent-server.js';
import { WARM_UP_FRESH_COUNTERS } from './warm-up.js';

export class AgentMetrics {
  readonly registry = new Registry();
  readonly requests: Counter<'verb' | 'result'>;
  readonly duration: Histogram<'verb'>;
  /** The runtime's calls' counters (`requests`, `duration`) as one object of callMetrics' shape, as the warm-up's are. */
  readonly #live: CallMetrics;
  /**
   * The warm-up's calls' counters: registered nowhere, never read; made afresh every
   * WARM_UP_FRESH_COUNTERS of its calls, so that the code counting a label's first call runs
   * during the warm-up too (the agent's first ADD and DEL are each one).
   */
  #warmUp = callMetrics([]);
  #warmUpCalls = 0;

  constructor(agent: () => Agent | undefined) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'podipam_agent_process_' });
    this.#live = callMetrics(registers);
    ({ requests: this.requests, duration: this.duration } = this.#live);
    new Gauge({
      name: 'podipam_agent_in_flight',
      help: 'CNI calls being served',
      registers,
      collect() {
        this.set(agent()?.stats.inFlight ?? 0);
      },
    });
    const hosted = (): ReturnType<Agent['hostedStatus']> | undefined => agent()?.hostedStatus();
    new Gauge({
      name: 'podipam_agent_datastore_round_trips',
      help: 'datastore round trips (reads, lists, transactions) since start',
      registers,
      collect() {
        this.set(hosted()?.datastore.roundTrips ?? 0);
      },
    });
    new Gauge({
      name: 'podipam_agent_group_commits',
      help: 'transactions that carried several ADDs (group commit)',
      registers,
      collect() {
        this.set(hosted()?.datastore.groupCommits ?? 0);
      },
    });
    const warm = (): import('../warm/warm-service.js').WarmStatus | undefined => hosted()?.warmPool;
    new Gauge({
      name: 'podipam_agent_warm_addresses',
      help: 'warm pool addresses by family and state (idle, in_use, reserved, returning, pending)',
      labelNames: ['family', 'state'],
      registers,
      collect() {
        for (const [family, c] of Object.entries(warm()?.pools ?? {})) {
          for (const [state, v] of [
            ['idle', c.idle],
            ['in_use', c.inUse],
            ['reserved', c.reserved],
            ['returning', c.returning],
            ['pending', c.pending],
          ] as const)
            this.set({ family, state }, v);
        }
      },
    });
    new Gauge({
      name: 'podipam_agent_warm_capacity',
      help: 'warm pool capacity per family',
      registers,
      collect() {
        this.set(warm()?.capacity ?? 0);
      },
    });
    const counter = (name: string, help: string, pick: (w: import('../warm/warm-service.js').WarmStatus) => number): void => {
      new Gauge({
        name,
        help,
        registers,
        collect() {
          const w = warm();
          this.set(w ? pick(w) : 0);
        },
      });
    };
    counter('podipam_agent_warm_hits', 'ADDs served from the warm pool without a datastore round trip', (w) => w.hits);
    counter('podipam_agent_warm_misses', 'ADDs that found the warm pool empty and waited for a refill', (w) => w.misses);
    counter('podipam_agent_warm_refill_transactions', 'warm pool refill transactions', (w) => w.refillTxns);
    counter('podipam_agent_warm_return_transactions', 'warm pool return transactions', (w) => w.returnTxns);
    counter('podipam_agent_warm_write_behind_depth', 'pod records queued for the datastore', (w) => w.writeBehindDepth);
    counter('podipam_agent_warm_write_behind_age_seconds', 'age of the oldest queued pod record', (w) => w.writeBehindAgeMs / 1000);
    counter(
      'podipam_agent_warm_dropped_on_reconcile',
      'resource DB addresses dropped at start because the datastore no longer held them',
      (w) => w.droppedOnReconcile,
    );
    counter('podipam_agent_sticky_reservations', 'sticky reservations: addresses released by sticky pods, waiting for them', (w) => w.stickyReservations);
    counter('podipam_agent_sticky_hits', 'ADDs that got back the address their pod (namespace/name) released', (w) => w.pods.stickyHits);
    counter('podipam_agent_pod_lookups', 'pod lookups in the API server on ADD', (w) => w.pods.lookups);
    counter('podipam_agent_pod_lookups_failed', 'pod lookups on ADD that failed (the pod was not sticky)', (w) => w.pods.lookupsFailed);
    counter('podipam_agent_gc_runs', "pod GC runs that asked the API server for this node's pods", (w) => w.pods.gcRuns);
    counter('podipam_agent_gc_releases', 'attachments the pod GC released because their pods were gone from the API server', (w) => w.pods.gcReleases);
    counter('podipam_agent_gc_list_failures', 'pod GC runs whose list failed (nothing released)', (w) => w.pods.gcListFailures);
    counter('podipam_agent_pod_store_pods', 'pods in the pod store (deleted ones kept an hour)', (w) => w.pods.podStore);
    const cache = (): import('./pod-cache.js').PodCacheStatus | undefined => hosted()?.podCache;
    new Gauge({
      name: 'podipam_agent_pod_cache_synced',
      help: 'the pod cache has listed pods and namespaces (1) or not yet (0); absent: no API server',
      registers,
      collect() {
        const c = cache();
        if (c) this.set(c.synced ? 1 : 0);
      },
    });
    new Gauge({
      name: 'podipam_agent_pod_cache_pods',
      help: 'pods of this node in the pod cache',
      registers,
      collect() {
        const c = cache();
        if (c) this.set(c.pods);
      },
    });
    new Gauge({
      name: 'podipam_agent_pod_cache_namespaces',
      help: 'namespaces in the pod cache',
      registers,
      collect() {
        const c = cache();
        if (c) this.set(c.namespaces);
      },
    });
    const cacheCounter = (name: string, help: string, pick: (c: import('./pod-cache.js').PodCacheStatus) => number): void => {
      new Counter({
        name,
        help,
        registers,
        collect() {
          const c = cache();
          if (!c) return;
          this.reset();
          this.inc(pick(c));
        },
      });
    };
    cacheCounter('podipam_agent_pod_cache_relists_total', 'pod cache lists after the first (after a 410 Gone or a failed list)', (c) => c.relists);
    cacheCounter('podipam_agent_pod_cache_watch_resumes_total', 'pod cache watches resumed from the last resourceVersion', (c) => c.resumes);
    cacheCounter('podipam_agent_pod_cache_events_total', 'pod and namespace watch events applied to the pod cache', (c) => c.events);
    cacheCounter('podipam_agent_pod_cache_errors_total', 'pod cache lists and watches that failed', (c) => c.errors);
    new Gauge({
      name: 'podipam_node_headroom_addresses',
      help: 'addresses the node can still hand out by itself, by family: free in its blocks + idle in the warm pool + in blocks it may still claim (src/cluster/views/node-headroom.ts)',
      labelNames: ['family'],
      registers,
      collect() {
        this.reset();
        for (const [family, h] of Object.entries(hosted()?.headroom?.families ?? {})) this.set({ family }, h.headroom);
      },
    });
    new Gauge({
      name: 'podipam_agent_masquerade_synced',
      help: 'the node masquerade (PODIPAM-MASQ) of a family as the last sync left it: 1 written, 0 failed; absent: --no-masquerade or no sync yet',
      labelNames: ['family'],
      registers,
      collect() {
        this.reset();
        for (const f of hosted()?.masquerade?.families ?? [])
          if (f.state === 'synced' || f.state === 'failed') this.set({ family: `ipv${f.family}` }, f.state === 'synced' ? 1 : 0);
      },
    });
    const rr = (): import('../reconcile/runtime-reconciler.js').RuntimeReconcileStatus | undefined => hosted()?.runtimeReconcile;
    new Gauge({
      name: 'podipam_runtime_reconcile_suspected_leaks',
      help: "allocations of this node that the runtime's latest sandbox list lacks, not (yet) proven gone (absent: no --runtime-endpoint)",
      registers,
      collect() {
        const r = rr();
        if (r) this.set(r.suspectedCount);
      },
    });
    new Counter({
      name: 'podipam_runtime_reconcile_freed_total',
      help: 'allocations runtime reconciliation freed, by reason',
      labelNames: ['reason'],
      registers,
      collect() {
        const r = rr();
        if (!r) return;
        this.reset();
        for (const [reason, n] of Object.entries(r.freed)) this.inc({ reason }, n);
      },
    });
    new Counter({
      name: 'podipam_runtime_reconcile_errors_total',
      help: 'runtime reconciliation passes that failed (the runtime unreachable or answering an error, a source that could not list or release)',
      registers,
      collect() {
        const r = rr();
        if (!r) return;
        this.reset();
        this.inc(r.errors);
      },
    });
    new Gauge({
      name: 'podipam_runtime_reconcile_last_success_timestamp_seconds',
      help: 'when a runtime reconciliation pass last completed (absent: none yet)',
      registers,
      collect() {
        const r = rr();
        if (r?.lastSuccessAt) this.set(Date.parse(r.lastSuccessAt) / 1000);
      },
    });
    new Gauge({
      name: 'podipam_agent_grouped_adds',
      help: 'ADDs written by group commits',
      registers,
      collect() {
        this.set(hosted()?.datastore.groupedAdds ?? 0);
      },
    });
    new Gauge({
      name: 'podipam_agent_group_releases',
      help: 'transactions that carried several DELs (group release)',
      registers,
      collect() {
        this.set(hosted()?.datastore.groupReleases ?? 0);
      },
    });
    new Gauge({
      name: 'podipam_agent_grouped_dels',
      help: 'DELs written by group releases',
      registers,
      collect() {
        this.set(hosted()?.datastore.groupedDels ?? 0);
      },
    });
  }

  /**
   * Counts a call; the warm-up's (`warmUp`) in a pair of counters no registry holds: the same code
   * runs for them, so the first pods do not meet it cold. (Its first run made V8 throw away the
   * optimised code of a dozen functions of the request path: measured with --trace-deopt.)
   */
  observe(c: { verb: string; result: string; ms: number }, warmUp = false): void {
    if (warmUp && ++this.#warmUpCalls % WARM_UP_FRESH_COUNTERS === 0) this.#warmUp = callMetrics([]);
    // Both loaded on every call, the warm-up's too (V8 optimises during the warm-up only: a load
    // it never ran there would throw the optimised code away at the first pod's call).
    const live = this.#live;
    const warm = this.#warmUp;
    const m = warmUp ? warm : live;
    m.requests.inc({ verb: c.verb, result: c.result });
    m.duration.observe({ verb: c.verb }, c.ms / 1000);
  }
}

interface CallMetrics {
  readonly requests: Counter<'verb' | 'result'>;
  readonly duration: Histogram<'verb'>;
}

/** The calls' counter and duration histogram, in `registers`. */
function callMetrics(registers: Registry[]): CallMetrics {
  return {
    requests: new Counter({
      name: 'podipam_agent_requests_total',
      help: 'CNI calls served, by verb and result ("ok" or "code N")',
      labelNames: ['verb', 'result'],
      registers,
    }),
    duration: new Histogram({
      name: 'podipam_agent_request_duration_seconds',
      help: 'CNI call durations inside the agent, by verb',
      labelNames: ['verb'],
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5],
      registers,
    }),
  };
}
