/**
 * Real etcd clusters for tests: `/usr/bin/etcd` (Debian etcd-server 3.4) on loopback ports,
 * with throw-away data directories (on /dev/shm when present: etcd 3.4 has no
 * --unsafe-no-fsync, and tmpfs makes its fsyncs free).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, openSync, closeSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireExecutable } from './prereq.js';

const ETCD = process.env['PODIPAM_ETCD_BIN'] ?? '/usr/bin/etcd';
const START_TIMEOUT_MS = 20_000;
const STOP_TIMEOUT_MS = 5_000;

/** One member of a test cluster. */
export interface EtcdMember {
  readonly name: string;
  /** `http://127.0.0.1:PORT`, where the member serves clients (and the JSON gateway). */
  readonly clientUrl: string;
  /** `127.0.0.1:PORT`, as written in a store URL. */
  readonly endpoint: string;
  readonly dataDir: string;
  /** File collecting the member's stdout and stderr, for debugging a failed test. */
  readonly logFile: string;
  readonly running: boolean;
  /** Sends `signal` (default SIGKILL) and resolves once the process has exited. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts the member again on its data directory and ports; resolves when it is healthy. */
  restart(): Promise<void>;
}

export interface EtcdCluster {
  /** `etcd://127.0.0.1:p1,127.0.0.1:p2,…`, members in order. */
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

export interface EtcdOptions {
  readonly members?: 1 | 3;
  /** Where the temp directory goes; default /dev/shm if present (benchmarks may want a disk). */
  readonly baseDir?: string;
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
    const cluster = await launch(count, options.baseDir);
    try {
      await Promise.all(cluster.members.map((m) => waitHealthy(m, cluster.procOf(m))));
      return cluster.api;
    } catch (e) {
      lastError = e;
      await cluster.api.stop();
    }
  }
  throw lastError;
}

async function launch(count: number, baseDir: string | undefined) {
  installExitHook();
  const base = baseDir ?? (existsSync('/dev/shm') ? '/dev/shm' : tmpdir());
  const root = mkdtempSync(join(base, 'podipam-etcd-'));
  const ports = await freePorts(count * 2);
  const specs = Array.from({ length: count }, (_, i) => ({
    name: `m${i}`,
    clientPort: ports[2 * i] as number,
    peerPort: ports[2 * i + 1] as number,
    dataDir: join(root, `m${i}`),
    logFile: join(root, `m${i}.log`),
  }));
  const initialCluster = specs.map((s) => `${s.name}=http://127.0.0.1:${s.peerPort}`).join(',');
  const token = `podipam-test-${randomUUID()}`;
  const procs = new Map<string, ChildProcess>();

  const argsOf = (s: (typeof specs)[number]) => [
    '--name', s.name,
    '--data-dir', s.dataDir,
    '--listen-client-urls', `http://127.0.0.1:${s.clientPort}`,
    '--advertise-client-urls', `http://127.0.0.1:${s.clientPort}`,
    '--listen-peer-urls', `http://127.0.0.1:${s.peerPort}`,
    '--initial-advertise-peer-urls', `http://127.0.0.1:${s.peerPort}`,
    '--initial-cluster', initialCluster,
    '--initial-cluster-state', 'new',
    '--initial-cluster-token', token,
    // fast failure detection, so fault tests run in seconds
    '--heartbeat-interval', '50',
    '--election-timeout', '500',
    '--logger', 'zap',
    '--log-level', 'warn',
  ];
  const start = (s: (typeof specs)[number]) => {
    const fd = openSync(s.logFile, 'a');
    // setpriv --pdeathsig: the kernel kills etcd if this test process dies without cleaning up.
    const [cmd, args] = existsSync('/usr/bin/setpriv')
      ? ['/usr/bin/setpriv', ['--pdeathsig', 'SIGKILL', ETCD, ...argsOf(s)]]
      : [ETCD, argsOf(s)];
    const proc = spawn(cmd, args, { stdio: ['ignore', fd, fd] });
    closeSync(fd);
    live.add(proc);
    proc.on('exit', () => live.delete(proc));
    procs.set(s.name, proc);
    return proc;
  };

  const members: EtcdMember[] = specs.map((s) => {
    const member: EtcdMember = {
      name: s.name,
      clientUrl: `http://127.0.0.1:${s.clientPort}`,
      endpoint: `127.0.0.1:${s.clientPort}`,
      dataDir: s.dataDir,
      logFile: s.logFile,
      get running() {
        const p = procs.get(s.name);
        return p !== undefined && p.exitCode === null && p.signalCode === null;
      },
      kill: (signal: NodeJS.Signals = 'SIGKILL') => killProc(procs.get(s.name), signal),
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
    url: `etcd://${members.map((m) => m.endpoint).join(',')}`,
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

async function post(m: EtcdMember, path: string, body: unknown): Promise<unknown> {
  const res = await fetch(`${m.clientUrl}/v3/${path}`, {
    method: 'POST',
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(1000),
  });
  if (!res.ok) throw new Error(`${m.name} ${path}: HTTP ${res.status} ${await res.text()}`);
  return res.json();
}

/** Polls `/health` until it says true; rejects if the process exits or after 20 s. */
async function waitHealthy(m: EtcdMember, proc: ChildProcess): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (proc.exitCode !== null || proc.signalCode !== null) {
      throw new Error(`etcd ${m.name} exited (${proc.exitCode ?? proc.signalCode}) while starting:\n${logTail(m)}`);
    }
    try {
      const res = await fetch(`${m.clientUrl}/health`, { signal: AbortSignal.timeout(1000) });
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
