/**
 * `podipam agent`: the per-node daemon the native shim forwards CNI calls to (frame.ts). It runs
 * the very same plugin entry as the per-pod process (pluginCall), so answers are byte-identical,
 * with long-lived services: the cluster back end's stores and hints stay open and in memory, and
 * a node's ADDs that arrive together share one transaction (cluster-services.ts). Local-mode
 * calls still take host-local's flock on their directory for every call, so host-local, the
 * per-pod plugin and the agent can share a data directory.
 *
 * The socket is created 0600 (in a directory that is not writable by others, created 0700 when
 * absent); every connection's peer uid is checked with SO_PEERCRED: root, the agent's own uid
 * and the uids it was told to serve, no one else. `<socket>.lock` (flock, held for the agent's
 * life; opened without following a symbolic link) keeps a second agent off the socket; a stale
 * socket file of a killed agent is replaced.
 */
import { ScanCache } from '../local/scan-cache.js';
import { closeSync, chmodSync, constants, fstatSync, lstatSync, mkdirSync, openSync, unlinkSync, writeSync, ftruncateSync } from 'node:fs';
import { type Server, type Socket, createServer } from 'node:net';
import { dirname } from 'node:path';
import { CniCode, CniError } from '../cni/errors.js';
import { goField, isObject } from '../cni/go-decode.js';
import type { BackendHost } from '../plugin/ipam-backend.js';
import { errorJson, pluginCall } from '../plugin/plugin-call.js';
import { forwardedEnv } from './agent-client.js';
import { AgentStats, type AgentStatus, verbLabel } from './agent-stats.js';
import { ClusterServices } from './cluster-services.js';
import type { WarmOptions, WarmService } from '../warm/warm-service.js';
import type { Log, LogFields } from '../log/logger.js';
import { type Request, FrameError, encodeAnswer, requestReader } from './frame.js';
import { peerCredentials, tryLockExclusive } from './native.js';

export const DEFAULT_SOCKET = '/run/podipam/agent.sock';
/** A client must send its whole request within this time. */
export const REQUEST_READ_TIMEOUT_MS = 10_000;
/** SIGTERM waits this long for calls in flight. */
export const DRAIN_TIMEOUT_MS = 30_000;

export interface AgentOptions {
  readonly socket: string;
  /** Node name for calls whose config and environment give none (default: the host name). */
  readonly node: string;
  /** Uids allowed besides root and the agent's own. */
  readonly allowUids?: readonly number[];
  /** A datastore to open at start (cluster mode), so the first pod pays nothing for it. */
  readonly datastore?: string;
  /**
   * Run the warm-pool back end (configs with only `ipam.agent`) on `datastore` for `node`
   * (requires `datastore`).
   */
  readonly warm?: Omit<WarmOptions, 'datastore' | 'node' | 'log'>;
  /** Called once per finished call (metrics). */
  readonly onCall?: (c: { verb: string; result: string; ms: number; backend: string | undefined }) => void;
  /** Diagnostics (a refused peer, a bad request). */
  readonly log?: (level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void;
}

/** Refused to start: the message names the path and the reason. */
export class AgentStartError extends Error {
  override readonly name: string = 'AgentStartError';
}

/** The socket could not be listened on (the command exits 2, as for its other listener). */
export class AgentListenError extends AgentStartError {
  override readonly name = 'AgentListenError';
}

export class Agent {
  readonly stats = new AgentStats();
  readonly cluster = new ClusterServices();
  readonly #opts: AgentOptions;
  readonly #server: Server;
  readonly #lockFd: number;
  readonly #allowed: Set<number>;
  #host: BackendHost;
  /** Local mode: each network directory's files, kept between calls (src/local/scan-cache.ts). */
  readonly #scanCache = new ScanCache();
  warm: WarmService | undefined;
  readonly #conns = new Set<Socket>();
  #idle: (() => void) | undefined;
  #closing = false;

  private constructor(opts: AgentOptions, server: Server, lockFd: number) {
    this.#opts = opts;
    this.#server = server;
    this.#lockFd = lockFd;
    this.#allowed = new Set([0, process.getuid?.() ?? 0, ...(opts.allowUids ?? [])]);
    this.#host = { cluster: this.cluster, local: { asyncLockWait: true, scanCache: this.#scanCache } };
    server.on('connection', (s) => this.#serve(s));
  }

  /** Takes the socket (refusing when another agent holds it) and starts serving. */
  static async start(opts: AgentOptions): Promise<Agent> {
    const lockFd = prepareSocketPath(opts.socket);
    const server = createServer();
    const agent = new Agent(opts, server, lockFd);
    if (opts.warm) {
      // Attached before the socket listens: a call arriving while the pool starts waits for it
      // (or gets code 11), never "this agent runs no warm pool" (code 7).
      if (!opts.datastore) {
        closeSync(lockFd); // the lock is released for the next try
        throw new AgentStartError('the warm pool needs --datastore');
      }
      const [{ WarmService }, { WarmBackend }, { KubePods }] = await Promise.all([import('../warm/warm-service.js'), import('../plugin/warm-backend.js'), import('./kube-pods.js')]);
      let warm: WarmService;
      try {
        warm = new WarmService({ ...opts.warm, datastore: opts.datastore, node: opts.node, openPodSource: KubePods.open, ...(opts.log ? { log: levelLog(opts.log) } : {}) }, agent.cluster);
      } catch (e) {
        closeSync(lockFd);
        throw new AgentStartError(`warm pool: ${(e as Error).message}`);
      }
      agent.warm = warm;
      agent.#host = { ...agent.#host, warm: new WarmBackend(warm) };
    }
    const umask = process.umask(0o177); // the socket is born 0600: no window where others may connect
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(opts.socket, () => resolve());
      });
    } catch (e) {
      closeSync(lockFd);
      throw new AgentListenError(`cannot listen on ${opts.socket}: ${(e as Error).message}`);
    } finally {
      process.umask(umask);
    }
    chmodSync(opts.socket, 0o600);
    if (opts.datastore) {
      // Open it now; a datastore that is down is retried by the first call that needs it.
      await agent.cluster.run(opts.datastore, opts.node, async () => undefined).catch((e: Error) => opts.log?.('warn', 'datastore not reachable yet', { datastore: opts.datastore, error: e.message }));
    }
    // Started after listening (calls meanwhile wait for it, or answer code 11 if it fails).
    if (agent.warm) {
      try {
        await agent.warm.start();
      } catch (e) {
        await agent.close();
        throw e;
      }
    }
    return agent;
  }

  status(): AgentStatus {
    return {
      pid: process.pid,
      node: this.#opts.node,
      socket: this.#opts.socket,
      uptimeSeconds: Math.round((Date.now() - this.stats.started) / 1000),
      inFlight: this.stats.inFlight,
      requests: this.stats.requests(),
      latencyMs: this.stats.latencyMs(),
      backends: this.stats.backends(),
      datastore: {
        roundTrips: this.cluster.roundTrips(),
        groupCommits: this.cluster.groups.batches,
        groupedAdds: this.cluster.groups.adds,
        open: this.cluster.datastores(),
      },
      localScans: this.#scanCache.stats,
      ...(this.warm ? { warmPool: this.warm.report() } : {}),
    };
  }

  /** Stops accepting, waits (bounded) for calls in flight, closes the stores, removes the socket. */
  async close(): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    if (this.stats.inFlight > 0) {
      await Promise.race([new Promise<void>((r) => (this.#idle = r)), new Promise((r) => setTimeout(r, DRAIN_TIMEOUT_MS).unref())]);
    }
    for (const c of this.#conns) c.destroy();
    await closed;
    await this.warm?.close();
    await this.cluster.close();
    this.#scanCache.close();
    try {
      unlinkSync(this.#opts.socket);
    } catch {
      /* already gone */
    }
    closeSync(this.#lockFd);
  }

  #serve(sock: Socket): void {
    this.#conns.add(sock);
    sock.on('close', () => this.#conns.delete(sock));
    sock.on('error', () => sock.destroy());
    const answer = (status: number, body: string): void => {
      sock.end(encodeAnswer({ status, body: Buffer.from(body) }));
    };
    let uid: number;
    try {
      uid = peerCredentials((sock as unknown as { _handle: { fd: number } })._handle.fd).uid;
    } catch (e) {
      this.#opts.log?.('error', 'cannot read the peer credentials of a connection', { error: (e as Error).message });
      sock.destroy();
      return;
    }
    if (!this.#allowed.has(uid)) {
      this.#opts.log?.('warn', 'refused a caller', { uid });
      answer(1, errorJson(new CniError(CniCode.InvalidEnv, `podipam agent on ${this.#opts.socket} refuses uid ${uid}: it serves uids ${[...this.#allowed].join(', ')}`)));
      return;
    }
    const reader = requestReader();
    const timer = setTimeout(() => sock.destroy(), REQUEST_READ_TIMEOUT_MS);
    let got = false;
    sock.on('data', (chunk: Buffer) => {
      if (got) return;
      let req: Request | undefined;
      try {
        req = reader.push(chunk);
      } catch (e) {
        got = true;
        clearTimeout(timer);
        const msg = e instanceof FrameError ? e.message : String(e);
        this.#opts.log?.('warn', 'bad request on the agent socket', { uid, error: msg });
        answer(1, errorJson(new CniError(CniCode.DecodeFailure, `podipam agent: bad request: ${msg}`)));
        return;
      }
      if (!req) return;
      got = true;
      clearTimeout(timer);
      if (req.kind === 'status') {
        answer(0, `${JSON.stringify(this.status())}\n`);
        return;
      }
      void this.#call(req.call.env, req.call.stdin).then(
        (a) => answer(a.status, a.out),
        (e: unknown) => answer(1, errorJson(e)),
      );
    });
    sock.on('end', () => clearTimeout(timer));
  }

  async #call(env: Record<string, string>, stdin: Buffer): Promise<{ status: number; out: string }> {
    const t0 = performance.now();
    this.stats.inFlight++;
    // Only what the shim forwards: a caller cannot set anything else the agent's code reads.
    const callEnv = forwardedEnv(env);
    if (!callEnv.NODENAME && !callEnv.NODE_NAME) callEnv.NODENAME = this.#opts.node; // the caller's own wins (defaultNodeName)
    const text = stdin.toString('utf8');
    const verb = verbLabel(env.CNI_COMMAND);
    try {
      const a = await pluginCall(callEnv, () => text, this.#host);
      const result = a.status === 0 ? 'ok' : `code ${errorCode(a.out)}`;
      const ms = performance.now() - t0;
      const backend = backendOf(text, verb);
      this.stats.record(verb, result, ms, backend);
      try {
        this.#opts.onCall?.({ verb, result, ms, backend });
      } catch (e) {
        this.#opts.log?.('error', 'metrics hook failed', { error: (e as Error).message }); // never the call's answer
      }
      return a;
    } finally {
      this.stats.inFlight--;
      if (this.stats.inFlight === 0 && this.#idle) this.#idle();
    }
  }
}

/** Checks the socket's directory, takes `<socket>.lock`, removes a stale socket; returns the lock's fd. */
function prepareSocketPath(socket: string): number {
  if (!socket.startsWith('/')) throw new AgentStartError(`--socket ${JSON.stringify(socket)}: must be an absolute path`);
  if (Buffer.byteLength(socket) > 107) throw new AgentStartError(`--socket ${JSON.stringify(socket)}: longer than the 107 bytes a unix socket path may have`);
  const dir = dirname(socket);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (e) {
    throw new AgentStartError(`cannot create the socket directory ${dir}: ${(e as Error).message}`);
  }
  const st = lstatSync(dir);
  if (!st.isDirectory()) throw new AgentStartError(`socket directory ${dir} is not a directory (a symbolic link?): refusing it`);
  const me = process.getuid?.() ?? 0;
  if (st.uid !== 0 && st.uid !== me) {
    throw new AgentStartError(`socket directory ${dir} belongs to uid ${st.uid}, not root or uid ${me}: its owner could replace the socket`);
  }
  if ((st.mode & 0o022) !== 0) {
    throw new AgentStartError(`socket directory ${dir} is writable by group or others (mode ${(st.mode & 0o777).toString(8)}): use a private directory (0700 or 0755)`);
  }
  const lockPath = `${socket}.lock`;
  const fd = openLockFile(lockPath);
  if (!tryLockExclusive(fd)) {
    closeSync(fd);
    throw new AgentStartError(`another podipam agent is serving ${socket} (it holds ${lockPath})`);
  }
  ftruncateSync(fd, 0);
  writeSync(fd, `${process.pid}\n`, 0);
  let existing;
  try {
    existing = lstatSync(socket);
  } catch {
    return fd;
  }
  if (!existing.isSocket()) {
    closeSync(fd);
    throw new AgentStartError(`${socket} exists and is not a socket: refusing to replace it`);
  }
  unlinkSync(socket); // a killed agent's socket: nobody holds the lock, so nobody serves it
  return fd;
}

/**
 * Opens (creating, 0600) the lock file without following a symbolic link or blocking on a FIFO
 * someone planted there: the agent truncates it and writes its pid, so a link would make it
 * overwrite any file root can write. Anything but a regular file is refused, naming it.
 */
function openLockFile(path: string): number {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK, 0o600); // Node adds O_CLOEXEC itself
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') throw new AgentStartError(`${path} is a symbolic link: refusing to follow it (remove it; the agent creates its own lock file)`);
    throw new AgentStartError(`cannot open ${path}: ${(e as Error).message}`);
  }
  if (!fstatSync(fd).isFile()) {
    closeSync(fd);
    throw new AgentStartError(`${path} is not a regular file: refusing it (remove it; the agent creates its own lock file)`);
  }
  return fd;
}

function errorCode(out: string): string {
  const m = /"code":\s*(\d+)/.exec(out);
  return m ? m[1]! : '?';
}

/** Configs seen recently and their back end: a node sends the same few configs again and again. */
const backendByConfig = new Map<string, string | undefined>();

/** Which back end a call used, from its config (for status and metrics). */
function backendOf(text: string, verb: string): string | undefined {
  if (verb === 'VERSION') return undefined;
  if (backendByConfig.has(text)) return backendByConfig.get(text);
  const b = classify(text);
  if (backendByConfig.size >= 64) backendByConfig.delete(backendByConfig.keys().next().value as string);
  backendByConfig.set(text, b);
  return b;
}

function classify(text: string): string | undefined {
  try {
    const conf: unknown = JSON.parse(text);
    const ipam = isObject(conf) ? goField(conf, 'ipam') : undefined;
    if (!isObject(ipam)) return undefined;
    const ranges = goField(ipam, 'ranges') ?? goField(ipam, 'subnet');
    if (ranges !== undefined) return JSON.stringify(ranges).includes('usePodCidr') ? 'usePodCidr' : 'local';
    if (goField(ipam, 'datastore') !== undefined) return 'cluster';
    return goField(ipam, 'agent') !== undefined ? 'warm' : undefined;
  } catch {
    return undefined;
  }
}

/** The warm service's Log over the agent's `(level, msg, fields)` callback, until the host passes a Log itself. */
function levelLog(f: (level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>) => void, bindings: LogFields = {}): Log {
  const at = (level: 'info' | 'warn' | 'error') => (fields: LogFields, msg: string): void => f(level, msg, { ...bindings, ...fields });
  return { debug: () => {}, info: at('info'), warn: at('warn'), error: at('error'), child: (b) => levelLog(f, { ...bindings, ...b }) };
}
