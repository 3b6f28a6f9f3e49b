/**
 * `podipam serve`: the all-in-one process (see src/server/start-server.ts). Parses and checks
 * every flag before opening anything, prints the dashboard URL and a CNI network config for
 * this node, then runs until SIGINT/SIGTERM.
 */
import { mkdirSync } from 'node:fs';
import { DEFAULT_NODE_NAME_HINT, defaultNodeName } from '../model/node-name.js';
import { join } from 'node:path';
import type { Command } from 'commander';
import type { Tokens } from '../server/http/auth.js';
// default-pools.js holds constants and type-only imports: cheap to load with the CLI.
import { DEFAULT_CLUSTER_CIDRS, DEFAULT_POOLS } from '../server/default-pools.js';
import { defaultDataDir, sqliteUrlFor } from './datastore-url.js';
import { UsageError } from './usage-error.js';
import { parseDuration, parseListen } from './parse-flag.js';
import { cliLogger } from './cli-logger.js';

interface ServeFlags {
  listen: string;
  dataDir?: string;
  tokenFile?: string;
  clusterCidr: string;
  nodeMaskSize?: string;
  nodeMaskSizeV6?: string;
  serviceCidr?: string;
  controller: boolean;
  defaultPools: boolean;
  gcInterval: string;
  gcGrace: string;
  nodeName?: string;
  allowedHost: string[];
  tlsCert?: string;
  tlsKey?: string;
  history: boolean;
  historyDb?: string;
  historyRetention: string;
}

export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('run the HTTP API, Prometheus metrics, the dashboard, the node-CIDR controller and cluster GC')
    .option('--listen <host:port>', 'address to listen on (non-loopback addresses require tokens)', '127.0.0.1:7420')
    .option('--data-dir <dir>', 'directory of the default SQLite datastore (default: $PODIPAM_DATA_DIR, /var/lib/podipam as root, else ~/.local/share/podipam)')
    .option(
      '--token-file <file>',
      'bearer tokens, lines "read=TOKEN" and "admin=TOKEN", mode 0600 (or $PODIPAM_READ_TOKEN / $PODIPAM_ADMIN_TOKEN); without them, writes need the install token in DIR/serve.token',
    )
    .option(
      '--allowed-host <name>',
      'also answer requests whose Host header is NAME (repeatable; localhost, 127.0.0.1, [::1] and the listen address always are)',
      (v: string, prev: string[]) => [...prev, v],
      [] as string[],
    )
    .option('--tls-cert <file>', 'serve HTTPS with this PEM certificate (chain) (or $PODIPAM_TLS_CERT); needs --tls-key')
    .option('--tls-key <file>', 'the PEM private key of --tls-cert, mode 0600 (or $PODIPAM_TLS_KEY)')
    .option('--cluster-cidr <cidrs>', 'node-CIDR controller: cluster CIDR(s), comma separated', DEFAULT_CLUSTER_CIDRS)
    .option('--node-mask-size <n>', 'node-CIDR controller: IPv4 node mask (default 24)')
    .option('--node-mask-size-v6 <n>', 'node-CIDR controller: IPv6 node mask (default 64)')
    .option('--service-cidr <cidrs>', 'node-CIDR controller: CIDR(s) never given to nodes')
    .option('--no-controller', 'do not run the node-CIDR controller')
    .option('--no-default-pools', `do not create ${DEFAULT_POOLS.map((p) => `${p.name} (${p.cidr})`).join(' and ')} when no pool exists`)
    .option('--gc-interval <duration>', 'how often cluster GC looks for leaks and blocks of deleted nodes (0 = never)', '60s')
    .option('--gc-grace <duration>', 'how long a finding must persist before GC releases it', '15m')
    .option(
      '--history-db <file>',
      "the allocation history (who held each address, and when): its SQLite file (default: the datastore's own, DATA_DIR/history.db for the default datastore, DATA_DIR/history/NAME.db for any other)",
    )
    .option('--history-retention <duration>', 'how long the history keeps holds that ended (e.g. 90d, 12h; 0 = forever)', '90d')
    .option('--no-history', 'do not keep the allocation history')
    .option('--node-name <name>', `node name in the printed CNI config (default: ${DEFAULT_NODE_NAME_HINT})`)
    .action(async (flags: ServeFlags, cmd: Command) => {
      const { host, port } = parseListen(flags.listen);
      const gcIntervalMs = parseDuration('--gc-interval', flags.gcInterval);
      const gcGraceMs = parseDuration('--gc-grace', flags.gcGrace);
      const historyRetentionMs = parseDuration('--history-retention', flags.historyRetention);
      if (!flags.history && flags.historyDb !== undefined)
        throw new UsageError(`--history-db ${flags.historyDb} and --no-history contradict each other: give one`);
      const [{ loadTokens, checkListenTokens }, { controllerConfigFromFlags }, { hostPolicy }, { loadInstallToken, INSTALL_TOKEN_FILE }] = await Promise.all([
        import('../server/http/auth.js'),
        import('./controller-flags.js'),
        import('../server/http/request-guard.js'),
        import('../server/http/install-token.js'),
      ]);
      let tokens: Tokens;
      try {
        tokens = loadTokens(flags.tokenFile);
      } catch (e) {
        throw new UsageError((e as Error).message, { cause: e });
      }
      const tlsCert = flags.tlsCert ?? (process.env.PODIPAM_TLS_CERT || undefined);
      const tlsKey = flags.tlsKey ?? (process.env.PODIPAM_TLS_KEY || undefined);
      let tls;
      if (tlsCert !== undefined || tlsKey !== undefined) {
        if (tlsCert === undefined || tlsKey === undefined) {
          throw new UsageError(
            `HTTPS needs both --tls-cert and --tls-key (or $PODIPAM_TLS_CERT and $PODIPAM_TLS_KEY): got only ${tlsCert !== undefined ? `--tls-cert ${tlsCert}` : `--tls-key ${tlsKey}`}`,
          );
        }
        const { loadServerTls } = await import('../server/http/server-tls.js');
        try {
          tls = loadServerTls(tlsCert, tlsKey);
        } catch (e) {
          throw new UsageError((e as Error).message, { cause: e });
        }
      }
      let controller;
      if (flags.controller) {
        try {
          controller = controllerConfigFromFlags({
            clusterCidr: flags.clusterCidr,
            nodeMaskSize: flags.nodeMaskSize,
            nodeMaskSizeV6: flags.nodeMaskSizeV6,
            serviceCidr: flags.serviceCidr,
          });
        } catch (e) {
          throw new UsageError((e as Error).message, { cause: e });
        }
      }
      const globals = cmd.optsWithGlobals<{ datastore?: string }>();
      const dataDir = flags.dataDir ?? defaultDataDir();
      const datastoreUrl = globals.datastore ?? process.env.PODIPAM_DATASTORE ?? sqliteUrlFor(dataDir);
      // Each datastore has its own history file (history-path.ts): trying another one never breaks the default's.
      let historyPath: string | undefined;
      if (flags.history) {
        const { defaultHistoryPath } = await import('./history-path.js');
        try {
          historyPath = flags.historyDb ?? defaultHistoryPath(dataDir, datastoreUrl);
        } catch (e) {
          throw new UsageError((e as Error).message, { cause: e });
        }
      }
      if (datastoreUrl === sqliteUrlFor(dataDir) || (historyPath !== undefined && flags.historyDb === undefined)) {
        try {
          mkdirSync(dataDir, { recursive: true });
        } catch (e) {
          throw new Error(`cannot create --data-dir ${dataDir}: ${(e as Error).message}`, { cause: e });
        }
      }
      if (historyPath !== undefined && flags.historyDb === undefined) await moveForeignHistory(dataDir, historyPath, datastoreUrl);
      try {
        checkListenTokens(host, tokens);
        hostPolicy(host, flags.allowedHost);
      } catch (e) {
        throw new UsageError((e as Error).message, { cause: e });
      }
      // Loopback without tokens: reads are open, writes need the per-install token.
      if (tokens.read === undefined && tokens.admin === undefined) tokens = { install: loadInstallToken(dataDir) };
      const logger = await cliLogger(cmd, 'serve');
      // The signals are ours before the port answers: a SIGTERM while serve is still starting (a
      // rolling update right after a start) stops it cleanly once it has started.
      let signalled: string | undefined;
      // ... and one while it still waits for the datastore stops the wait (nothing was started).
      const starting = new AbortController();
      let onSignal = (sig: string): void => {
        signalled = sig;
        starting.abort();
      };
      const onInt = (): void => onSignal('SIGINT');
      const onTerm = (): void => onSignal('SIGTERM');
      process.on('SIGINT', onInt);
      process.on('SIGTERM', onTerm);
      const { startServer, ServerStartAborted } = await import('../server/start-server.js');
      const server = await startServer({
        signal: starting.signal,
        host,
        port,
        datastoreUrl,
        tokens,
        allowedHosts: flags.allowedHost,
        controller,
        defaultPools: flags.defaultPools ? DEFAULT_POOLS : [],
        gc: gcIntervalMs > 0 ? { intervalMs: gcIntervalMs, graceMs: gcGraceMs } : undefined,
        ...(historyPath !== undefined ? { history: { path: historyPath, retentionMs: historyRetentionMs } } : {}),
        ...(tls ? { tls } : {}),
        log: logger,
      }).catch((e: unknown) => {
        if (!(e instanceof ServerStartAborted)) throw e;
        logger.info({ signal: signalled }, `${signalled}, shutting down before the datastore answered`);
        return undefined;
      });
      if (server === undefined) {
        process.off('SIGINT', onInt);
        process.off('SIGTERM', onTerm);
        return;
      }
      const { cniConflist } = await import('../server/cni-config.js');
      const nodeName = flags.nodeName ?? defaultNodeName();
      const out = process.stdout;
      out.write(`podipam serve: dashboard and API on ${server.dashboardUrl} (datastore ${server.store.url})\n`);
      if (server.createdPools.length > 0) out.write(`podipam serve: created pools ${server.createdPools.join(', ')}\n`);
      out.write(
        `podipam serve: node-CIDR controller ${controller ? `on (${flags.clusterCidr})` : 'off'}; cluster GC ${gcIntervalMs > 0 ? `every ${flags.gcInterval}, grace ${flags.gcGrace}` : 'off'}; ` +
          `history ${historyPath !== undefined ? `on (${historyPath}, retention ${historyRetentionMs > 0 ? flags.historyRetention : 'forever'})` : 'off'}; ` +
          `auth ${tokens.admin || tokens.read ? 'bearer tokens' : `reads open (loopback), writes need the install token in ${join(dataDir, INSTALL_TOKEN_FILE)}`}\n`,
      );
      out.write(`\nCNI network config for node "${nodeName}" (or let "podipam install-cni --backend cluster --datastore URL" write it and the shim):\n`);
      // store.url: an etcd password is never printed (the config shows *** in its place)
      out.write(`${cniConflist({ datastore: server.store.url, nodeName, pools: [] })}\n\n`);
      // No token on this command line: simulate reads DIR/serve.token (or $PODIPAM_ADMIN_TOKEN) itself.
      const podipam = (await import('./cli-command.js')).cliCommand();
      const simArgs = [
        ...(server.url === 'http://127.0.0.1:7420' ? [] : ['--server', server.url]),
        ...(dataDir === defaultDataDir() ? [] : ['--data-dir', dataDir]),
      ];
      const tokenNote = tokens.admin ? ' (with $PODIPAM_ADMIN_TOKEN set to the admin token)' : '';
      out.write(`Try: ${[podipam, 'simulate', ...simArgs].join(' ')} --nodes 20 --pods 600 --churn 0.2${tokenNote}\n`);
      await new Promise<void>((resolve) => {
        onSignal = (sig: string): void => {
          logger.info({ signal: sig }, `${sig}, shutting down`);
          process.off('SIGINT', onInt);
          process.off('SIGTERM', onTerm);
          resolve();
        };
        if (signalled !== undefined) onSignal(signalled);
      });
      await server.close();
    });
}

/**
 * DATA_DIR/history.db written, by an older podipam, for another datastore than this default one:
 * moved to that datastore's own history file (logged on stderr), so this serve starts.
 */
async function moveForeignHistory(dataDir: string, historyPath: string, datastoreUrl: string): Promise<void> {
  const { existsSync } = await import('node:fs');
  if (historyPath !== join(dataDir, 'history.db') || !existsSync(historyPath)) return;
  const [{ openHistoryDb }, { redactStoreUrl }, { moveForeignDefaultHistory }] = await Promise.all([
    import('../history/sqlite-history-db.js'),
    import('../store/index.js'),
    import('./history-path.js'),
  ]);
  let recorded: string | undefined;
  try {
    const db = openHistoryDb(historyPath, { readonly: true });
    try {
      recorded = db.position()?.source;
    } finally {
      db.close();
    }
  } catch {
    return; // not a history file, unreadable: the follower's own open says why
  }
  if (recorded === undefined || recorded === redactStoreUrl(datastoreUrl)) return;
  const to = moveForeignDefaultHistory(dataDir, recorded);
  if (to !== undefined)
    process.stderr.write(`podipam serve: ${historyPath} followed datastore ${recorded}, not this one: moved to ${to} (that datastore's own history file)\n`);
}
