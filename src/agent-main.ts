/**
 * The node agent put together — the one file that knows both sides: the host (src/agent: the
 * socket, frames, peer checks, status) serves every call with the plugin's own entry
 * (src/plugin/plugin-call.ts), lending the back ends their long-lived services (BackendHost):
 * the cluster back end's open stores and group commit (src/agent/cluster-services.ts), the local
 * back end's directory scans kept between calls (src/local/scan-cache.ts), and the warm pool when
 * asked for. Local-mode calls still take host-local's flock on their directory for every call,
 * so host-local, the per-pod plugin and the agent can share a data directory.
 */
import { Agent, type AgentOptions, AgentStartError, type HostedServices, type ServedConnections } from './agent/agent-server.js';
import { ClusterServices } from './agent/cluster-services.js';
import type { WarmOptions, WarmService } from './warm/warm-service.js';
import type { WarmBackend } from './plugin/warm-backend.js';
import { WARM_UP_WARM_POOLS, type WarmUpContext, openThrowaway, warmUpStoreOf } from './agent/warm-up.js';
import { WARM_UP_BURST_WINDOW_MS } from './agent/warm-up-rounds.js';
import { silentLog } from './log/logger.js';
import { join } from 'node:path';
import { ScanCache } from './local/scan-cache.js';
import type { Log } from './log/logger.js';
import type { BackendHost } from './plugin/ipam-backend.js';
import type { HeadroomMonitor, HeadroomOptions } from './agent/headroom.js';
import type { RuntimeReconciler, RuntimeReconcilerOptions } from './reconcile/runtime-reconciler.js';
import { CallTracker } from './util/call-tracker.js';
import { pokesHeadroom } from './agent/headroom-poke.js';
import type { AllocationSource } from './reconcile/allocation-source.js';

export interface AgentMainOptions extends Omit<AgentOptions, 'host' | 'log'> {
  /** A datastore to open at start (cluster mode), so the first pod pays nothing for it. */
  readonly datastore?: string;
  /**
   * Run the warm-pool back end (configs with only `ipam.agent`) on `datastore` for `node`
   * (requires `datastore`).
   */
  readonly warm?: Omit<WarmOptions, 'datastore' | 'node' | 'log'>;
  /**
   * Talk to the API server (a kubeconfig file; undefined: the in-cluster service account): the
   * watch-fed pod cache (src/agent/pod-cache.ts) for every back end, the warm pool's pod source.
   */
  readonly kube?: { readonly kubeconfig?: string; readonly timing?: import('./agent/pod-cache.js').PodCacheOptions['timing'] };
  /** Resync the node's headroom (src/agent/headroom.ts): period and clearing threshold (the taint goes through `kube`'s client). */
  readonly headroom?: Pick<HeadroomOptions, 'intervalMs' | 'clearAt'>;
  /**
   * Keep the node's masquerade (src/agent/masquerade-loop.ts) from the pools of `datastore` (else
   * of the first datastore a call opened), resynced every `intervalMs`; undefined: none.
   */
  readonly masquerade?: { readonly intervalMs: number };
  /**
   * Reconcile this node's allocations with the container runtime (src/reconcile): its CRI
   * `endpoint` is listed every `intervalMs`; an allocation older than `graceMs` that two answers
   * lack is freed. Judged: the local back end's files under `dataDirs`, the cluster back
   * end's records of this node on `datastore` and every datastore a call opened, and the warm
   * pool's pod rows (freed as its DEL would).
   */
  readonly runtimeReconcile?: { readonly endpoint: string; readonly intervalMs: number; readonly graceMs: number; readonly dataDirs: readonly string[] };
  readonly log: Log;
}

/** Takes the socket and serves the plugin's calls with the back ends' long-lived services. */
export function startAgent(o: AgentMainOptions): Promise<Agent> {
  const { datastore, warm, kube, headroom, masquerade, runtimeReconcile, ...host } = o;
  let monitor: HeadroomMonitor | undefined;
  // An ADD that found the node exhausted (code 100) resyncs the headroom (and the taint) at once.
  const onCall: AgentOptions['onCall'] = (c, warmUp) => {
    o.onCall?.(c, warmUp);
    if (pokesHeadroom(c, warmUp)) void monitor?.poke();
  };
  return Agent.start({ ...host, onCall, host: (served) => hostedBackEnds(o, served, (m) => (monitor = m)) });
}

async function hostedBackEnds(o: AgentMainOptions, served: ServedConnections, onMonitor: (m: HeadroomMonitor) => void): Promise<HostedServices> {
  const cluster = new ClusterServices();
  const scanCache = new ScanCache();
  // The only connection open is the caller's own: no ADD can arrive to share its batch.
  const alone = (): boolean => served.open() <= 1;
  let host: BackendHost = { cluster, local: { asyncLockWait: true, scanCache, alone } };
  let warm: WarmService | undefined;
  // The warm pool's classes and its sticky window, when the agent runs one: the warm-up builds one of its own.
  let warmClasses: { readonly WarmService: typeof WarmService; readonly WarmBackend: typeof WarmBackend; readonly stickyForMs: number } | undefined;
  // One client for everything that talks to the API server.
  const kube = o.kube ? await openKubeOrFail(o.kube.kubeconfig) : undefined;
  let pods: import('./agent/pod-cache.js').PodCache | undefined;
  if (kube) {
    const [{ PodCache }, { kubeTransport }] = await Promise.all([import('./agent/pod-cache.js'), import('./agent/kube-client.js')]);
    pods = new PodCache({
      transport: kubeTransport(kube),
      node: o.node,
      log: o.log.child({ component: 'pod-cache' }),
      ...(o.kube?.timing ? { timing: o.kube.timing } : {}),
    });
    host = { ...host, pods };
  }
  if (o.warm) {
    if (!o.datastore) throw new AgentStartError('the warm pool needs --datastore');
    const [{ WarmService }, { WarmBackend }, { KubePods }] = await Promise.all([
      import('./warm/warm-service.js'),
      import('./plugin/warm-backend.js'),
      import('./agent/kube-pods.js'),
    ]);
    warmClasses = { WarmService, WarmBackend, stickyForMs: o.warm.stickyForMs };
    try {
      warm = new WarmService(
        {
          ...o.warm,
          datastore: o.datastore,
          node: o.node,
          openPodSource: async (k, t) => (kube ? KubePods.of(kube, t) : KubePods.open(k, t)),
          ...(host.pods ? { pods: host.pods } : {}),
          log: o.log,
        },
        cluster,
      );
    } catch (e) {
      throw new AgentStartError(`warm pool: ${(e as Error).message}`, { cause: e });
    }
    host = { ...host, warm: new WarmBackend(warm, host.pods) };
  }
  let headroom: HeadroomMonitor | undefined;
  if (o.headroom) {
    const { HeadroomMonitor } = await import('./agent/headroom.js');
    const w = warm;
    const pools = o.warm?.pools;
    headroom = new HeadroomMonitor({
      ...o.headroom,
      node: o.node,
      datastore: () => o.datastore ?? cluster.datastores()[0],
      openStore: (d) => cluster.storeOf(d),
      ...(kube ? { taintApi: kube.coreApi } : {}),
      ...(w ? { warm: () => ({ idle: idleOf(w.report()), ...(pools ? { pools } : {}) }) } : {}),
      log: o.log,
    });
    onMonitor(headroom);
  }
  let masquerade: import('./agent/masquerade-loop.js').MasqueradeLoop | undefined;
  if (o.masquerade) {
    const { MasqueradeLoop } = await import('./agent/masquerade-loop.js');
    masquerade = new MasqueradeLoop({
      intervalMs: o.masquerade.intervalMs,
      openStore: async () => {
        const d = o.datastore ?? cluster.datastores()[0];
        return d === undefined ? undefined : cluster.storeOf(d);
      },
      log: o.log.child({ component: 'masquerade' }),
    });
  }
  // Container ids with an ADD or DEL being served, and when one last began: runtime
  // reconciliation never frees theirs, and counts their age from the last call.
  const rr = o.runtimeReconcile;
  const calls = new CallTracker(Date.now, rr ? rr.graceMs + 3 * rr.intervalMs : 60_000);
  const w = warm;
  const busy = (): ReadonlySet<string> => (w ? new Set([...calls.inFlight(), ...w.inFlight()]) : calls.inFlight());
  const reconciler = rr ? await runtimeReconciler(o, rr, cluster, { inFlight: busy, touchedAt: (id) => calls.touchedAt(id) }, w) : undefined;
  const { pluginCall } = await import('./plugin/plugin-call.js');
  // One handler for the runtime's calls and the warm-up's (each with its own host and tracker):
  // the warm-up runs the very code the pods' calls run.
  const handler =
    (h: BackendHost, tracker: CallTracker): HostedServices['call'] =>
    async (env, stdin) => {
      const id = env.CNI_COMMAND === 'ADD' || env.CNI_COMMAND === 'DEL' ? env.CNI_CONTAINERID : undefined;
      if (id === undefined) return pluginCall(env, stdin, h);
      const done = tracker.begin(id);
      try {
        return await pluginCall(env, stdin, h);
      } finally {
        done();
      }
    };
  return {
    call: handler(host, calls),
    // The agent's kind of datastore where the warm-up can have one of its own.
    warmUpStore: warmUpStoreOf(o.datastore),
    // src/agent/warm-up.ts: the agent's kind of services, none of the agent's own.
    warmUp: async (ctx) => {
      // Its datastores are thrown away after it: their commits run the same code without waiting for the disk.
      // Its bursts (warm-up.ts) count as one for WARM_UP_BURST_WINDOW_MS: a lone call after one
      // waits as in a pod burst, but not the next dozen rounds' calls, each a few ms apart.
      const own = { cluster: new ClusterServices({ openStore: openThrowaway, burstWindowMs: WARM_UP_BURST_WINDOW_MS }), scanCache: new ScanCache() };
      let warmHost: BackendHost = { cluster: own.cluster, local: { asyncLockWait: true, scanCache: own.scanCache, alone } };
      // A warm pool of its own that cannot start is reported; the other calls run without it.
      let ownWarm: WarmService | undefined;
      let warmError: string | undefined;
      if (warmClasses) {
        try {
          ownWarm = await warmUpPool(o.node, warmClasses.stickyForMs, warmClasses.WarmService, own.cluster, ctx);
          warmHost = { ...warmHost, warm: new warmClasses.WarmBackend(ownWarm) };
        } catch (e) {
          warmError = e instanceof Error ? e.message : String(e);
        }
      }
      // Touches forgotten after 0.4 s (the agent's after a minute or more): its pruning, which the
      // agent's tracker runs every 15 s or less often, runs during the warm-up too.
      const tracker = new CallTracker(Date.now, 400);
      return {
        calls: [handler(warmHost, tracker), handler(warmHost, tracker)],
        warm: ownWarm !== undefined,
        ...(warmError !== undefined ? { warmError } : {}),
        async close() {
          try {
            await ownWarm?.close();
          } finally {
            own.scanCache.close();
            await own.cluster.close();
          }
        },
      };
    },
    status: () => ({
      datastore: {
        roundTrips: cluster.roundTrips(),
        groupCommits: cluster.groups.batches,
        groupedAdds: cluster.groups.adds,
        groupReleases: cluster.releaseGroups.batches,
        groupedDels: cluster.releaseGroups.dels,
        open: cluster.datastores(),
      },
      localScans: scanCache.stats,
      ...(warm ? { warmPool: warm.report() } : {}),
      ...(pods ? { podCache: pods.status() } : {}),
      ...(headroom ? { headroom: headroom.status() } : {}),
      ...(masquerade ? { masquerade: masquerade.status() } : {}),
      ...(reconciler ? { runtimeReconcile: reconciler.status() } : {}),
    }),
    async start() {
      if (o.datastore) {
        // Open it now; a datastore that is down is retried by the first call that needs it.
        await cluster
          .run(o.datastore, o.node, async () => undefined)
          .catch((e: Error) => o.log.warn({ datastore: o.datastore, error: e.message }, 'datastore not reachable yet'));
      }
      // Lists and watches in the background: a call never waits for the API server.
      pods?.start();
      // Started after listening (calls meanwhile wait for it, or answer code 11 if it fails).
      await warm?.start();
      headroom?.start();
      // In the background: a pod start never waits for iptables.
      masquerade?.start();
      // In the background: lists the runtime's sandboxes, never in a call's way.
      reconciler?.start();
    },
    async close() {
      await reconciler?.stop();
      reconciler?.close();
      await masquerade?.stop();
      await headroom?.stop();
      await warm?.close();
      await pods?.stop();
      await cluster.close();
      scanCache.close();
    },
  };
}

/**
 * The warm-up's own warm pool (src/agent/warm-up.ts) for `node`: on the warm-up's datastore and
 * its pools, its resource DB in the warm-up's directory, small, a released address idle again
 * after 60 ms and its loops fast (so that the refill, a miss and the write-behind run during the
 * warm-up too), no API server (no pod source, no pod cache) and no sticky policy (none of its
 * pods is sticky: they could fill it with reservations), silent. Started: ready when returned, else the
 * error of its start (closed).
 */
async function warmUpPool(node: string, stickyForMs: number, Service: typeof WarmService, cluster: ClusterServices, ctx: WarmUpContext): Promise<WarmService> {
  const service = new Service(
    {
      datastore: ctx.datastore,
      node,
      dataDir: join(ctx.dir, 'warm'),
      pools: WARM_UP_WARM_POOLS.map((p) => p.name),
      // Some of its ADDs find every idle address still cooling and refill, as a busy node's do:
      // its idle addresses (preloaded at one time: ties in the idle queue's order too) cool for
      // longer than 8 rounds take on a quiet machine. A refill keeps the address, so the pool
      // holds about (rounds per cooldown) + 8 a family: under its capacity unless a round (six
      // calls and more) took under 1 ms.
      minIdle: 8,
      maxIdle: 32,
      capacity: 64,
      cooldownMs: 60,
      stickyForMs,
      tickMs: 50,
      // Batches of a few and of a few dozen pods' records, as a node writes them (a datastore
      // record with over ~20 keys is one V8 lays out otherwise), and its view published often.
      writeDelayMs: 100,
      viewIntervalMs: 100,
      // Its datastore watched, as the agent's pool watches its own (the store's watch code warmed too).
      watch: true,
      log: silentLog,
    },
    cluster,
  );
  try {
    await service.start();
    await service.status(); // restored and preloaded, else its error
  } catch (e) {
    await service.close();
    throw e;
  }
  return service;
}

/** The runtime reconciliation loop over the local data directories, the cluster datastores in use and the warm pool. */
async function runtimeReconciler(
  o: AgentMainOptions,
  r: NonNullable<AgentMainOptions['runtimeReconcile']>,
  cluster: ClusterServices,
  calls: Pick<RuntimeReconcilerOptions, 'inFlight' | 'touchedAt'>,
  warm: WarmService | undefined,
): Promise<RuntimeReconciler & { close(): void }> {
  const [{ RuntimeReconciler }, { criRuntime, criSocketPath }, { localAllocations }, { clusterAllocations }, { warmAllocations }] = await Promise.all([
    import('./reconcile/runtime-reconciler.js'),
    import('./reconcile/cri-runtime.js'),
    import('./reconcile/local-allocations.js'),
    import('./reconcile/cluster-allocations.js'),
    import('./reconcile/warm-allocations.js'),
  ]);
  // Each call bounded: at most the period (a hung runtime delays no pass by more), 1 to 10 s.
  const runtime = criRuntime(criSocketPath('runtime endpoint', r.endpoint), Math.min(10_000, Math.max(1_000, r.intervalMs)));
  const locals = [...r.dataDirs.map((d) => localAllocations(d)), ...(warm && o.datastore ? [warmAllocations(o.datastore, warm)] : [])];
  const clusters = new Map<string, AllocationSource>();
  const sources = (): AllocationSource[] => {
    for (const d of new Set([...(o.datastore ? [o.datastore] : []), ...cluster.datastores()])) {
      if (!clusters.has(d))
        clusters.set(
          d,
          clusterAllocations(d, o.node, (fn) => cluster.run(d, o.node, fn)),
        );
    }
    return [...locals, ...clusters.values()];
  };
  const reconciler = new RuntimeReconciler({
    endpoint: r.endpoint,
    runtime,
    sources,
    ...calls,
    graceMs: r.graceMs,
    intervalMs: r.intervalMs,
    log: o.log.child({ component: 'runtime-reconcile' }),
  });
  return Object.assign(reconciler, { close: () => runtime.close() });
}

async function openKubeOrFail(kubeconfig: string | undefined): Promise<import('./agent/kube-client.js').Kube> {
  const { openKube } = await import('./agent/kube-client.js');
  try {
    return await openKube(kubeconfig);
  } catch (e) {
    throw new AgentStartError((e as Error).message, { cause: e });
  }
}

/** The warm pool's idle addresses per family (what it hands out without a claim). */
function idleOf(w: ReturnType<WarmService['report']>): Partial<Record<4 | 6, number>> {
  return { 4: w.pools.ipv4?.idle ?? 0, 6: w.pools.ipv6?.idle ?? 0 };
}
