/**
 * The node agent put together — the one file that knows both sides: the host (src/agent: the
 * socket, frames, peer checks, status) serves every call with the plugin's own entry
 * (src/plugin/plugin-call.ts), lending the back ends their long-lived services (BackendHost):
 * the cluster back end's open stores and group commit (src/agent/cluster-services.ts), the local
 * back end's directory scans kept between calls (src/local/scan-cache.ts), and the warm pool when
 * asked for. Local-mode calls still take host-local's flock on their directory for every call,
 * so host-local, the per-pod plugin and the agent can share a data directory.
 */
import { Agent, type AgentOptions, AgentStartError, type HostedServices } from './agent/agent-server.js';
import { ClusterServices } from './agent/cluster-services.js';
import type { WarmOptions, WarmService } from './warm/warm-service.js';
import { ScanCache } from './local/scan-cache.js';
import type { Log } from './log/logger.js';
import type { BackendHost } from './plugin/ipam-backend.js';

export interface AgentMainOptions extends Omit<AgentOptions, 'host' | 'log'> {
  /** A datastore to open at start (cluster mode), so the first pod pays nothing for it. */
  readonly datastore?: string;
  /**
   * Run the warm-pool back end (configs with only `ipam.agent`) on `datastore` for `node`
   * (requires `datastore`).
   */
  readonly warm?: Omit<WarmOptions, 'datastore' | 'node' | 'log'>;
  readonly log: Log;
}

/** Takes the socket and serves the plugin's calls with the back ends' long-lived services. */
export function startAgent(o: AgentMainOptions): Promise<Agent> {
  const { datastore, warm, ...host } = o;
  return Agent.start({ ...host, host: () => hostedBackEnds(o) });
}

async function hostedBackEnds(o: AgentMainOptions): Promise<HostedServices> {
  const cluster = new ClusterServices();
  const scanCache = new ScanCache();
  let host: BackendHost = { cluster, local: { asyncLockWait: true, scanCache } };
  let warm: WarmService | undefined;
  if (o.warm) {
    if (!o.datastore) throw new AgentStartError('the warm pool needs --datastore');
    const [{ WarmService }, { WarmBackend }, { KubePods }] = await Promise.all([import('./warm/warm-service.js'), import('./plugin/warm-backend.js'), import('./agent/kube-pods.js')]);
    try {
      warm = new WarmService({ ...o.warm, datastore: o.datastore, node: o.node, openPodSource: (k, t) => KubePods.open(k, t), log: o.log }, cluster);
    } catch (e) {
      throw new AgentStartError(`warm pool: ${(e as Error).message}`);
    }
    host = { ...host, warm: new WarmBackend(warm) };
  }
  const { pluginCall } = await import('./plugin/plugin-call.js');
  return {
    call: (env, stdin) => pluginCall(env, stdin, host),
    warmUp: (env, stdin) => pluginCall(env, stdin, { local: { asyncLockWait: true } }), // src/agent/warm-up.ts
    status: () => ({
      datastore: { roundTrips: cluster.roundTrips(), groupCommits: cluster.groups.batches, groupedAdds: cluster.groups.adds, open: cluster.datastores() },
      localScans: scanCache.stats,
      ...(warm ? { warmPool: warm.report() } : {}),
    }),
    async start() {
      if (o.datastore) {
        // Open it now; a datastore that is down is retried by the first call that needs it.
        await cluster.run(o.datastore, o.node, async () => undefined).catch((e: Error) => o.log.warn({ datastore: o.datastore, error: e.message }, 'datastore not reachable yet'));
      }
      // Started after listening (calls meanwhile wait for it, or answer code 11 if it fails).
      await warm?.start();
    },
    async close() {
      await warm?.close();
      await cluster.close();
      scanCache.close();
    },
  };
}
