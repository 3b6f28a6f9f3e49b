/**
 * Real etcd clusters for tests: `/usr/bin/etcd` (Debian etcd-server 3.4) on loopback ports,
 * with throw-away data directories (on /dev/shm when present: etcd 3.4 has no
 * --unsafe-no-fsync, and tmpfs makes its fsyncs free). Optionally serving clients over TLS
 * (with client-certificate auth), peers too, and with etcd authentication enabled.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { request as httpsRequest } from 'node:https';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, openSync, closeSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireExecutable } from './prereq.js';
import { stopProcess } from './proc-locks.js';

const ETCD = process.env['PODIPAM_ETCD_BIN'] ?? '/usr/bin/etcd';
const START_TIMEOUT_MS = 20_000;
const STOP_TIMEOUT_MS = 5_000;

/** One member of a test cluster. */
export interface EtcdMember {
  readonly name: string;
  /** `http(s)://127.0.0.1:PORT` (or its `hosts` address), where the member serves clients (and the JSON gateway). */
  readonly clientUrl: string;
  /** `127.0.0.1:PORT` (or its `hosts` address), as written in a store URL. */
  readonly endpoint: string;
  readonly dataDir: string;
  /** File collecting the member's stdout and stderr, for debugging a failed test. */
  readonly logFile: string;
  readonly running: boolean;
  /** Sends `signal` (default SIGKILL) and resolves once the process has exited. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts the member again on its data directory and ports; resolves when it is healthy. */
  restart(): Promise<void>;
  /**
   * SIGSTOP, resolved once every thread of the member is stopped: it keeps its connections
   * and ports but answers nothing (a hung member).
   */
  pause(): Promise<void>;
  /** SIGCONT after pause(). */
  resume(): void;
}

export interface EtcdCluster {
  /**
   * `etcd://127.0.0.1:p1,127.0.0.1:p2,…`, members in order; `etcds://…` with TLS (no query:
   * the test adds its ca, cert, key, servername).
   */
  readonly url: string;
  readonly members: readonly EtcdMember[];
  /** Index in `members` of the current leader, asked of the first running member. */
  leader(): Promise<number>;
  /** Kills every member and removes the temp directory; safe to call twice. */
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // A test that forgot stop(), or a failing one, must not leave etcd running.
  process.on('exit', () => {
    for (const p of live) p.kill('SIGKILL');
  });
}

/** The members' raft heartbeat and election timeout (ms): short, so fault tests run in seconds. */
export const ETCD_HEARTBEAT_MS = 50;
export const ETCD_ELECTION_TIMEOUT_MS = 500;

export interface EtcdOptions {
  readonly members?: 1 | 3;
  /** Where the temp directory goes; default /dev/shm if present (benchmarks may want a disk). */
  readonly baseDir?: string;
  /**
   * Serve clients over HTTPS with this server certificate (peers plain HTTP on loopback,
   * unless `peer`). `clientCertAuth`: members refuse clients without a certificate signed by
   * `caFile` (--client-cert-auth); the helper's own requests then use `client`.
   */
  readonly tls?: {
    readonly caFile: string;
    readonly certFile: string;
    readonly keyFile: string;
    /** The name in the server certificate, which the helper's requests verify. */
    readonly serverName: string;
    readonly clientCertAuth?: boolean;
    readonly client?: { readonly certFile: string; readonly keyFile: string };
    /**
     * Peers over TLS too (https peer URLs), each member presenting this certificate and
     * requiring one signed by `caFile` from the others (--peer-client-cert-auth).
     */
    readonly peer?: { readonly certFile: string; readonly keyFile: string };
  };
  /**
   * Enable etcd authentication once the members are healthy: user `root` (role root) with
   * this password; the helper's own requests then authenticate as root.
   */
  readonly rootPassword?: string;
  /** More etcd flags, e.g. `['--auth-token-ttl', '1']`. */
  readonly extraArgs?: readonly string[];
  /** Variables set in the members' environment beside this process's (e.g. Go's GOGC). */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * Member i runs inside network namespace `hosts[i].netns` (through `ip netns exec`) and
   * listens on `hosts[i].ip` instead of loopback; the namespaces must be reachable from this
   * process (the partition rig, test/chaos/, gives them a bridge this process is on too).
   */
  readonly hosts?: readonly { readonly netns: string; readonly ip: string }[];
  /**
   * The CPUs the members may run on (a `taskset -c` list, e.g. `1`); unset: any. A benchmark
   * keeps the datastore off the CPUs of the node it measures, as a cluster's etcd runs on
   * machines of its own.
   */
  readonly cpus?: string;
}

/**
 * Starts a fresh cluster of 1 or 3 members on free loopback ports and resolves when every
 * member is healthy (leader elected); rejects after 20 s with the members' log tails. Tries
 * three times in case a port picked as free was taken meanwhile.
 */
export async function startEtcd(options: EtcdOptions = {}): Promise<EtcdCluster> {
  requireExecutable(ETCD);
  const count = options.members ?? 1;
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const cluster = await launch(count, options);
    try {
      await Promise.all(cluster.members.map((m) => waitHealthy(m, cluster.procOf(m))));
      if (options.rootPassword !== undefined) await enableAuth(cluster.members[0] as EtcdMember, options.rootPassword);
      return cluster.api;
    } catch (e) {
      lastError = e;
      await cluster.api.stop();
    }
  }
  throw lastError;
}

async function launch(count: number, options: EtcdOptions) {
  installExitHook();
  const base = options.baseDir ?? (existsSync('/dev/shm') ? '/dev/shm' : tmpdir());
  const root = mkdtempSync(join(base, 'podipam-etcd-'));
  const ports = await freePorts(count * 3);
  const tls = options.tls;
  const scheme = tls ? 'https' : 'http';
  if (options.hosts !== undefined && options.hosts.length !== count) throw new Error(`etcd hosts: ${options.hosts.length} given for ${count} members`);
  const specs = Array.from({ length: count }, (_, i) => ({
    name: `m${i}`,
    host: options.hosts?.[i]?.ip ?? '127.0.0.1',
    netns: options.hosts?.[i]?.netns,
    clientPort: ports[3 * i] as number,
    peerPort: ports[3 * i + 1] as number,
    // plain-HTTP /health and /metrics, which need no client certificate
    metricsPort: ports[3 * i + 2] as number,
    dataDir: join(root, `m${i}`),
    logFile: join(root, `m${i}.log`),
  }));
  const peerScheme = tls?.peer ? 'https' : 'http';
  const initialCluster = specs.map((s) => `${s.name}=${peerScheme}://${s.host}:${s.peerPort}`).join(',');
  const token = `podipam-test-${randomUUID()}`;
  const procs = new Map<string, ChildProcess>();

  const argsOf = (s: (typeof specs)[number]) => [
    '--name',
    s.name,
    '--data-dir',
    s.dataDir,
    '--listen-client-urls',
    `${scheme}://${s.host}:${s.clientPort}`,
    '--advertise-client-urls',
    `${scheme}://${s.host}:${s.clientPort}`,
    '--listen-metrics-urls',
    `http://${s.host}:${s.metricsPort}`,
    ...(tls ? ['--cert-file', tls.certFile, '--key-file', tls.keyFile, '--trusted-ca-file', tls.caFile] : []),
    ...(tls?.clientCertAuth ? ['--client-cert-auth'] : []),
    '--listen-peer-urls',
    `${peerScheme}://${s.host}:${s.peerPort}`,
    '--initial-advertise-peer-urls',
    `${peerScheme}://${s.host}:${s.peerPort}`,
    ...(tls?.peer
      ? ['--peer-cert-file', tls.peer.certFile, '--peer-key-file', tls.peer.keyFile, '--peer-trusted-ca-file', tls.caFile, '--peer-client-cert-auth']
      : []),
    '--initial-cluster',
    initialCluster,
    '--initial-cluster-state',
    'new',
    '--initial-cluster-token',
    token,
    // fast failure detection, so fault tests run in seconds
    '--heartbeat-interval',
    String(ETCD_HEARTBEAT_MS),
    '--election-timeout',
    String(ETCD_ELECTION_TIMEOUT_MS),
    // as deploy/base/etcd.yaml: a restarted member or one starved of CPU for an election timeout
    // asks before campaigning, so it does not depose a leader the others still hear
    '--pre-vote=true',
    '--logger',
    'zap',
    '--log-level',
    'warn',
    ...(options.extraArgs ?? []),
  ];
  const start = (s: (typeof specs)[number]) => {
    const fd = openSync(s.logFile, 'a');
    // setpriv --pdeathsig: the kernel kills etcd if this test process dies without cleaning up.
    const [cmd0, args0] = existsSync('/usr/bin/setpriv') ? ['/usr/bin/setpriv', ['--pdeathsig', 'SIGKILL', ETCD, ...argsOf(s)]] : [ETCD, argsOf(s)];
    // `ip netns exec` execs the command: the child's pid stays the member's (SIGSTOP reaches etcd).
    const [cmd1, args1] = s.netns === undefined ? [cmd0, args0] : ['ip', ['netns', 'exec', s.netns, cmd0, ...args0]];
    // taskset execs the command too: the affinity is set before etcd's first thread exists.
    const [cmd, args] = options.cpus === undefined ? [cmd1, args1] : ['taskset', ['-c', options.cpus, cmd1, ...args1]];
    const proc = spawn(cmd, args, { stdio: ['ignore', fd, fd], ...(options.env ? { env: { ...process.env, ...options.env } } : {}) });
    closeSync(fd);
    live.add(proc);
    proc.on('exit', () => live.delete(proc));
    procs.set(s.name, proc);
    return proc;
  };

  const members: EtcdMember[] = specs.map((s) => {
    const member: EtcdMember & Internal = {
      name: s.name,
      clientUrl: `${scheme}://${s.host}:${s.clientPort}`,
      healthUrl: `http://${s.host}:${s.metricsPort}/health`,
      tls,
      rootPassword: options.rootPassword,
      endpoint: `${s.host}:${s.clientPort}`,
      dataDir: s.dataDir,
      logFile: s.logFile,
      get running() {
        const p = procs.get(s.name);
        return p !== undefined && p.exitCode === null && p.signalCode === null;
      },
      kill: (signal: NodeJS.Signals = 'SIGKILL') => killProc(procs.get(s.name), signal),
      pause: async () => {
        const pid = procs.get(s.name)?.pid;
        if (pid === undefined || !(await stopProcess(pid))) throw new Error(`etcd member ${s.name} is not running: cannot pause it`);
      },
      resume: () => void procs.get(s.name)?.kill('SIGCONT'),
      restart: async () => {
        await killProc(procs.get(s.name), 'SIGKILL');
        await waitHealthy(member, start(s));
      },
    };
    return member;
  });
  for (const s of specs) start(s);

  let stopped = false;
  const api: EtcdCluster = {
    url: `${tls ? 'etcds' : 'etcd'}://${members.map((m) => m.endpoint).join(',')}`,
    members,
    leader: async () => {
      for (const m of members.filter((x) => x.running)) {
        try {
          const status = (await post(m, 'maintenance/status', {})) as { header?: { member_id?: string }; leader?: string };
          const ids = await Promise.all(members.map(async (x) => (x.running ? memberId(x) : undefined)));
          const i = ids.indexOf(status.leader);
          if (i >= 0) return i;
        } catch {
          // ask the next member
        }
      }
      throw new Error('no running member knows a leader');
    },
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await Promise.all([...procs.values()].map((p) => killProc(p, 'SIGKILL')));
      rmSync(root, { recursive: true, force: true });
    },
  };
  return { api, members, procOf: (m: EtcdMember) => procs.get(m.name) as ChildProcess };
}

async function memberId(m: EtcdMember): Promise<string | undefined> {
  const status = (await post(m, 'maintenance/status', {})) as { header?: { member_id?: string } };
  return status.header?.member_id;
}

/** What the helper itself needs to talk to a member. */
interface Internal {
  readonly healthUrl: string;
  readonly tls: EtcdOptions['tls'];
  readonly rootPassword: string | undefined;
}

/**
 * One JSON gateway request (`/v3/<path>`) to member `m`, over TLS and as root when the
 * cluster has those; rejects unless HTTP 200.
 */
export async function etcdPost(m: EtcdMember, path: string, body: unknown): Promise<unknown> {
  return post(m, path, body);
}

async function post(m: EtcdMember, path: string, body: unknown): Promise<unknown> {
  const i = m as EtcdMember & Internal;
  const headers: Record<string, string> = {};
  if (i.rootPassword !== undefined && path !== 'auth/authenticate') {
    const auth = (await send(i, 'auth/authenticate', { name: 'root', password: i.rootPassword }, {})) as { token?: string };
    if (auth.token) headers['authorization'] = auth.token;
  }
  return send(i, path, body, headers);
}

async function send(m: EtcdMember & Internal, path: string, body: unknown, headers: Record<string, string>): Promise<unknown> {
  const url = `${m.clientUrl}/v3/${path}`;
  let status: number;
  let text: string;
  if (m.tls === undefined) {
    const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body), signal: AbortSignal.timeout(1000) });
    status = res.status;
    text = await res.text();
  } else {
    const tls = m.tls;
    ({ status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = httpsRequest(url, {
        method: 'POST',
        headers,
        servername: tls.serverName,
        ca: readFileSync(tls.caFile),
        ...(tls.client ? { cert: readFileSync(tls.client.certFile), key: readFileSync(tls.client.keyFile) } : {}),
        timeout: 1000,
      });
      req.on('timeout', () => req.destroy(new Error('no answer within 1000 ms')));
      req.on('error', reject);
      req.on('response', (res) => {
        let t = '';
        res.setEncoding('utf8').on('data', (d: string) => (t += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: t }));
        res.on('error', reject);
      });
      req.end(JSON.stringify(body));
    }));
  }
  if (status !== 200) throw new Error(`${m.name} ${path}: HTTP ${status} ${text}`);
  return JSON.parse(text) as unknown;
}

/** Root user and role, then `auth enable`, through the gateway (Debian ships no etcdctl). */
async function enableAuth(m: EtcdMember, rootPassword: string): Promise<void> {
  const i = m as EtcdMember & Internal;
  await send(i, 'auth/role/add', { name: 'root' }, {});
  await send(i, 'auth/user/add', { name: 'root', password: rootPassword }, {});
  await send(i, 'auth/user/grant', { user: 'root', role: 'root' }, {});
  await send(i, 'auth/enable', {}, {});
}

/** Polls `/health` until it says true; rejects if the process exits or after 20 s. */
async function waitHealthy(m: EtcdMember, proc: ChildProcess): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (proc.exitCode !== null || proc.signalCode !== null) {
      throw new Error(`etcd ${m.name} exited (${proc.exitCode ?? proc.signalCode}) while starting:\n${logTail(m)}`);
    }
    try {
      const res = await fetch((m as EtcdMember & Internal).healthUrl, { signal: AbortSignal.timeout(1000) });
      const body = (await res.json()) as { health?: string };
      if (body.health === 'true') return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`etcd ${m.name} not healthy after ${START_TIMEOUT_MS} ms:\n${logTail(m)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function logTail(m: EtcdMember): string {
  try {
    return readFileSync(m.logFile, 'utf8').split('\n').slice(-20).join('\n');
  } catch {
    return '(no log)';
  }
}

async function killProc(proc: ChildProcess | undefined, signal: NodeJS.Signals): Promise<void> {
  if (proc === undefined || proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  proc.kill(signal);
  const timer = setTimeout(() => proc.kill('SIGKILL'), STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}

/** `n` distinct loopback ports the kernel just handed out as free (all held until the end). */
async function freePorts(n: number): Promise<number[]> {
  const servers: Server[] = [];
  try {
    const ports: number[] = [];
    for (let i = 0; i < n; i++) {
      const server = createServer();
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, '127.0.0.1', () => resolve());
      });
      ports.push((server.address() as { port: number }).port);
    }
    return ports;
  } finally {
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  }
}
