/**
 * `podipam serve` as a library: opens the datastore, creates the default pools when there are
 * none, starts the node-CIDR controller and the cluster GC loops, and serves the HTTP API,
 * /metrics, /healthz and the dashboard. `close()` stops everything in reverse order.
 */
import type { AddressInfo } from 'node:net';
import type { ControllerConfig } from '../controller/controller-config.js';
import { NodeCidrController } from '../controller/node-cidr-controller.js';
import { ClusterIpam, type CheckReport } from '../cluster/index.js';
import type { Log } from '../log/logger.js';
import { openStore, parseStoreUrl, StoreUnavailableError, type Store } from '../store/index.js';
import { pause } from '../util/pause.js';
import { Periodic } from '../util/periodic.js';
import type { HistoryDb } from '../history/history-db.js';
import { HistoryFollower } from '../history/history-follower.js';
import { addHistoryMetrics } from './history-metrics.js';
import type { ApiDeps } from './api/api-deps.js';
import { authRequired, checkListenTokens, type Tokens } from './http/auth.js';
import { CheckCache } from './check/check-cache.js';
import { CheckInWorker } from './check/check-in-worker.js';
import { ClusterGc } from './gc/cluster-gc.js';
import { SummaryCache } from './summary/cluster-summary.js';
import { ensureDefaultPools, type DefaultPool } from './default-pools.js';
import { createHttpServer, type ServerTls } from './http/http-server.js';
import { apiRouter } from './api/api-router.js';
import { ROUTE_DOCS } from './api/api-docs.js';
import { ServerMetrics } from './http/metrics.js';
import { DatastoreProbe } from './api/datastore-probe.js';
import { hostPolicy as makeHostPolicy } from './http/request-guard.js';

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
  /**
   * The allocation history (src/history): its SQLite file and how long ended holds are kept;
   * undefined = not kept (`--no-history`). The follower catches up before the server listens.
   */
  readonly history?: { readonly path: string; readonly retentionMs: number };
  /** Where lines go; the controller, GC, HTTP and shutdown lines through child loggers naming their component. */
  readonly log: Log;
  /** Aborted (a SIGTERM while starting): stop waiting for the datastore; startServer rejects with ServerStartAborted. */
  readonly signal?: AbortSignal;
}

/** startServer gave up because its `signal` aborted while it waited for the datastore. */
export class ServerStartAborted extends Error {
  override readonly name = 'ServerStartAborted';
}

/** Longest pause between two tries of a datastore that does not answer at start. */
const START_RETRY_MAX_MS = 5000;

/**
 * Waits until the datastore answers a read: one that cannot be reached at start (etcd starting
 * beside serve in a fresh install, a first connection lost) is retried with growing pauses, as
 * the controller does, instead of ending serve; a distinct failure is logged once. Any other
 * error (a refusal, bad credentials) is thrown at once.
 */
async function untilDatastoreAnswers(store: Store, log: Log, signal: AbortSignal | undefined): Promise<void> {
  const never = new AbortController().signal;
  let wait = 100;
  let logged = '';
  for (;;) {
    if (signal?.aborted) throw new ServerStartAborted('stopped while waiting for the datastore');
    try {
      await store.revision();
      if (logged !== '') log.info({}, 'datastore answers');
      return;
    } catch (e) {
      if (!(e instanceof StoreUnavailableError)) throw e;
      if (e.message !== logged) log.warn({ err: e.message }, `datastore unavailable, retrying: ${e.message}`);
      logged = e.message;
    }
    await pause(wait, signal ?? never);
    wait = Math.min(START_RETRY_MAX_MS, wait * 2);
  }
}

export interface RunningServer {
  /** http://HOST:PORT (https:// with `tls`) of the API (no trailing slash). */
  readonly url: string;
  /** The dashboard page: `url` + "/", with `?token=` when the install token protects writes. */
  readonly dashboardUrl: string;
  readonly port: number;
  readonly store: Store;
  /** The allocation history's store and its follower, when kept. */
  readonly history?: { readonly db: HistoryDb; readonly follower: HistoryFollower };
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
    for (const stop of stops.reverse())
      await stop().catch((e: unknown) => cfg.log.child({ component: 'shutdown' }).warn({ err: (e as Error).message }, (e as Error).message));
    stops.length = 0;
  };
  try {
    await untilDatastoreAnswers(store, cfg.log, cfg.signal);
    // One instance for the life of the server: its hints make a node's next pod through the
    // API one transaction, as for a long-lived agent.
    // Its transactions are stamped "serve" in the history (src/cluster/records/history-stamp.ts).
    const ipam = new ClusterIpam(store, { writer: 'serve' });
    const summary = new SummaryCache(store, cfg.summaryTtlMs ?? 1000);
    // With the history kept, its follower tells the summary of changes: one watch, not two.
    if (!cfg.history) stops.push(summary.follow(cfg.log));
    // A check reads every record: off the event loop in a worker with its own connection,
    // except on a memory store (in this process only, and small).
    let checkRun = (): Promise<CheckReport> => ipam.check();
    if (parseStoreUrl(cfg.datastoreUrl).kind !== 'memory') {
      const worker = new CheckInWorker(cfg.datastoreUrl);
      stops.push(() => worker.close());
      checkRun = () => worker.run();
    }
    const checks = new CheckCache(checkRun);
    // Its own probe, not /healthz's: a scrape may wait 2 s for the answer, a liveness probe not.
    const datastoreProbe = new DatastoreProbe(() => ipam.probe(), 2000);
    const metrics = new ServerMetrics({
      pools: async () => (await summary.get()).pools,
      nodes: async () => (await summary.get()).totals.nodes,
      datastoreUp: async () => (await datastoreProbe.health()).state === 'ok',
    });
    const createdPools = await ensureDefaultPools(ipam, () => summary.get(), cfg.defaultPools);
    summary.invalidate();

    let controller: NodeCidrController | undefined;
    if (cfg.controller) {
      controller = new NodeCidrController({
        store,
        config: cfg.controller,
        pollIntervalMs: 500, // resync checks: node changes arrive by its watch
        log: cfg.log.child({ component: 'controller' }),
        onChange: () => summary.invalidate(),
      });
      await controller.start();
      const c = controller;
      stops.push(() => c.stop());
    }

    let history: { db: HistoryDb; follower: HistoryFollower } | undefined;
    if (cfg.history) {
      const { openHistoryDb } = await import('../history/sqlite-history-db.js');
      const db = openHistoryDb(cfg.history.path);
      stops.push(() => Promise.resolve(db.close()));
      const follower = new HistoryFollower({
        store,
        db,
        log: cfg.log.child({ component: 'history' }),
        retentionMs: cfg.history.retentionMs,
        onChange: (following) => summary.noteChange(following),
      });
      await follower.start();
      summary.noteChange(true); // following from here on (caught up to the datastore as of now)
      stops.push(() => follower.stop());
      history = { db, follower };
      addHistoryMetrics(metrics.registry, () => follower.status());
    }

    let gcLoop: Periodic | undefined;
    if (cfg.gc) {
      // GC acts on a report at most one interval old; every finding is re-verified before acting.
      const intervalMs = cfg.gc.intervalMs;
      const gcLog = cfg.log.child({ component: 'gc' });
      const gc = new ClusterGc({ ipam: ipam.withReason('cluster-gc'), check: () => checks.get(intervalMs), graceMs: cfg.gc.graceMs, log: gcLog });
      const runGc = async (): Promise<void> => {
        try {
          const r = await gc.runOnce();
          metrics.gcRuns.inc({ result: 'ok' });
          if (r.leaksReleased) metrics.gcReleased.inc({ kind: 'leak' }, r.leaksReleased);
          if (r.handlesReleased) metrics.gcReleased.inc({ kind: 'handle' }, r.handlesReleased);
          if (r.blocksReleased + r.orphansDeleted) metrics.gcReleased.inc({ kind: 'block' }, r.blocksReleased + r.orphansDeleted);
          if (r.holdsReleased) metrics.gcReleased.inc({ kind: 'sticky-hold' }, r.holdsReleased);
          if (r.leaksReleased + r.handlesReleased + r.blocksReleased + r.orphansDeleted + r.holdsReleased > 0) {
            summary.invalidate();
            checks.invalidate();
          }
        } catch (e) {
          metrics.gcRuns.inc({ result: 'error' });
          throw e;
        }
      };
      // A failure is logged (warn) once per distinct message: "gc run failed (retrying every N ms): …".
      gcLoop = new Periodic({ name: 'gc run', intervalMs, firstDelayMs: Math.min(intervalMs, 1000), task: runGc, log: gcLog });
      gcLoop.start();
      const t = gcLoop;
      stops.push(() => t.stop());
    }

    const deps: ApiDeps = {
      store,
      datastoreUrl: store.url, // password hidden: /healthz, whoami and overview show it
      summary,
      ipam,
      checks,
      metrics,
      tokens: cfg.tokens,
      startedAt: new Date(),
      loops: () => ({
        controller: controller ? { running: true, ...controller.stats() } : { running: false },
        gc: gcLoop ? { running: true, ...gcLoop.status() } : { running: false },
        history: history ? { file: history.db.path, ...history.follower.status() } : { running: false },
      }),
      ...(history ? { history: history.db } : {}),
    };
    const router = apiRouter(deps);
    const server = createHttpServer({
      router,
      docs: ROUTE_DOCS,
      tokens: cfg.tokens,
      metrics,
      hostPolicy,
      ...(cfg.tls ? { tls: cfg.tls } : {}),
      onServerError: (e, method, path) => {
        // The stack of a failure of ours goes to the log (never to the client).
        const stack = e.cause instanceof Error && e.status === 500 ? `\n${e.cause.stack ?? ''}` : '';
        cfg.log
          .child({ component: 'http' })
          .warn({ method, path, status: e.status, code: e.code }, `${method} ${path} → ${e.status} ${e.code}: ${e.message}${stack}`);
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
    return { url, dashboardUrl, port, store, ...(history ? { history } : {}), createdPools, close: stopAll };
  } catch (e) {
    await stopAll();
    throw e;
  }
}
