/**
 * What `podipam agent status` reports: uptime, requests by verb and result, latency
 * percentiles per verb (over the last LATENCY_WINDOW calls), back ends in use. Pure counters.
 */

/** Calls per verb whose latencies are kept for the percentiles. */
export const LATENCY_WINDOW = 2048;

export interface AgentStatus {
  readonly pid: number;
  readonly node: string;
  readonly socket: string;
  readonly uptimeSeconds: number;
  readonly inFlight: number;
  /** verb → result ("ok" or "code N") → count. */
  readonly requests: Record<string, Record<string, number>>;
  /** verb → percentiles in milliseconds. */
  readonly latencyMs: Record<string, { p50: number; p90: number; p99: number; max: number; n: number }>;
  /** back end → calls ("local", "usePodCidr", "cluster", "warm"), as the call handler named it. */
  readonly backends: Record<string, number>;
  /** The warm-up before the socket listened (src/agent/warm-up.ts), when one ran: rounds, calls answered ok, failed, wall ms. */
  readonly warmUp?: import('./warm-up.js').WarmUpReport;
  /** Whether V8 may still optimise the agent's code (false after `--optimize warm-up`'s completed warm-up). */
  readonly optimizing: boolean;
  readonly datastore: {
    readonly roundTrips: number;
    readonly groupCommits: number;
    readonly groupedAdds: number;
    readonly groupReleases: number;
    readonly groupedDels: number;
    readonly open: readonly string[];
  };
  /** Local mode's locked scans: whole directory reads, reads of what changed, names read again by those. */
  readonly localScans: { readonly full: number; readonly incremental: number; readonly reread: number; readonly absorbed?: number };
  /** The warm pool (when the agent runs one): see src/warm/warm-service.ts WarmStatus. */
  readonly warmPool?: import('../warm/warm-service.js').WarmStatus;
  /** The watch-fed pod and namespace cache (when the agent has an API server): see pod-cache.ts PodCacheStatus. */
  readonly podCache?: import('./pod-cache.js').PodCacheStatus;
  /** The node's headroom per family and its ip-exhausted taint (src/agent/headroom.ts). */
  readonly headroom?: import('./headroom.js').HeadroomStatus;
  /** The node's masquerade, when the agent keeps it (src/agent/masquerade-loop.ts). */
  readonly masquerade?: import('./masquerade-loop.js').MasqueradeStatus;
  /** Runtime reconciliation, when the agent has a runtime endpoint (src/reconcile/runtime-reconciler.ts). */
  readonly runtimeReconcile?: import('../reconcile/runtime-reconciler.js').RuntimeReconcileStatus;
}

/** The CNI verbs, the label values of calls by verb (status and metrics). */
export const VERBS = ['ADD', 'CHECK', 'DEL', 'GC', 'STATUS', 'VERSION'] as const;

/**
 * A call's verb as a label: a CNI verb, "none" when unset, "other" for anything else. The
 * caller chooses CNI_COMMAND, so it is never a label value itself (a series per value).
 */
export function verbLabel(command: string | undefined): string {
  if (command === undefined || command === '') return 'none';
  return (VERBS as readonly string[]).includes(command) ? command : 'other';
}

export class AgentStats {
  readonly started = Date.now();
  inFlight = 0;
  readonly #requests = new Map<string, Map<string, number>>();
  readonly #latency = new Map<string, { ring: number[]; next: number }>();
  readonly #backends = new Map<string, number>();

  record(verb: string, result: string, ms: number, backend: string | undefined): void {
    let r = this.#requests.get(verb);
    if (!r) this.#requests.set(verb, (r = new Map()));
    r.set(result, (r.get(result) ?? 0) + 1);
    let l = this.#latency.get(verb);
    if (!l) this.#latency.set(verb, (l = { ring: [], next: 0 }));
    if (l.ring.length < LATENCY_WINDOW) l.ring.push(ms);
    else l.ring[l.next] = ms;
    l.next = (l.next + 1) % LATENCY_WINDOW;
    if (backend) this.#backends.set(backend, (this.#backends.get(backend) ?? 0) + 1);
  }

  requests(): Record<string, Record<string, number>> {
    return Object.fromEntries([...this.#requests].map(([v, m]) => [v, Object.fromEntries(m)]));
  }

  latencyMs(): AgentStatus['latencyMs'] {
    const out: Record<string, { p50: number; p90: number; p99: number; max: number; n: number }> = {};
    for (const [verb, { ring }] of this.#latency) {
      const s = [...ring].sort((a, b) => a - b);
      const q = (p: number): number => round(s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? 0);
      out[verb] = { p50: q(0.5), p90: q(0.9), p99: q(0.99), max: round(s[s.length - 1] ?? 0), n: s.length };
    }
    return out;
  }

  backends(): Record<string, number> {
    return Object.fromEntries(this.#backends);
  }
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}
