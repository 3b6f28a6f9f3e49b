/**
 * The registries of `podipam serve` (with its history on, the default) and `podipam agent`,
 * built without a server behind them (their collect callbacks never run), and docs/metrics.md
 * made from them (src/server/metrics-reference.ts). `npm run docs:metrics` writes the file.
 */
import type { Registry } from 'prom-client';
import { AgentMetrics } from '../agent/agent-metrics.js';
import { addHistoryMetrics } from '../server/history-metrics.js';
import { ServerMetrics } from '../server/http/metrics.js';
import { metricsReference, type MetricDescription, type MetricsSection } from '../server/metrics-reference.js';

function described(r: Registry): MetricDescription[] {
  return r.getMetricsAsArray().map((m) => {
    const x = m as unknown as { name: string; help: string; type: string; labelNames?: readonly string[] };
    return { name: x.name, type: String(x.type), help: x.help, labelNames: [...(x.labelNames ?? [])] };
  });
}

/** The metric families of each process, as their registries declare them. */
export function metricsSections(): MetricsSection[] {
  const none = async (): Promise<never> => {
    throw new Error('not collected: the registry is only described');
  };
  const serve = new ServerMetrics({ pools: none, nodes: none, datastoreUp: none });
  addHistoryMetrics(serve.registry, () => {
    throw new Error('not collected: the registry is only described');
  });
  const agent = new AgentMetrics(() => undefined);
  return [
    {
      title: 'podipam serve',
      where:
        "`GET /metrics` on serve's listen address (read token). The `podipam_history_*` metrics exist while the history is on (the default; not with `--no-history`).",
      processPrefixes: ['podipam_process_', 'podipam_nodejs_'],
      metrics: described(serve.registry),
    },
    {
      title: 'podipam agent',
      where: "`GET /metrics` on the agent's `--metrics-listen` address (default 127.0.0.1:7421).",
      processPrefixes: ['podipam_agent_process_'],
      metrics: described(agent.registry),
    },
  ];
}

export function metricsDocText(): string {
  return metricsReference(metricsSections());
}
