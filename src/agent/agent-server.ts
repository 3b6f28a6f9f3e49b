/**
 * `podipam agent`: the per-node daemon the native shim forwards CNI calls to (src/wire/frame.ts).
 * The host only: it serves each call with the handler it is given (`HostedServices.call`; the
 * composition root, src/agent-main.ts, gives it the plugin's own entry with the long-lived
 * services of the back ends, so answers are byte-identical to the per-pod process's), and counts
 * calls by verb, result and back end from the handler's typed answer.
 *
 * The socket is created 0600 (in a directory that is not writable by others, created 0700 when
 * absent); every connection's peer uid is checked with SO_PEERCRED: root, the agent's own uid
 * and the uids it was told to serve, no one else. `<socket>.lock` (flock, held for the agent's
 * life; opened without following a symbolic link) keeps a second agent off the socket; a stale
 * socket file of a killed agent is replaced.
 */
import { chmodSync, closeSync, unlinkSync } from 'node:fs';
import { type Server, type Socket, createServer } from 'node:net';
import { CniCode, CniError } from '../cni/errors.js';
import { goMarshalIndent } from '../cni/go-json.js';
import { type Log, silentLog } from '../log/logger.js';
import { forwardedEnv } from '../wire/agent-client.js';
import type { CallAnswer, CallHandler } from '../wire/call-answer.js';
import { type Request, FrameError, encodeAnswer, requestReader } from '../wire/frame.js';
import { peerCredentials } from '../wire/peer-credentials.js';
import { SERVER_OPTIONS, firstRead } from './first-read.js';
import { AgentStats, type AgentStatus, verbLabel } from './agent-stats.js';
import { AgentListenError } from './agent-start-error.js';
import { prepareSocketPath } from './prepare-socket-path.js';
import { TRACING, schedMs, traceCall, traceGcPauses } from '../util/call-trace.js';
import { WARM_UP_FRESH_COUNTERS, type WarmUpContext, type WarmUpReport, type WarmUpServices, type WarmUpStore, warmUp } from './warm-up.js';
import { warmUpCompleted } from './warm-up-rounds.js';
import { keepArrayKinds, optimizeEagerly, stopOptimizing } from '../util/stop-optimizing.js';
import { monitorEventLoopDelay } from 'node:perf_hooks';

/** PODIPAM_TRACE=1: the event loop's delays, reported with each call's trace line. */
const loopDelay = TRACING ? monitorEventLoopDelay({ resolution: 1 }) : undefined;
loopDelay?.enable();
traceGcPauses();

export const DEFAULT_SOCKET = '/run/podipam/agent.sock';
/** A client must send its whole request within this time. */
export const REQUEST_READ_TIMEOUT_MS = 10_000;
/** SIGTERM waits this long for calls in flight. */
export const DRAIN_TIMEOUT_MS = 30_000;

/**
 * What the agent hosts, built by the composition root: the call handler and the services behind
 * it (their part of the status, their start and their close).
 */
export interface HostedServices {
  /** One CNI call (the forwarded environment, the agent's node when it names none; stdin) → its answer. */
  readonly call: CallHandler;
  /** The hosted services' part of `podipam agent status` (and of the metrics). */
  status(): Pick<AgentStatus, 'datastore' | 'localScans' | 'warmPool' | 'podCache' | 'headroom' | 'masquerade' | 'runtimeReconcile'>;
  /** Once the socket listens (calls meanwhile wait for what they need); a failure stops the agent. */
  start(): Promise<void>;
  /**
   * Builds a call handler with services of its own (none of the agent's stores, caches or
   * counters): the agent runs calls through it, over a private socket, before listening
   * (warm-up.ts), then closes it. Absent: no warm-up.
   */
  readonly warmUp?: (ctx: WarmUpContext) => WarmUpServices | Promise<WarmUpServices>;
  /** The kind of datastore `warmUp`'s services are given (WarmUpStore; default memory). */
  readonly warmUpStore?: WarmUpStore;
  /** After the last call: closes what `start` and the calls opened. */
  close(): Promise<void>;
}

export interface AgentOptions {
  readonly socket: string;
  /** Node name for calls whose config and environment give none (default: the host name). */
  readonly node: string;
  /** Uids allowed besides root and the agent's own. */
  readonly allowUids?: readonly number[];
  /**
   * Builds the hosted services once the socket's lock is held and before it listens (a second
   * agent on the socket builds nothing). An AgentStartError thrown refuses the start as it is.
   */
  readonly host: (served: ServedConnections) => Promise<HostedServices>;
  /**
   * Run `HostedServices.warmUp` before listening (default true), for at most `warmUpMs`
   * (default WARM_UP_BUDGET_MS; 0: none): see warm-up.ts.
   */
  readonly warmUp?: boolean;
  readonly warmUpMs?: number;
  /**
   * Once a warm-up has run without error and done its target rounds, stop V8 optimising anything
   * more in this process (`podipam agent --optimize warm-up`; src/util/stop-optimizing.ts).
   * Default false: it changes the whole process. Without a warm-up, after one that failed, or
   * after one short of its target (a busy node: warm-up-rounds.ts `targetRounds`), V8 goes on
   * optimising (warned).
   */
  readonly stopOptimizingAfterWarmUp?: boolean;
  /**
   * Called once per finished call (metrics), the warm-up's too with `warmUp` true: the hook then
   * counts them apart (its own throwaway counters), so the first pods run its code warm.
   */
  readonly onCall?: (c: { verb: string; result: string; ms: number; backend: string | undefined }, warmUp: boolean) => void;
  /** Diagnostics (a refused peer, a bad request). */
  readonly log?: Log;
}

/**
 * What the agent tells its hosted services about the calls it serves: `open()` is the number
 * of connections accepted and not yet closed (the warm-up's included), the caller's own among
 * them. 1 means the caller is the only call in flight: nothing can arrive in this turn of the
 * event loop to share its lock or its transaction, so it need not wait a turn for company.
 */
export interface ServedConnections {
  open(): number;
}

export { AgentListenError, AgentStartError } from './agent-start-error.js';

export class Agent {
  readonly stats = new AgentStats();
  readonly #opts: AgentOptions;
  readonly #hosted: HostedServices;
  readonly #log: Log;
  readonly #server: Server;
  readonly #lockFd: number;
  readonly #allowed: Set<number>;
  readonly #conns: Set<Socket>;
  #idle: (() => void) | undefined;
  #closing = false;
  /** What the warm-up before listening did (undefined: none ran). */
  warmUpReport: WarmUpReport | undefined;
  /** False once V8 was told to optimise nothing more (`stopOptimizingAfterWarmUp`). */
  optimizing = true;

  private constructor(opts: AgentOptions, hosted: HostedServices, server: Server, lockFd: number, conns: Set<Socket>) {
    this.#opts = opts;
    this.#conns = conns;
    this.#hosted = hosted;
    this.#log = opts.log ?? silentLog;
    this.#server = server;
    this.#lockFd = lockFd;
    this.#allowed = new Set([0, process.getuid?.() ?? 0, ...(opts.allowUids ?? [])]);
    server.on('connection', (s) => this.#serve(s, hosted.call, this.stats));
  }

  /** Takes the socket (refusing when another agent holds it) and starts serving. */
  static async start(opts: AgentOptions): Promise<Agent> {
    const lockFd = prepareSocketPath(opts.socket);
    // Built before the socket listens: a call arriving while the services start waits for them
    // (or gets code 11), never a call served without them.
    let hosted: HostedServices;
    const conns = new Set<Socket>();
    try {
      hosted = await opts.host({ open: () => conns.size });
    } catch (e) {
      closeSync(lockFd); // the lock is released for the next try
      throw e;
    }
    const server = createServer(SERVER_OPTIONS);
    const agent = new Agent(opts, hosted, server, lockFd, conns);
    // The first pods after a start would otherwise wait for the plugin's code to load and compile,
    // and run it in V8's slowest tiers.
    if (hosted.warmUp && opts.warmUp !== false) {
      // Afresh every WARM_UP_FRESH_COUNTERS calls (with V8 optimising only during the warm-up, a
      // branch it never took after its first calls would throw the optimised code away for good).
      let warmUpStats = new AgentStats();
      let warmUpCalls = 0;
      if (opts.stopOptimizingAfterWarmUp) keepArrayKinds();
      const eager = optimizeEagerly();
      agent.warmUpReport = await warmUp({
        services: hosted.warmUp,
        // The warm-up's calls are counted too, on counters of their own nobody reads: the counting
        // code runs warm from the first pod on, and the agent's own counters stay the runtime's.
        serve: (sock, call) => {
          if (++warmUpCalls % WARM_UP_FRESH_COUNTERS === 0) warmUpStats = new AgentStats();
          agent.#serve(sock, call, warmUpStats);
        },
        node: opts.node,
        ...(opts.warmUpMs !== undefined ? { budgetMs: opts.warmUpMs } : {}),
        ...(hosted.warmUpStore !== undefined ? { store: hosted.warmUpStore } : {}),
      }).finally(() => eager.done());
    }
    if (opts.stopOptimizingAfterWarmUp) {
      const w = agent.warmUpReport;
      if (warmUpCompleted(w)) {
        // Before the socket listens: V8 keeps what the warm-up got optimised and compiles nothing more.
        stopOptimizing();
        agent.optimizing = false;
      } else {
        // A short warm-up (a busy node): what V8 had no time to optimise would run in its baseline tiers for the agent's life.
        const why = w !== undefined && w.error === undefined ? `a short warm-up (${w.rounds} of ${w.target} rounds: a busy node)` : 'no completed warm-up';
        agent.#log.warn({ warmUp: w ?? null }, `${why}: V8 goes on optimising the agent's code while pods start (as with --optimize always)`);
      }
    }
    const umask = process.umask(0o177); // the socket is born 0600: no window where others may connect
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(opts.socket, () => resolve());
      });
    } catch (e) {
      closeSync(lockFd);
      throw new AgentListenError(`cannot listen on ${opts.socket}: ${(e as Error).message}`, { cause: e });
    } finally {
      process.umask(umask);
    }
    chmodSync(opts.socket, 0o600);
    try {
      await hosted.start();
    } catch (e) {
      await agent.close();
      throw e;
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
      ...(this.warmUpReport ? { warmUp: this.warmUpReport } : {}),
      optimizing: this.optimizing,
      ...this.#hosted.status(),
    };
  }

  /** The hosted services' part of the status alone (what the metrics read on each scrape). */
  hostedStatus(): Pick<AgentStatus, 'datastore' | 'localScans' | 'warmPool' | 'podCache' | 'headroom' | 'masquerade' | 'runtimeReconcile'> {
    return this.#hosted.status();
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
    await this.#hosted.close();
    try {
      unlinkSync(this.#opts.socket);
    } catch {
      /* already gone */
    }
    closeSync(this.#lockFd);
  }

  /**
   * Serves one connection with `call`, counting it in `stats`: the agent's own for a runtime's call
   * (status, metrics hook, trace), the warm-up's throwaway counters for the warm-up's.
   */
  #serve(sock: Socket, call: CallHandler, stats: AgentStats): void {
    const counted = stats === this.stats;
    this.#conns.add(sock);
    sock.on('close', () => this.#conns.delete(sock));
    sock.on('error', () => sock.destroy());
    // An answer to a whole request closes the connection as soon as it is written (the client
    // reads it from its receive queue, then EOF): no half-close, no waiting for the client's
    // end, no work for the agent's event loop while the pod start goes on. An answer given
    // before the request was read whole (a refused peer, a bad frame) half-closes instead: the
    // client may still be sending, and must get the answer, not a broken pipe.
    let replied = 0; // PODIPAM_TRACE=1: when the answer's write began
    const answer = (status: number, body: string, whole = false): void => {
      const frame = encodeAnswer({ status, body: Buffer.from(body) });
      if (TRACING) replied = monoUs();
      // Written whole at once (the usual case: the kernel took every byte inside write()): the
      // connection is closed right here, before the client has read the answer, so the client's
      // exit finds no peer to wake and the agent's loop has no shutdown to finish. Safe: the
      // request was read to its end, so nothing unread sits in our receive queue (which would
      // reset the connection), and the answer waits in the client's. Otherwise destroySoon: FIN
      // once the rest is written, then closed. Never destroy() inside the write's callback: the
      // stream then fails its own pending finish callbacks, building an error per call.
      if (whole) {
        sock.write(frame);
        if (sock.writableLength === 0) sock.destroy();
        else sock.destroySoon();
      } else {
        // Reading again (a connection is accepted paused): what the client still sends is drained, not left to reset the connection.
        sock.resume();
        sock.end(frame);
      }
    };
    const fd = (sock as unknown as { _handle: { fd: number } })._handle.fd;
    let uid: number;
    try {
      uid = peerCredentials(fd).uid;
    } catch (e) {
      this.#log.error({ error: (e as Error).message }, 'cannot read the peer credentials of a connection');
      sock.destroy();
      return;
    }
    if (!this.#allowed.has(uid)) {
      this.#log.warn({ uid }, 'refused a caller');
      answer(
        1,
        errorAnswer(
          new CniError(CniCode.InvalidEnv, `podipam agent on ${this.#opts.socket} refuses uid ${uid}: it serves uids ${[...this.#allowed].join(', ')}`),
        ),
      );
      return;
    }
    const reader = requestReader();
    const accepted = TRACING ? monoUs() : 0;
    const sched = TRACING ? schedMs() : undefined;
    const timer = setTimeout(() => sock.destroy(), REQUEST_READ_TIMEOUT_MS);
    let got = false;
    const onData = (chunk: Buffer): void => {
      if (got) return;
      let req: Request | undefined;
      try {
        req = reader.push(chunk);
      } catch (e) {
        got = true;
        clearTimeout(timer);
        const msg = e instanceof FrameError ? e.message : String(e);
        this.#log.warn({ uid, error: msg }, 'bad request on the agent socket');
        answer(1, errorAnswer(new CniError(CniCode.DecodeFailure, `podipam agent: bad request: ${msg}`)));
        return;
      }
      if (!req) return;
      got = true;
      clearTimeout(timer);
      if (req.kind === 'status') {
        answer(0, `${JSON.stringify(this.status())}\n`, true);
        return;
      }
      const parsed = TRACING ? monoUs() : 0;
      void this.#call(call, req.call.env, req.call.stdin, stats).then(
        (c) => {
          const handled = TRACING ? monoUs() : 0;
          answer(c.answer.status, c.answer.output, true);
          // The bookkeeping after the answer is on its way: the pod start does not wait for it.
          this.#record(c, stats);
          if (!counted) return;
          if (TRACING) {
            // The main thread's time waiting for a CPU from the accept to now (the answer is written).
            const runqMs = schedMs().runq - sched!.runq;
            writeTrace({ ...c.trace, readMs: (parsed - accepted) / 1000, runqMs, at: { accepted, parsed, handled, replied } });
          }
        },
        (e: unknown) => answer(1, errorAnswer(new CniError(CniCode.Internal, e instanceof Error ? e.message : String(e))), true), // a handler never throws
      );
    };
    sock.on('data', onData);
    sock.on('end', () => clearTimeout(timer));
    // Accepted paused: the request is read here if it is there (first-read.ts), else it flows.
    const first = firstRead(fd);
    if (first !== undefined) onData(first);
    if (!got) sock.resume();
  }

  /** Serves one call; the counting is left to `#record`, once the answer is sent. */
  async #call(call: CallHandler, env: Readonly<Record<string, string>>, stdin: Buffer, stats: AgentStats): Promise<ServedCall> {
    const t0 = performance.now();
    stats.inFlight++;
    // Only what the shim forwards: a caller cannot set anything else the agent's code reads.
    const callEnv = forwardedEnv(env);
    if (!callEnv.NODENAME && !callEnv.NODE_NAME) callEnv.NODENAME = this.#opts.node; // the caller's own wins (defaultNodeName)
    const text = stdin.toString('utf8');
    const verb = verbLabel(env.CNI_COMMAND);
    try {
      const traced = traceCall(() => call(callEnv, () => text));
      const answer = await traced.result;
      const ms = performance.now() - t0;
      if (!TRACING) return { answer, verb, ms };
      const loop = { p99: loopDelay!.percentile(99) / 1e6, max: loopDelay!.max / 1e6 };
      return { answer, verb, ms, trace: { verb, result: resultLabel(answer), ms, inFlight: stats.inFlight, ...traced.phases, loop } };
    } finally {
      stats.inFlight--;
      // Every part evaluated on every call, the warm-up's (other stats) too: V8 optimises this
      // function during the warm-up only, and a part it never ran there would throw that away.
      const idle = this.#idle;
      const mine = stats === this.stats;
      if (stats.inFlight === 0 && mine && idle) idle();
    }
  }

  /** Counts a served call in `stats` and tells the metrics hook (a call counted elsewhere than the agent's own stats is the warm-up's). */
  #record({ answer, verb, ms }: ServedCall, stats: AgentStats): void {
    const result = resultLabel(answer);
    const warmUp = stats !== this.stats;
    stats.record(verb, result, ms, answer.backend);
    try {
      this.#opts.onCall?.({ verb, result, ms, backend: answer.backend }, warmUp);
    } catch (e) {
      this.#log.error({ error: (e as Error).message }, 'metrics hook failed'); // never the call's answer
    }
  }
}

/** A call served: its answer, verb label and handler time; with PODIPAM_TRACE=1 its trace fields. */
interface ServedCall {
  readonly answer: CallAnswer;
  readonly verb: string;
  readonly ms: number;
  readonly trace?: Record<string, unknown>;
}

const resultLabel = (a: CallAnswer): string => (a.status === 0 ? 'ok' : `code ${a.code ?? '?'}`);

/** CLOCK_MONOTONIC in microseconds (libuv's hrtime): comparable with the shim's and the bench driver's. */
function monoUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

/**
 * PODIPAM_TRACE=1: one line per call on stderr, after its answer was sent — "podipam-trace"
 * and JSON: verb, result, ms (the handler), readMs (accepted to parsed), the back end's phases,
 * the event loop's delay, runqMs (the main thread's wait for a CPU from the accept to after the answer), and `at`
 * (CLOCK_MONOTONIC µs: accepted, parsed, handled, replied = the answer's write began); garbage
 * collections as `podipam-trace-gc` lines (call-trace.ts).
 */
function writeTrace(t: Record<string, unknown>): void {
  const r = (x: unknown): unknown => (typeof x === 'number' ? Math.round(x * 100) / 100 : x);
  const fields = Object.fromEntries(
    Object.entries(t).map(([k, v]) => [k, k === 'loop' ? Object.fromEntries(Object.entries(v as object).map(([a, b]) => [a, r(b)])) : r(v)]),
  );
  process.stderr.write(`podipam-trace ${JSON.stringify(fields)}\n`);
}

/** The agent's own refusals (a caller it does not serve, a request it cannot read) as a CNI error answer. */
function errorAnswer(e: CniError): string {
  return goMarshalIndent(e.toJSON() as Record<string, string | number>);
}
