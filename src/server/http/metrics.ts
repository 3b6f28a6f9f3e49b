/**
 * Prometheus metrics of `podipam serve`, on a registry of their own (several servers in one
 * test process must not share one). Pool gauges are filled at scrape time from the same
 * cached aggregate the dashboard reads, so a scrape costs no more than a page refresh. When
 * the datastore does not answer, the scrape still succeeds, with `podipam_datastore_up` 0:
 * the pool series are the summary's last figures while it holds some (a pool alert neither
 * resolves nor starts because of the outage), else absent; podipam_nodes keeps its last value.
 * So alert rules tell "serve down" from "datastore unreachable".
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Per-pool numbers the gauges report; produced by the summary cache. */
export interface PoolFigures {
  readonly name: string;
  readonly family: number;
  /** Exact; the gauge reports it as a float (Prometheus values are doubles). */
  readonly capacity: bigint;
  readonly allocated: number;
  readonly blocks: number;
}

export interface MetricsSource {
  pools(): Promise<readonly PoolFigures[]>;
  nodes(): Promise<number>;
  /** Whether the datastore answers a cheap read now (bounded in time; never rejects). */
  datastoreUp(): Promise<boolean>;
}

/** The source's pools, or none when the datastore does not answer (podipam_datastore_up says so). */
async function poolsOrNone(source: MetricsSource): Promise<readonly PoolFigures[]> {
  try {
    return await source.pools();
  } catch {
    return [];
  }
}

export class ServerMetrics {
  readonly registry = new Registry();
  readonly requestDuration: Histogram<'method' | 'route' | 'status'>;
  readonly gcRuns: Counter<'result'>;
  readonly gcReleased: Counter<'kind'>;
  readonly allocations: Counter<'op' | 'result'>;

  constructor(source: MetricsSource) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'podipam_' });
    this.requestDuration = new Histogram({
      name: 'podipam_http_request_duration_seconds',
      help: 'HTTP API request durations, by method, route pattern and status',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    });
    this.gcRuns = new Counter({ name: 'podipam_gc_runs_total', help: 'cluster garbage collection runs, by result', labelNames: ['result'], registers });
    this.gcReleased = new Counter({
      name: 'podipam_gc_released_total',
      help: 'what cluster garbage collection released, by kind (leak, handle, block, sticky-hold)',
      labelNames: ['kind'],
      registers,
    });
    this.allocations = new Counter({
      name: 'podipam_api_allocations_total',
      help: 'allocate and release calls made through the HTTP API, by operation and result',
      labelNames: ['op', 'result'],
      registers,
    });
    // Zero series exist from the start, so rate() and alerts see the counters before the first event.
    for (const result of ['ok', 'error']) this.gcRuns.inc({ result }, 0);
    for (const kind of ['leak', 'handle', 'block', 'sticky-hold']) this.gcReleased.inc({ kind }, 0);
    // prom-client collects metrics concurrently; each gauge asks the source, which caches.
    new Gauge({
      name: 'podipam_pool_allocated_addresses',
      help: 'addresses allocated in each pool',
      labelNames: ['pool', 'family'],
      registers,
      async collect() {
        const pools = await poolsOrNone(source);
        this.reset();
        for (const p of pools) this.set({ pool: p.name, family: String(p.family) }, p.allocated);
      },
    });
    new Gauge({
      name: 'podipam_pool_capacity_addresses',
      help: 'addresses each pool can hand out (v6 pools are capped at 2^53)',
      labelNames: ['pool', 'family'],
      registers,
      async collect() {
        const pools = await poolsOrNone(source);
        this.reset();
        for (const p of pools) this.set({ pool: p.name, family: String(p.family) }, Number(p.capacity));
      },
    });
    new Gauge({
      name: 'podipam_pool_blocks',
      help: 'blocks claimed in each pool',
      labelNames: ['pool'],
      registers,
      async collect() {
        const pools = await poolsOrNone(source);
        this.reset();
        for (const p of pools) this.set({ pool: p.name }, p.blocks);
      },
    });
    new Gauge({
      name: 'podipam_nodes',
      help: 'node records in the datastore',
      registers,
      async collect() {
        // Unanswered: the last figure stays (an unlabelled gauge has no "absent").
        const n = await source.nodes().catch(() => undefined);
        if (n !== undefined) this.set(n);
      },
    });
    new Gauge({
      name: 'podipam_datastore_up',
      help: 'the datastore answered a read at this scrape (1) or not within 2 s (0)',
      registers,
      async collect() {
        this.set((await source.datastoreUp()) ? 1 : 0);
      },
    });
  }

  /** The exposition text and its content type. */
  async scrape(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
