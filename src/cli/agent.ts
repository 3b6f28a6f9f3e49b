/**
 * `podipam agent` (the per-node daemon, src/agent) and `podipam agent status` (asks a running
 * agent over its socket; exit 1 when it does not answer, so it serves as a readiness probe).
 */
import { DEFAULT_NODE_NAME_HINT } from '../model/node-name.js';
import type { Command } from 'commander';
import type { WarmOptions } from '../warm/warm-service.js';
import { parseDuration, parseListen, parseOptionalIntFlag } from './parse-flag.js';
import { UsageError } from './usage-error.js';
import { OPTIMIZE_WHEN, type OptimizeWhen, isOptimizeWhen } from '../util/stop-optimizing.js';

interface AgentFlags {
  socket: string;
  node?: string;
  datastore?: string;
  dataDir?: string;
  metricsListen: string;
  allowUid: string[];
  pools?: string;
  minIdle?: string;
  maxIdle?: string;
  capacity?: string;
  cooldown?: string;
  stickyFor?: string;
  kubeconfig?: string;
  inCluster?: boolean;
  stickyNamespaces?: string;
  stickyNamePattern?: string;
  gcInterval?: string;
  viewInterval?: string;
  config?: string;
  headroomInterval?: string;
  headroomClear?: string;
  realtimePriority?: string;
  /** undefined: the default (on). */
  masquerade?: boolean;
  masqueradeInterval?: string;
  runtimeEndpoint?: string;
  runtimeReconcileInterval?: string;
  runtimeReconcileGrace?: string;
  runtimeReconcileDataDir?: string;
  warmUp?: string;
  optimize?: string;
}

/** How an option is named in an error: its flag, or its key in the config file it came from. */
type Label = (key: keyof AgentFlags) => string;

const flagOf = (key: string): string => `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;

const DEFAULT_SOCKET = '/run/podipam/agent.sock';
/** The agent's default warm-up (src/agent/warm-up-rounds.ts WARM_UP_BUDGET_MS, as a duration). */
const DEFAULT_WARM_UP = '3s';
/** When V8 may optimise the agent's code by default (src/util/stop-optimizing.ts). */
const DEFAULT_OPTIMIZE: OptimizeWhen = 'warm-up';

export function registerAgent(program: Command): void {
  const agent = program
    .command('agent')
    .description('run the node agent: serves the CNI shim (/opt/cni/bin/podipam) over a unix socket, every back end')
    .option('--socket <path>', 'unix socket to serve', process.env.PODIPAM_AGENT_SOCKET || DEFAULT_SOCKET)
    .option('--node <name>', `node name for calls whose config and environment name none (default: ${DEFAULT_NODE_NAME_HINT})`)
    .option('--data-dir <dir>', "the agent's own state directory (default: /var/lib/podipam/agent)")
    .option('--metrics-listen <host:port>', 'Prometheus /metrics and /healthz ("off" for none)', '127.0.0.1:7421')
    .option(
      '--allow-uid <uid>',
      "also serve callers with this uid (repeatable; root and the agent's uid always)",
      (v: string, acc: string[]) => [...acc, v],
      [] as string[],
    )
    .option('--pools <a,b>', 'warm pool: allocate from these pools, in order (default: every enabled pool selecting the node)')
    .option(
      '--min-idle <n>',
      'warm pool: keep at least N idle addresses per family (turns the warm pool on; on --datastore, else $PODIPAM_DATASTORE, else SQLite in the data directory)',
    )
    .option('--max-idle <n>', 'warm pool: return idle addresses above N (default: --min-idle)')
    .option('--capacity <n>', 'warm pool: hold at most N addresses per family, idle and in use (default: 256, at least --max-idle)')
    .option('--cooldown <duration>', 'warm pool: a released address is handed out again only after this', '30s')
    .option('--sticky-for <duration>', "warm pool: a sticky pod's released address waits this long for it", '10m')
    .option(
      '--kubeconfig <file>',
      "watch this node's pods and the namespaces on this API server (their annotations place pods, in every mode); taint the Node podipam.io/ip-exhausted when out of addresses; warm pool: sticky StatefulSet pods, GC of the addresses of pods gone",
    )
    .option('--in-cluster', 'as --kubeconfig, with the in-cluster service account (the agent runs in a pod)')
    .option('--sticky-namespaces <a,b>', 'warm pool: pods of these namespaces are sticky (with --kubeconfig: only their StatefulSet pods)')
    .option('--sticky-name-pattern <regex>', 'warm pool: pods whose whole name matches are sticky (with --kubeconfig: only StatefulSet pods)')
    .option('--gc-interval <duration>', 'warm pool: period of the pod GC loop (with --kubeconfig; jittered ±10%)', '5m')
    .option(
      '--view-interval <duration>',
      "warm pool: publish the pool's holder view (idle, cooling, sticky, pods served; what `podipam ipam check` compares) at most this often when it changes; unchanged, its small heartbeat (agent-beats/NODE) every 6 such periods",
      '5s',
    )
    .option(
      '--headroom-interval <duration>',
      'period of the node headroom resync (free + claimable addresses per family; the ip-exhausted taint with --kubeconfig)',
      '30s',
    )
    .option('--headroom-clear <n>', 'with --kubeconfig: the podipam.io/ip-exhausted taint set at headroom 0 is removed once headroom is at least N', '4')
    .option(
      '--realtime-priority <n>',
      'run every agent thread under SCHED_RR at this real-time priority (1-99), so a pod start never waits behind the runtime for a CPU; needs CAP_SYS_NICE (refused: logged, the agent runs on at its ordinary priority)',
    )
    .option(
      '--masquerade',
      "keep the node masquerade from the datastore's pools: pod traffic to outside every pod pool leaves with the node's address, pod-to-pod traffic never (the default)",
    )
    .option('--no-masquerade', 'leave the nat table alone (the cluster and agent configs do not masquerade: then nothing does)')
    .option('--masquerade-interval <duration>', 'period of the masquerade resync (pools added or removed take effect within it)', '30s')
    .option(
      '--runtime-endpoint <endpoint>',
      "reconcile this node's allocations with the container runtime over CRI (e.g. unix:///run/containerd/containerd.sock): an allocation whose sandbox two of its answers lack, past the grace, is freed",
    )
    .option(
      '--runtime-reconcile-interval <duration>',
      'with --runtime-endpoint: period of the sandbox listing (also the least spacing of the two answers)',
      '1m',
    )
    .option(
      '--runtime-reconcile-grace <duration>',
      "with --runtime-endpoint: an allocation younger than this is never freed (at least the longest sandbox creation: 2 × kubelet's --runtime-request-timeout, 2m)",
      '4m',
    )
    .option(
      '--runtime-reconcile-data-dir <dirs>',
      "with --runtime-endpoint: the local back end's data directories to reconcile, comma-separated",
      '/var/lib/cni/networks',
    )
    .option(
      '--warm-up <duration>',
      'before listening, run ADDs and DELs through the request path on private scratch stores for this long (on a busy node up to 4 times it, at most 30 s more, for its target rounds), so the first pods do not run cold code ("0s": none)',
      DEFAULT_WARM_UP,
    )
    .option(
      '--optimize <when>',
      'when V8 may optimise the agent\'s code: "warm-up" (while the warm-up runs, never after: nothing compiles behind a pod\'s call; without a completed warm-up, as "always") or "always" (V8\'s defaults)',
      DEFAULT_OPTIMIZE,
    )
    .option('--config <file>', 'JSON file of the same options (keys: minIdle, stickyFor, …); flags win over it')
    .action(async (flags: AgentFlags, cmd: Command) => {
      const globals = cmd.optsWithGlobals<{ datastore?: string }>();
      const merged: AgentFlags & { datastore?: string } = { ...flags, ...(globals.datastore !== undefined ? { datastore: globals.datastore } : {}) };
      const fromFile = new Set<string>();
      if (flags.config !== undefined) {
        const { readAgentConfigFile } = await import('../agent/agent-config-file.js');
        let file: ReturnType<typeof readAgentConfigFile>;
        try {
          file = readAgentConfigFile(flags.config);
        } catch (e) {
          throw new UsageError((e as Error).message, { cause: e });
        }
        for (const [k, v] of Object.entries(file)) {
          const onCli = k === 'datastore' ? globals.datastore !== undefined : cmd.getOptionValueSource(k) === 'cli';
          if (onCli) continue;
          (merged as unknown as Record<string, unknown>)[k] = v;
          fromFile.add(k);
        }
      }
      merged.datastore ??= process.env.PODIPAM_DATASTORE;
      const label: Label = (k) => (fromFile.has(k) ? `${k} (config file ${flags.config})` : flagOf(k));
      const { cliLogger } = await import('./cli-logger.js');
      await runAgent(merged, await cliLogger(cmd, 'agent'), label);
    });
  agent
    .command('status')
    .description('ask a running agent for its status (exit 1 when it does not answer)')
    .option('--socket <path>', 'the agent socket', process.env.PODIPAM_AGENT_SOCKET || DEFAULT_SOCKET)
    .option('--json', 'print JSON')
    .action(async (own: { socket: string; json?: boolean }, cmd: Command) => {
      // `--socket` after `agent` or after `status`: commander gives it to whichever it meets first.
      const flags = { ...own, ...(cmd.parent?.getOptionValueSource('socket') === 'cli' ? { socket: cmd.parent.opts<{ socket: string }>().socket } : {}) };
      const [{ callAgent }, { parseAgentStatus }] = await Promise.all([import('../wire/agent-client.js'), import('../agent/parse-agent-status.js')]);
      let body: string;
      let status: import('../agent/agent-stats.js').AgentStatus;
      try {
        const a = await callAgent(flags.socket, { kind: 'status' }, { connectTimeoutMs: 2000, answerTimeoutMs: 5000 });
        body = a.body.toString('utf8');
        if (a.status !== 0) throw new Error(body.trim());
        status = parseAgentStatus(body, flags.socket);
      } catch (e) {
        process.stderr.write(`podipam: agent not answering: ${(e as Error).message}\n`);
        process.exitCode = 1;
        return;
      }
      if (flags.json) {
        process.stdout.write(body);
        return;
      }
      const { formatAgentStatus } = await import('../agent/format-status.js');
      process.stdout.write(formatAgentStatus(status));
    });
}

async function runAgent(flags: AgentFlags & { datastore?: string }, logger: import('../log/logger.js').Logger, label: Label): Promise<void> {
  const { agentConfig, AgentConfigError } = await import('../agent/agent-config.js');
  const flagOfField = (f: import('../agent/agent-config.js').AgentField): keyof AgentFlags => (f === 'allowUids' ? 'allowUid' : f);
  let config: import('../agent/agent-config.js').AgentConfig;
  try {
    config = await agentConfig(
      {
        allowUids: flags.allowUid,
        ...(flags.node !== undefined ? { node: flags.node } : {}),
        ...(flags.datastore !== undefined ? { datastore: flags.datastore } : {}),
      },
      (f) => label(flagOfField(f)),
    );
  } catch (e) {
    throw e instanceof AgentConfigError ? new UsageError(e.message) : e;
  }
  const { node, allowUids } = config;
  let metricsAt: ReturnType<typeof parseListen> | undefined;
  try {
    metricsAt = flags.metricsListen === 'off' ? undefined : parseListen(flags.metricsListen);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    throw new UsageError(`invalid ${label('metricsListen')} ${JSON.stringify(flags.metricsListen)}: expected HOST:PORT (e.g. 127.0.0.1:7421) or "off"`, {
      cause: e,
    });
  }
  const realtime = parseOptionalIntFlag(label('realtimePriority'), flags.realtimePriority, { min: 1, max: 99 });
  const kube = await kubeFlags(flags, label);
  const headroom = headroomFlags(flags, label);
  const masqueradeIntervalMs = parseDuration(label('masqueradeInterval'), flags.masqueradeInterval ?? '30s');
  if (masqueradeIntervalMs < 100) throw new UsageError(`invalid ${label('masqueradeInterval')} ${JSON.stringify(flags.masqueradeInterval)}: at least 100ms`);
  const masquerade = flags.masquerade === false ? undefined : { intervalMs: masqueradeIntervalMs };
  const runtimeReconcile = runtimeReconcileFlags(flags, label);
  const warmUpMs = parseDuration(label('warmUp'), flags.warmUp ?? DEFAULT_WARM_UP);
  if (warmUpMs > 60_000) throw new UsageError(`invalid ${label('warmUp')} ${JSON.stringify(flags.warmUp)}: at most 60s`);
  const optimize = flags.optimize ?? DEFAULT_OPTIMIZE;
  if (!isOptimizeWhen(optimize)) throw new UsageError(`invalid ${label('optimize')} ${JSON.stringify(optimize)}: expected one of ${OPTIMIZE_WHEN.join(', ')}`);
  const warm = await warmFlags(flags, label, kube);
  if (warm && flags.datastore === undefined) {
    // As every command: --datastore, else $PODIPAM_DATASTORE (merged above), else SQLite in the data directory.
    const { defaultDataDir, sqliteUrlFor } = await import('./datastore-url.js');
    flags = { ...flags, datastore: sqliteUrlFor(defaultDataDir()) };
  }
  const [{ startAgent }, { AgentListenError }, { AgentMetrics }, { listenMetrics }] = await Promise.all([
    import('../agent-main.js'),
    import('../agent/agent-server.js'),
    import('../agent/agent-metrics.js'),
    import('../agent/metrics-listener.js'),
  ]);
  let agent: import('../agent/agent-server.js').Agent | undefined;
  const metrics = new AgentMetrics(() => agent);
  // Every listener or none: the metrics port first (nothing is served if it is taken), then the
  // socket; a listener that fails stops the agent with exit 2 (a usage error: choose another).
  let http: import('node:http').Server | undefined;
  // The signals are ours before the socket answers: a SIGTERM that comes while the agent is still
  // starting (a rolling update right after a start) stops it cleanly once it has started.
  let signalled: string | undefined;
  let onSignal = (sig: string): void => void (signalled = sig);
  process.once('SIGTERM', () => onSignal('SIGTERM'));
  process.once('SIGINT', () => onSignal('SIGINT'));
  try {
    http = metricsAt ? await listenMetrics(metrics.registry, metricsAt.host, metricsAt.port) : undefined;
  } catch (e) {
    throw new UsageError((e as Error).message, { cause: e });
  }
  try {
    agent = await startAgent({
      socket: flags.socket,
      node,
      allowUids,
      ...(flags.datastore !== undefined ? { datastore: flags.datastore } : {}),
      ...(warm ? { warm } : {}),
      ...(kube ? { kube } : {}),
      headroom,
      ...(masquerade ? { masquerade } : {}),
      ...(runtimeReconcile ? { runtimeReconcile } : {}),
      warmUpMs,
      stopOptimizingAfterWarmUp: optimize === 'warm-up',
      onCall: (c, warmUp) => metrics.observe(c, warmUp),
      log: logger,
    });
  } catch (e) {
    http?.close();
    throw e instanceof AgentListenError ? new UsageError(e.message) : e;
  }
  if (realtime !== undefined) await applyRealtime(realtime, logger);
  logger.info(
    { socket: flags.socket, node, metrics: flags.metricsListen, masquerade: masquerade !== undefined, optimizing: agent.optimizing, pid: process.pid },
    'agent ready',
  );
  await new Promise<void>((resolve) => {
    onSignal = (sig: string): void => {
      logger.info({ signal: sig, inFlight: agent.stats.inFlight }, 'stopping: draining calls in flight');
      void agent.close().then(() => {
        http?.close();
        resolve();
      });
    };
    if (signalled !== undefined) onSignal(signalled);
  });
}

/** The API server to talk to (--kubeconfig FILE or --in-cluster; undefined: none); UsageError naming the flag. */
async function kubeFlags(flags: AgentFlags, label: Label): Promise<{ kubeconfig?: string } | undefined> {
  if (flags.kubeconfig !== undefined && flags.inCluster) throw new UsageError(`give ${label('kubeconfig')} or --in-cluster, not both`);
  if (flags.inCluster) return {};
  if (flags.kubeconfig === undefined) return undefined;
  const { existsSync } = await import('node:fs');
  if (!existsSync(flags.kubeconfig)) throw new UsageError(`invalid ${label('kubeconfig')} ${JSON.stringify(flags.kubeconfig)}: no such file`);
  return { kubeconfig: flags.kubeconfig };
}

/**
 * `--realtime-priority N`, applied once the agent's threads exist (one made later starts
 * as an ordinary task: SCHED_RESET_ON_FORK covers threads too). A
 * refusal (no CAP_SYS_NICE, a cgroup without real-time runtime) costs latency, not correctness:
 * warned about, and the agent serves on.
 */
async function applyRealtime(priority: number, logger: import('../log/logger.js').Logger): Promise<void> {
  const { setRealtimePriority, schedulingPolicy } = await import('../util/realtime.js');
  try {
    const threads = setRealtimePriority(priority);
    logger.info({ threads, scheduling: schedulingPolicy() }, 'real-time scheduling on');
  } catch (e) {
    logger.warn({ priority, errno: (e as { errno?: number }).errno }, (e as Error).message);
  }
}

/** Runtime reconciliation's options (undefined without --runtime-endpoint); UsageError naming the flag. */
function runtimeReconcileFlags(flags: AgentFlags, label: Label): { endpoint: string; intervalMs: number; graceMs: number; dataDirs: string[] } | undefined {
  if (flags.runtimeEndpoint === undefined) return undefined;
  if (!/^unix:\/\/\/./.test(flags.runtimeEndpoint) || flags.runtimeEndpoint.length > 114) {
    throw new UsageError(`invalid ${label('runtimeEndpoint')} ${JSON.stringify(flags.runtimeEndpoint)}: expected unix:///absolute/path/to/runtime.sock`);
  }
  const intervalMs = parseDuration(label('runtimeReconcileInterval'), flags.runtimeReconcileInterval ?? '1m');
  if (intervalMs < 100) throw new UsageError(`invalid ${label('runtimeReconcileInterval')} ${JSON.stringify(flags.runtimeReconcileInterval)}: at least 100ms`);
  const graceMs = parseDuration(label('runtimeReconcileGrace'), flags.runtimeReconcileGrace ?? '4m');
  const raw = flags.runtimeReconcileDataDir ?? '/var/lib/cni/networks';
  const dataDirs = raw === '' ? [] : raw.split(',');
  const bad = dataDirs.find((d) => !d.startsWith('/'));
  if (bad !== undefined)
    throw new UsageError(`invalid ${label('runtimeReconcileDataDir')} ${JSON.stringify(raw)}: ${JSON.stringify(bad)} is not an absolute path`);
  return { endpoint: flags.runtimeEndpoint, intervalMs, graceMs, dataDirs };
}

/** The headroom resync's options (src/agent/headroom.ts); UsageError naming the flag. */
function headroomFlags(flags: AgentFlags, label: Label): { intervalMs: number; clearAt: number } {
  const intervalMs = parseDuration(label('headroomInterval'), flags.headroomInterval ?? '30s');
  if (intervalMs < 100) throw new UsageError(`invalid ${label('headroomInterval')} ${JSON.stringify(flags.headroomInterval)}: at least 100ms`);
  const clearAt = parseOptionalIntFlag(label('headroomClear'), flags.headroomClear ?? '4', { min: 1, max: 1_000_000_000 }) ?? 4;
  return { intervalMs, clearAt };
}

/** The warm-pool options from the flags (undefined when none is given); UsageError naming the flag. */
async function warmFlags(
  flags: AgentFlags & { datastore?: string },
  label: Label,
  kube: { kubeconfig?: string } | undefined,
): Promise<Omit<WarmOptions, 'datastore' | 'node' | 'log'> | undefined> {
  const given = flags.minIdle !== undefined || flags.maxIdle !== undefined || flags.capacity !== undefined || flags.pools !== undefined;
  const warmOnly = (['stickyNamespaces', 'stickyNamePattern'] as const).find((k) => flags[k] !== undefined);
  if (!given) {
    if (warmOnly) throw new UsageError(`${label(warmOnly)} is a warm pool option: give --min-idle N too`);
    return undefined;
  }
  const count = (key: keyof AgentFlags, v: string | undefined): number | undefined => {
    return parseOptionalIntFlag(label(key), v, { min: 0, max: 999_999 });
  };
  const minIdle = count('minIdle', flags.minIdle) ?? 0;
  const maxIdle = count('maxIdle', flags.maxIdle) ?? minIdle;
  const capacity = count('capacity', flags.capacity) ?? Math.max(256, maxIdle);
  const cooldownMs = parseDuration(label('cooldown'), flags.cooldown ?? '30s');
  const stickyForMs = parseDuration(label('stickyFor'), flags.stickyFor ?? '10m');
  const { validateWarmSizing, WarmPoolConfigError } = await import('../warm/warm-pool-config.js');
  try {
    validateWarmSizing({ minIdle, maxIdle, capacity, cooldownMs, stickyForMs });
  } catch (e) {
    if (!(e instanceof WarmPoolConfigError)) throw e;
    const flag = (f: string): string =>
      label(({ cooldownMs: 'cooldown', stickyForMs: 'stickyFor' } as Record<string, keyof AgentFlags>)[f] ?? (f as keyof AgentFlags));
    if (e.bound) throw new UsageError(`invalid ${flag(e.field)} ${String(e.value)}: must not exceed ${flag(e.bound.field)} (${e.bound.value})`, { cause: e });
    if (e.field === 'capacity' && e.value === 0)
      throw new UsageError(`invalid ${flag('capacity')} 0: the warm pool must hold at least one address`, { cause: e });
    throw new UsageError(`invalid warm pool options: ${e.message}`, { cause: e });
  }
  const gcIntervalMs = parseDuration(label('gcInterval'), flags.gcInterval ?? '5m');
  if (gcIntervalMs < 100) throw new UsageError(`invalid ${label('gcInterval')} ${JSON.stringify(flags.gcInterval)}: at least 100ms`);
  const viewIntervalMs = parseDuration(label('viewInterval'), flags.viewInterval ?? '5s');
  if (viewIntervalMs < 100) throw new UsageError(`invalid ${label('viewInterval')} ${JSON.stringify(flags.viewInterval)}: at least 100ms`);
  const list = (key: keyof AgentFlags, v: string | undefined, what: string): string[] | undefined => {
    if (v === undefined) return undefined;
    const items = v.split(',').map((p) => p.trim());
    if (items.some((p) => p === '')) throw new UsageError(`invalid ${label(key)} ${JSON.stringify(v)}: expected comma-separated ${what}`);
    return items;
  };
  const pools = list('pools', flags.pools, 'pool names');
  const namespaces = list('stickyNamespaces', flags.stickyNamespaces, 'namespaces');
  const sticky = { ...(namespaces ? { namespaces } : {}), ...(flags.stickyNamePattern !== undefined ? { namePattern: flags.stickyNamePattern } : {}) };
  const { checkStickyPolicy } = await import('../warm/sticky-policy.js');
  try {
    checkStickyPolicy(sticky, (k) => label(k === 'namespaces' ? 'stickyNamespaces' : 'stickyNamePattern'));
  } catch (e) {
    throw new UsageError((e as Error).message, { cause: e });
  }
  const dataDir = flags.dataDir ?? '/var/lib/podipam/agent';
  return {
    dataDir,
    minIdle,
    maxIdle,
    capacity,
    cooldownMs,
    stickyForMs,
    gcIntervalMs,
    viewIntervalMs,
    ...(pools ? { pools } : {}),
    ...(Object.keys(sticky).length > 0 ? { sticky } : {}),
    // The warm pool's pod source is the agent's one client (agent-main.ts); this names it.
    ...(kube ? { kubeconfig: kube.kubeconfig ?? '(in-cluster service account)' } : {}),
  };
}
