/**
 * `podipam serve` as a library: opens the datastore, creates the default pools when there are
 * none, starts the node-CIDR controller and the cluster GC loops, and serves the HTTP API,
 * /metrics, /healthz and the dashboard. `close()` stops everything in reverse order.
 */
import type { LogSink } from '../log/logger.js';
import type { AddressInfo } from 'node:net';
import type { ControllerConfig } from '../controller/controller-config.js';
import { NodeCidrController } from '../controller/node-cidr-controller.js';
import { openStore, parseStoreUrl, type Store } from '../store/index.js';
import type { ApiDeps } from './api-deps.js';
import { authRequired, checkListenTokens, type Tokens } from './auth.js';
import { CheckCache } from './check-cache.js';
import { CheckInWorker } from './check-in-worker.js';
import { ClusterGc } from './cluster-gc.js';
import { Ticker } from './ticker.js';
import { clusterOps } from './cluster-ops-impl.js';
import type { CheckReport } from './cluster-ops.js';
import { SummaryCache } from './cluster-summary.js';
import { ensureDefaultPools, type DefaultPool } from './default-pools.js';
import { createHttpServer, type HandlerSpec, type ServerTls } from './http-server.js';
import { ServerMetrics } from './metrics.js';
import { hostPolicy as makeHostPolicy } from './request-guard.js';
import { Router } from './router.js';
import { addReadRoutes } from './routes-read.js';
import { addStaticRoutes } from './routes-static.js';
import { addWriteRoutes } from './routes-write.js';

export interface ServerConfig {
  readonly host: string;
  readonly port: number;
  readonly datastoreUrl: string;
  readonly tokens: Tokens;
  /** Host names besides localhost, 127.0.0.1, [::1] and the listen address (`--allowed-host`). */
  readonly allowedHosts?: readonly string[];
  /** Node-CIDR controller configuration; undefined = not run. */
  readonly controller?: ControllerConfig;
  /** Pools to create when the store has none (empty: create none). */
  readonly defaultPools: readonly DefaultPool[];
  /** Cluster GC: pass interval and grace; undefined = not run. */
  readonly gc?: { readonly intervalMs: number; readonly graceMs: number };
  /** How long the summary behind the dashboard and metrics may be reused (default 1000 ms). */
  readonly summaryTtlMs?: number;
  /** Serve HTTPS with this certificate and key (PEM, see loadServerTls); plain HTTP without. */
  readonly tls?: ServerTls;
  /** Where lines go (lineSink: fields pass through). */
  readonly log: LogSink;
}

export interface RunningServer {
  /** http://HOST:PORT (https:// with `tls`) of the API (no trailing slash). */
  readonly url: string;
  /** The dashboard page: `url` + "/", with `?token=` when the install token protects writes. */
  readonly dashboardUrl: string;
  readonly port: number;
  readonly store: Store;
  /** Default pools created by this start. */
  readonly createdPools: readonly string[];
  close(): Promise<void>;
}

/**
 * Starts everything. Throws before opening anything when the listen address needs tokens
 * that are missing; throws with the address named when the port is taken. On a failure after
 * the store is open, what was started is stopped again.
 */
export async function startServer(cfg: ServerConfig): Promise<RunningServer> {
  checkListenTokens(cfg.host, cfg.tokens);
  const hostPolicy = makeHostPolicy(cfg.host, cfg.allowedHosts);
  const store = await openStore(cfg.datastoreUrl);
  const stops: (() => Promise<void>)[] = [() => store.close()];
  const stopAll = async (): Promise<void> => {
    for (const stop of stops.reverse()) await stop().catch((e: unknown) => cfg.log(`shutdown: ${(e as Error).message}`));
    stops.length = 0;
  };
  try {
    const ops = clusterOps(store);
    const summary = new SummaryCache(store, cfg.summaryTtlMs ?? 1000);
    stops.push(summary.follow((line) => cfg.log(line)));
    // A check reads every record: off the event loop in a worker with its own connection,
    // except on a memory store (in this process only, and small).
    let checkRun = (): Promise<CheckReport> => ops.check();
    if (parseStoreUrl(cfg.datastoreUrl).kind !== 'memory') {
      const worker = new CheckInWorker(cfg.datastoreUrl);
      stops.push(() => worker.close());
      checkRun = () => worker.run();
    }
    const checks = new CheckCache(checkRun);
    const metrics = new ServerMetrics({
      pools: async () => (await summary.get()).pools,
      nodes: async () => (await summary.get()).totals.nodes,
    });
    const createdPools = await ensureDefaultPools(ops, () => summary.get(), cfg.defaultPools);
    summary.invalidate();

    let controller: NodeCidrController | undefined;
    if (cfg.controller) {
      controller = new NodeCidrController({
        store,
        config: cfg.controller,
        pollIntervalMs: 500, // resync checks: node changes arrive by its watch
        log: (line, fields) => cfg.log(`controller: ${line}`, fields),
        onChange: () => summary.invalidate(),
      });
      await controller.start();
      const c = controller;
      stops.push(() => c.stop());
    }

    let gcTicker: Ticker | undefined;
    if (cfg.gc) {
      // GC acts on a report at most one interval old; every finding is re-verified before acting.
      const intervalMs = cfg.gc.intervalMs;
      const gc = new ClusterGc({ ops, check: () => checks.get(intervalMs), graceMs: cfg.gc.graceMs, log: cfg.log });
      gcTicker = new Ticker('gc', cfg.gc.intervalMs, async () => {
        try {
          const r = await gc.runOnce();
          metrics.gcRuns.inc({ result: 'ok' });
          if (r.leaksReleased) metrics.gcReleased.inc({ kind: 'leak' }, r.leaksReleased);
          if (r.handlesReleased) metrics.gcReleased.inc({ kind: 'handle' }, r.handlesReleased);
          if (r.blocksReleased) metrics.gcReleased.inc({ kind: 'block' }, r.blocksReleased);
          if (r.leaksReleased + r.handlesReleased + r.blocksReleased > 0) {
            summary.invalidate();
            checks.invalidate();
          }
        } catch (e) {
          metrics.gcRuns.inc({ result: 'error' });
          cfg.log(`gc: run failed: ${(e as Error).message}`);
          throw e;
        }
      });
      gcTicker.start();
      const t = gcTicker;
      stops.push(() => t.stop());
    }

    const deps: ApiDeps = {
      store,
      datastoreUrl: store.url, // password hidden: /healthz, whoami and overview show it
      summary,
      ops,
      checks,
      metrics,
      tokens: cfg.tokens,
      startedAt: new Date(),
      loops: () => ({
        controller: controller ? { running: true, ...controller.stats() } : { running: false },
        gc: gcTicker ? { running: true, ...gcTicker.status() } : { running: false },
      }),
    };
    const router = new Router<HandlerSpec>();
    addStaticRoutes(router, deps);
    addReadRoutes(router, deps);
    addWriteRoutes(router, deps);
    const server = createHttpServer({
      router,
      tokens: cfg.tokens,
      metrics,
      hostPolicy,
      ...(cfg.tls ? { tls: cfg.tls } : {}),
      onServerError: (e, method, path) => {
        // The stack of a failure of ours goes to the log (never to the client).
        const stack = e.cause instanceof Error && e.status === 500 ? `\n${e.cause.stack ?? ''}` : '';
        cfg.log(`http: ${method} ${path} → ${e.status} ${e.code}: ${e.message}${stack}`);
      },
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', (e: NodeJS.ErrnoException) => {
        reject(
          new Error(
            e.code === 'EADDRINUSE'
              ? `cannot listen on ${cfg.host}:${cfg.port}: the address is in use (another podipam serve? choose one with --listen HOST:PORT)`
              : `cannot listen on ${cfg.host}:${cfg.port}: ${e.message}`,
          ),
        );
      });
      server.listen(cfg.port, cfg.host, () => resolve());
    });
    stops.push(
      () =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
          setTimeout(() => server.closeAllConnections(), 2000).unref();
        }),
    );
    const port = (server.address() as AddressInfo).port;
    const hostText = cfg.host.includes(':') ? `[${cfg.host}]` : cfg.host;
    const url = `${cfg.tls ? 'https' : 'http'}://${hostText}:${port}`;
    const install = !authRequired(cfg.tokens) ? cfg.tokens.install : undefined;
    const dashboardUrl = `${url}/${install !== undefined ? `?token=${encodeURIComponent(install)}` : ''}`;
    return { url, dashboardUrl, port, store, createdPools, close: stopAll };
  } catch (e) {
    await stopAll();
    throw e;
  }
}
