import type { Store } from '../store/index.js';
import type { Tokens } from './auth.js';
import type { CheckCache } from './check-cache.js';
import type { ClusterOps } from './cluster-ops.js';
import type { SummaryCache } from './cluster-summary.js';
import type { ServerMetrics } from './metrics.js';

/** What the route handlers run with: one per server. */
export interface ApiDeps {
  readonly store: Store;
  readonly datastoreUrl: string;
  readonly summary: SummaryCache;
  readonly ops: ClusterOps;
  /** Shared `ipam check` reports (see check-cache.ts). */
  readonly checks: CheckCache;
  readonly metrics: ServerMetrics;
  readonly tokens: Tokens;
  readonly startedAt: Date;
  /** Loops running inside the server, for /healthz. */
  readonly loops: () => Record<string, unknown>;
}
