import type { ClusterIpam } from '../../cluster/index.js';
import type { Store } from '../../store/index.js';
import type { Tokens } from '../http/auth.js';
import type { CheckCache } from '../check/check-cache.js';
import type { SummaryCache } from '../summary/cluster-summary.js';
import type { ServerMetrics } from '../http/metrics.js';
import type { HistoryDb } from '../../history/history-db.js';

/** What the route handlers run with: one per server. */
export interface ApiDeps {
  readonly store: Store;
  readonly datastoreUrl: string;
  readonly summary: SummaryCache;
  /** The cluster block-IPAM service, one instance for the life of the server. */
  readonly ipam: ClusterIpam;
  /** Shared `ipam check` reports (see check-cache.ts). */
  readonly checks: CheckCache;
  readonly metrics: ServerMetrics;
  readonly tokens: Tokens;
  readonly startedAt: Date;
  /** Loops running inside the server, for /healthz. */
  readonly loops: () => Record<string, unknown>;
  /** The allocation history (src/history); undefined when serve runs without it. */
  readonly history?: HistoryDb;
}
