/**
 * Runs ADDs and DELs through the agent's own request path before the socket listens, so that the
 * first pods after a start — and, on a node that starts a few pods an hour, every pod — do not
 * pay for the plugin's code running in V8's first tiers. Measured under containerd (BENCHMARKS.md,
 * "Pod starts under containerd"): without a warm-up the first burst of 16 ADDs after a start took
 * 200-800 ms each inside the agent; and measured with the posix_spawn driver (bench/agent.ts),
 * an agent that had served a thousand pairs spent ~1 ms less CPU per pair, and answered ~2 ms
 * sooner, than one warmed only by calling its handler 8-64 times.
 *
 * What the warm-up leaves undone the first pods pay in their tail: V8 compiles the functions it
 * optimises on a helper thread, and on a small node that thread takes the CPU a pod start's
 * processes wait for (2-8 ms stalls in ~3 % of the first 1,000 calls, measured with the bench's
 * driver on 2 vCPUs; none once the code had settled). So the warm-up runs the calls the way the
 * runtime's run: the same handler (`HostedServices.warmUp` builds it as the agent's), counted by
 * the same code in counters of its own (the agent's `serve` for it, the metrics hook's `warmUp`),
 * environments as runtimes send them (with and without CNI_ARGS and NODENAME). Measured with V8's
 * --trace-deopt: the metrics hook's first run, the counting, the environment's shape and a call
 * without NODENAME each threw optimised code away at the first pod's call when the warm-up had
 * skipped them. It also covers local networks of both kinds of IPv4 address (above and below 2^30,
 * which V8 represents differently) and IPv6, the cluster back end, and, in an agent that runs a
 * warm pool, the warm pool's back end (a warm pool of the warm-up's own, dual-stack, its loops
 * running fast), so that no such path is left for a pod to meet first — with V8 optimising only
 * during the warm-up, a path it leaves out runs in V8's baseline tiers for the agent's life
 * (measured: a warm-pool agent's ADD ~9 % and DEL ~11 % dearer than with V8 optimising
 * throughout, before the warm pool was warmed up too). What V8 would still optimise after it, it
 * does not: once a warm-up has run without error, before the socket listens, the agent stops V8
 * optimising (`--optimize warm-up`, src/util/stop-optimizing.ts); during the warm-up V8 optimises
 * after fewer calls than it would (`optimizeEagerly` there, a 32nd of V8's interrupt budget).
 *
 * The calls go through a private socket (a directory made for the purpose by mkdtemp, 0700,
 * locked for its run, removed after; one left by an agent killed during its warm-up is removed
 * by a later warm-up: stale-warm-ups.ts) served by the agent's own connection code
 * (`serve`: peer check, framing, answer, close), with the JavaScript client of the protocol, so
 * that code is warmed too. The services behind it are the warm-up's own, built for it and closed
 * after it: a scan cache and a cluster host like the agent's (and a warm pool, when the agent
 * runs one), but no datastore, cache or counter of the agent's is touched. The local back end
 * runs on data directories inside the private directory; the cluster back end on datastores of
 * the warm-up's own, of the agent's datastore's kind (WarmUpStore: memory, SQLite files in the
 * private directory, or loopback etcds in this process), a new one with each data directory
 * (`epochOf`: every FRESH_DATA_ROUNDS rounds early on),
 * holding dual-stack pools of TEST-NET-1, TEST-NET-2 and IPv6 documentation addresses (no hint
 * file); the warm pool on the first one's WARM_UP_WARM_POOLS with its resource DB inside the
 * private directory; the stores' data is dropped after. Left behind: the process-wide cache of
 * parsed local configs holds up to its size of the warm-up's, and the cluster config's cache of
 * checked datastore URLs its few (bounded too) (keyed by their text, which names the removed directory: no pod's
 * call can meet one; they age out). A warm-up that fails ends there, its error in the report: it
 * only costs the first pods their cold start (and the agent then leaves V8 optimising:
 * agent-server.ts, `stopOptimizingAfterWarmUp`).
 *
 * The rounds run twice (`runWarmUp`): first a rehearsal of REHEARSAL_ROUNDS rounds, its services,
 * directory and datastores closed and removed, then the rounds of the budget on new ones. What a
 * teardown changes once for good — a field of the services' classes first written after
 * construction, Node's timers and event emitters meeting objects of new shapes — then happens
 * before V8 optimises the request path, not after: measured with V8's --trace-opt and
 * --trace-deopt (bench/tools/deopt-trace.ts), the warm-up's end threw away the optimised code of
 * `allocate`, the scan cache, the socket's teardown and the timers, which the agent then ran in
 * V8's baseline tiers for its life (after it, local mode's ADD cost 0.90x and DEL 0.94x,
 * bench/tools/agent-ab.ts).
 */
import { closeSync, mkdtempSync, rmSync } from 'node:fs';
import { type Socket, createServer } from 'node:net';
import { SERVER_OPTIONS } from './first-read.js';
import { WARM_UP_DIR_PREFIX, holdWarmUpLock, sweepStaleWarmUps } from './stale-warm-ups.js';
import { type Store, openStore, parseStoreUrl } from '../store/index.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { callAgent } from '../wire/agent-client.js';
import type { CallHandler } from '../wire/call-answer.js';
import { BURST_CALLS, FRESH_EPOCHS, REHEARSAL_ROUNDS, WARM_UP_BUDGET_MS, targetRounds } from './warm-up-rounds.js';
import { burstAfter, delsTwice, epochOf, wantsAnotherRound } from './warm-up-rounds.js';

/** Runs of warm-ups in this process (two a warm-up: `warmUp`): each has datastores of its own (`memory:podipam-agent-warm-up-N` and `…-N-E`, or see WarmUpStore). */
let warmUps = 0;

/**
 * The kind of datastore the warm-up's cluster calls and warm pool run on, the agent's own, so
 * that its store's code is what V8 optimised when the first pod's call meets it: `sqlite` (a
 * file in the private directory, never flushed: THROWAWAY), `etcd` (an EtcdStore over gRPC to
 * a loopback etcd in this process: src/store/etcd/loopback-etcd.ts — never the agent's
 * cluster), `memory` (a process-private memory store).
 */
export type WarmUpStore = 'memory' | 'sqlite' | 'etcd';

/** The warm-up's kind of datastore for an agent on `datastore` (memory when it has none). */
export function warmUpStoreOf(datastore: string | undefined): WarmUpStore {
  return datastore === undefined ? 'memory' : parseStoreUrl(datastore).kind;
}

/**
 * The warm-up's counters (its stats in agent-server.ts, its metrics in agent-metrics.ts) are
 * made afresh every this many of its calls, so that the code counting a verb's first call runs
 * during the warm-up too. Odd: a fresh pair's first call is an ADD, then a DEL, in turn, as an
 * agent's first call may be either.
 */
export const WARM_UP_FRESH_COUNTERS = 17;
/**
 * How the warm-up opens its datastores: its data is thrown away, its commits need not wait for
 * the disk (StoreOptions.durable); no PODIPAM_ETCD_* settings (a loopback etcd asks for no TLS
 * or credentials).
 */
export const THROWAWAY = { durable: false, env: {} } as const;

/** Opens one of the warm-up's datastores (THROWAWAY): what its cluster services open them with. */
export function openThrowaway(url: string): Promise<Store> {
  return openStore(url, THROWAWAY);
}
/** An idle timer (`idleTimer`) every this many rounds, from the first: ~1 ms each. */
const IDLE_TIMER_EVERY = 8;
/** A status request every this many rounds. */
const STATUS_EVERY = 4;
/** The cluster calls' named pools, in turn (TEST-NET-2 in /28s, blocks of /29). */
const CLUSTER_POOLS = Array.from({ length: FRESH_EPOCHS + 1 }, (_, i) => ({ name: `warm-up-${i}`, cidr: `198.51.100.${16 * i}/28`, blockSize: 29 }));

/** A warm-up call's CNI_ARGS naming its pod (namespace podipam-warm-up) and sandbox, as runtimes pass them. */
function podArgs(name: string, sandbox: string): string {
  return `IgnoreUnknown=1;K8S_POD_NAMESPACE=podipam-warm-up;K8S_POD_NAME=${name};K8S_POD_INFRA_CONTAINER_ID=${sandbox}`;
}

/** The pools the warm-up's datastore holds for a warm pool of its own (TEST-NET-1's upper half, IPv6's documentation prefix). */
export const WARM_UP_WARM_POOLS = [
  { name: 'warm-up-warm-v4', cidr: '192.0.2.128/25', blockSize: 28 },
  { name: 'warm-up-warm-v6', cidr: '2001:db8:1::/120', blockSize: 124 },
] as const;

/** Where the warm-up's services live: both are the warm-up's own and gone after it. */
export interface WarmUpContext {
  /** The warm-up's private directory (0700). */
  readonly dir: string;
  /** The warm-up's first datastore (WarmUpStore: process-private memory, a SQLite file in `dir`, a loopback etcd's URL): the cluster calls' pools and WARM_UP_WARM_POOLS. */
  readonly datastore: string;
}

/** The warm-up's own services (see `HostedServices.warmUp`). */
export interface WarmUpServices {
  /**
   * The warm-up's handler, made twice by the factory that makes the agent's own: the warm-up's
   * connections take them in turn. V8 then records the agent's call of its handler as a call of
   * any closure made there, not of one of them: seeing only one, its optimised code would be
   * thrown away at the first pod's call, made to another (the agent's).
   */
  readonly calls: readonly [CallHandler, CallHandler];
  /** The handler serves a warm pool (`"ipam": {"type": "podipam", "agent": …}`): the rounds call it too. */
  readonly warm?: boolean;
  /** The agent runs a warm pool but the warm-up's own could not start: why (the other calls run; the report's error). */
  readonly warmError?: string;
  /** Closes what the warm-up's calls opened. */
  close(): Promise<void>;
}

/** What the warm-up did: rounds completed, calls answered with success, and its wall time. */
export interface WarmUpReport {
  readonly rounds: number;
  /** The rounds it aimed at (`targetRounds` of its budget, warm-up-rounds.ts): more than `rounds` when even its stretched time was too short (a busy node). */
  readonly target: number;
  readonly calls: number;
  readonly failed: number;
  readonly ms: number;
  /** The kind of datastore its cluster calls and warm pool ran on. */
  readonly store: WarmUpStore;
  /** Datastores its cluster calls ran on (a new one per epoch: `epochOf`). */
  readonly datastores: number;
  /**
   * The rehearsal's rounds, answered calls and failed ones, before the rounds above (which
   * `rounds`, `calls`, `failed` and `datastores` count): its services, directory and datastores
   * were closed and removed before the rounds began (see `warmUp`).
   */
  readonly rehearsal: { readonly rounds: number; readonly calls: number; readonly failed: number };
  /** Directories of earlier warm-ups whose agents were killed during them, removed (stale-warm-ups.ts); absent: none. */
  readonly staleRemoved?: number;
  /** Why the warm-up stopped before its budget, or left a path out, when something failed (its first pods then run colder code). */
  readonly error?: string;
  /** The first call answered with an error: its verb, network and answer (truncated); the rehearsal's when the rounds had none. */
  readonly firstFailure?: string;
}

export interface WarmUpOptions {
  /** Builds the warm-up's handler and services (called once a run — the rehearsal's, then the rounds' — its datastore's pools made). */
  readonly services: (ctx: WarmUpContext) => WarmUpServices | Promise<WarmUpServices>;
  /** Serves one accepted connection with `call` as the agent serves its socket's (counted apart from the runtime's calls). */
  readonly serve: (sock: Socket, call: CallHandler) => void;
  /** The node name the calls carry. */
  readonly node: string;
  /** Wall-time budget in ms (default WARM_UP_BUDGET_MS); 0: no warm-up. */
  readonly budgetMs?: number;
  /** The warm-up's kind of datastore (default `memory`). */
  readonly store?: WarmUpStore;
}

export async function warmUp(o: WarmUpOptions): Promise<WarmUpReport | undefined> {
  // Crash points (src/util/crash-point.ts) count steps from the process's start: the warm-up's
  // steps must not fire or shift them — a crash test's agent starts cold, as before.
  if (process.env.PODIPAM_CRASH_AT) return undefined;
  const budget = o.budgetMs ?? WARM_UP_BUDGET_MS;
  if (budget <= 0) return undefined;
  const t0 = performance.now();
  const target = targetRounds(budget);
  const rehearsal = await runWarmUp(o, { sweep: true, target, more: (rounds) => rounds < REHEARSAL_ROUNDS });
  // A rehearsal that stopped on an error (not one that only reported one: a warm pool that could
  // not start, a directory left behind) ends the warm-up: the rounds would stop the same way.
  const main = rehearsal.stopped
    ? undefined
    : await runWarmUp(o, { sweep: false, target, more: (rounds) => wantsAnotherRound(rounds, performance.now() - t0, budget) });
  const error = main?.error ?? rehearsal.error;
  const firstFailure = main?.firstFailure ?? rehearsal.firstFailure;
  return {
    rounds: main?.rounds ?? 0,
    target,
    calls: main?.calls ?? 0,
    failed: main?.failed ?? 0,
    ms: Math.round(performance.now() - t0),
    store: o.store ?? 'memory',
    datastores: main?.datastores ?? 0,
    rehearsal: { rounds: rehearsal.rounds, calls: rehearsal.calls, failed: rehearsal.failed },
    ...(rehearsal.stale > 0 ? { staleRemoved: rehearsal.stale } : {}),
    ...(error === undefined ? {} : { error }),
    ...(firstFailure === undefined ? {} : { firstFailure }),
  };
}

/**
 * Waits for a timer of its own, unref'd as each of the agent's loops unrefs its own
 * (src/util/periodic.ts), to fire between two rounds, when no call's timer is pending (a warm
 * pool's loops and a datastore client's may be) — as a loop's timer fires on an idle agent.
 * Node's timers hold "referenced" as a constant until the first unref, and compare the next
 * expiry with infinity once the last pending timer has fired: met first after the warm-up (a
 * loop started once the agent listens), each threw away the optimised code of every timer's
 * path — the per-connection read timeout, the socket's teardown, the agent's data handler —
 * which then ran in V8's baseline tiers for the agent's life (V8's --trace-deopt and
 * --trace-generalization).
 */
function idleTimer(): Promise<void> {
  return new Promise((resolve) => void setTimeout(resolve, 1).unref());
}

/** One run of the warm-up's rounds (`warmUp` makes two), on services, directories and datastores of its own, closed and removed after it. */
interface WarmUpRun {
  /** Whether another round runs after `rounds` rounds. */
  readonly more: (rounds: number) => boolean;
  /** The warm-up's target rounds (`targetRounds`): its epochs come in the first part of them (`epochOf`). */
  readonly target: number;
  /** Removes what agents killed during their warm-up left (the first run only). */
  readonly sweep: boolean;
}

/** What one run did (`WarmUpReport` without the budget's fields). */
interface WarmUpRunReport {
  /** The run stopped on an error (thrown), not only reported one. */
  readonly stopped: boolean;
  readonly rounds: number;
  readonly calls: number;
  readonly failed: number;
  readonly datastores: number;
  readonly stale: number;
  readonly error?: string;
  readonly firstFailure?: string;
}

async function runWarmUp(o: WarmUpOptions, run: WarmUpRun): Promise<WarmUpRunReport> {
  let dir: string | undefined;
  let services: WarmUpServices | undefined;
  const server = createServer(SERVER_OPTIONS);
  let rounds = 0;
  let calls = 0;
  let failed = 0;
  let error: string | undefined;
  let stopped = false;
  let firstFailure: string | undefined;
  let stale = 0;
  let lockFd: number | undefined;
  const datastoreName = `podipam-agent-warm-up-${++warmUps}`;
  let datastore = `memory:${datastoreName}`;
  /** The warm-up's datastores (memory stores' data is dropped after it; SQLite files go with its directory). */
  const stores = [datastore];
  /** The loopback etcds serving `stores` when the warm-up's kind is etcd (closed after it). */
  const loopbacks: { close(): Promise<void> }[] = [];
  try {
    // What agents killed during their warm-up left (they cannot remove their directories), then ours.
    if (run.sweep) stale = sweepStaleWarmUps(tmpdir()).length;
    dir = mkdtempSync(join(tmpdir(), WARM_UP_DIR_PREFIX));
    // Held until the directory is removed: a later warm-up removes it only once this process is gone.
    lockFd = holdWarmUpLock(dir);
    // A new datastore of the warm-up's kind (`n`: its number).
    const newStore = async (n: number): Promise<string> => {
      if (o.store === 'sqlite') return `sqlite:${join(dir!, `datastore-${n}.db`)}`;
      if (o.store !== 'etcd') return `memory:${datastoreName}-${n}`;
      const { LoopbackEtcd } = await import('../store/etcd/loopback-etcd.js');
      const loop = await LoopbackEtcd.start();
      loopbacks.push(loop);
      return loop.url;
    };
    if (o.store === 'sqlite' || o.store === 'etcd') stores[0] = datastore = await newStore(0);
    const socket = join(dir, 'warm-up.sock');
    const cacheDir = join(dir, 'cache');
    const conf = (name: string, ipam: Record<string, unknown>): Buffer =>
      Buffer.from(JSON.stringify({ cniVersion: '1.0.0', name, ipam: { type: 'podipam', ...ipam } }));
    // Two local networks, one with addresses above 2^30 (as 172.16/12 and 192.168/16 are), one
    // below (as 10/8 is) and dual-stack: V8 represents the two kinds of numbers differently, and
    // the first pods' networks may be of either. Their addresses live in the private directory
    // only, never handed to a pod.
    // A new data directory every FRESH_DATA_ROUNDS rounds early on (`epochOf`): a network's first calls in a
    // directory (made, its files first written) run during the warm-up too, as an agent's first
    // pods on a new node or network run them.
    // The first network's range wraps every 6 addresses from a 3-digit last octet to a 2-digit
    // one: its last-reserved hint file then gets shorter (cut to length), as a node's does — from
    // the first rounds on (when it first came after V8 had optimised the hint file's write, that
    // code was thrown away for the rest of the warm-up).
    const locals = (data: string): Buffer[] => [
      conf('podipam-agent-warm-up', { dataDir: data, ranges: [[{ subnet: '192.0.2.0/24', rangeStart: '192.0.2.96', rangeEnd: '192.0.2.101' }]] }), // TEST-NET-1
      conf('podipam-agent-warm-up-2', { dataDir: data, ranges: [[{ subnet: '10.255.0.0/16' }], [{ subnet: '2001:db8::/64' }]] }),
    ];
    // The cluster calls: on a datastore of their own every FRESH_DATA_ROUNDS rounds early on (the
    // agent's first calls on its datastore — the URL checked, the store opened, the node's view
    // made, its first blocks claimed — run during the warm-up too, after V8 has begun to record
    // how they run), every other round naming the epoch's pool of CLUSTER_POOLS, else every pool;
    // `cacheDir` a path, as in pods' configs (the agent itself keeps no hint file).
    const { ClusterIpam } = await import('../cluster/service/index.js');
    const clusterPool = (epoch: number): (typeof CLUSTER_POOLS)[number] => CLUSTER_POOLS[epoch % CLUSTER_POOLS.length]!;
    const makePools = async (url: string, pools: readonly { name: string; cidr: string; blockSize: number }[]): Promise<void> => {
      const store = await openThrowaway(url);
      try {
        const admin = new ClusterIpam(store);
        for (const pool of pools) await admin.createPool(pool);
      } finally {
        await store.close();
      }
    };
    // The pools of the rounds that name none (dual-stack, as a cluster's often is).
    const EVERY_POOL = [
      { name: 'warm-up', cidr: '192.0.2.64/26', blockSize: 28 },
      { name: 'warm-up-v6', cidr: '2001:db8:2::/120', blockSize: 124 },
    ];
    let clusterStore = { epoch: 0, url: datastore };
    const cluster = async (round: number, epoch: number): Promise<Buffer> => {
      if (epoch !== clusterStore.epoch) {
        const url = await newStore(epoch);
        stores.push(url);
        await makePools(url, [...EVERY_POOL, clusterPool(epoch)]);
        clusterStore = { epoch, url };
      }
      const named = round % 2 === 1 ? { pools: [clusterPool(epoch).name] } : {};
      return conf('podipam-agent-warm-up', { datastore: clusterStore.url, nodeName: o.node, cacheDir, ...named });
    };
    // The first datastore holds every pool, and the warm pool's (whose datastore it stays).
    await makePools(datastore, [...EVERY_POOL, ...CLUSTER_POOLS, ...WARM_UP_WARM_POOLS]);
    const s = (services = await o.services({ dir, datastore }));
    const warm = s.warm ? [conf('podipam-agent-warm-up-warm', { agent: socket })] : [];
    if (s.warmError !== undefined) error = `the warm pool's warm-up could not start: ${s.warmError}`;
    let connections = 0;
    server.on('connection', (sock: Socket) => {
      const n = connections++;
      const call = s.calls[n % 2] as CallHandler;
      // Every other pair of connections is served once the client has written its request (as a
      // shim has, mostly, when the agent accepts it): the agent's read at accept runs both ways.
      if (n % 4 < 2) o.serve(sock, call);
      else setImmediate(() => o.serve(sock, call));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(socket, () => resolve());
    });
    const opts = { connectTimeoutMs: 2000, answerTimeoutMs: 10_000 };
    // One CNI call through the socket, counted: `calls` when answered with success, else `failed`.
    const call = async (verb: string, stdin: Buffer, containerId: string, callArgs: Record<string, string>): Promise<void> => {
      const env = { CNI_COMMAND: verb, CNI_CONTAINERID: containerId, CNI_NETNS: '/dev/null', CNI_IFNAME: 'eth0', CNI_PATH: '/nonexistent', ...callArgs };
      const a = await callAgent(socket, { kind: 'cni', call: { env, stdin } }, opts);
      if (a.status === 0) calls++;
      else if (failed++ === 0) {
        const network = (JSON.parse(stdin.toString('utf8')) as { name: string }).name;
        firstFailure = `${verb} on ${network}: ${a.body.toString('utf8').slice(0, 300)}`;
      }
    };
    for (; run.more(rounds); rounds++) {
      if (rounds % IDLE_TIMER_EVERY === 0) await idleTimer();
      const epoch = epochOf(rounds, run.target); // see there: a new data directory and datastore, early on
      // A status request (as the DaemonSet's probes and `podipam agent status` make) every
      // STATUS_EVERY rounds: the agent's request decoder then has seen both kinds of request.
      if (rounds % STATUS_EVERY === 0) {
        const st = await callAgent(socket, { kind: 'status' }, opts);
        if (st.status !== 0 && failed++ === 0) firstFailure = `status: ${st.body.toString('utf8').slice(0, 300)}`;
      }
      const id = `podipam-agent-warm-up-${rounds}`;
      // As runtimes call: one round in three with no CNI_ARGS, one with a pod's namespace, name
      // and sandbox, one with its UID too (as containerd passes it); every other pair of rounds
      // without NODENAME (the agent then names its node).
      const pod = podArgs(`warm-up-${rounds}`, id);
      const cniArgs = [undefined, pod, `${pod};K8S_POD_UID=00000000-0000-4000-8000-${String(rounds).padStart(12, '0')}`][rounds % 3];
      const args: Record<string, string> = {
        ...(cniArgs === undefined ? {} : { CNI_ARGS: cniArgs }),
        ...(rounds % 4 < 2 ? { NODENAME: o.node } : {}),
      };
      const localNets = locals(join(dir, 'data', String(epoch)));
      const networks = [...localNets, await cluster(rounds, epoch), ...warm];
      const verbs = delsTwice(rounds) ? ['ADD', 'DEL', 'DEL'] : ['ADD', 'DEL'];
      for (const stdin of networks) {
        for (const verb of verbs) await call(verb, stdin, id, args);
      }
      const b = burstAfter(rounds, networks.length, localNets.length);
      if (b !== undefined) {
        const stdin = networks[b]!;
        const burst = Array.from({ length: BURST_CALLS }, (_, k) => `${id}-${k}`);
        for (const verb of ['ADD', 'DEL']) {
          await Promise.all(
            burst.map((cid, k) =>
              call(verb, stdin, cid, {
                CNI_ARGS: podArgs(`warm-up-${rounds}-${k}`, cid),
                NODENAME: o.node,
              }),
            ),
          );
        }
      }
    }
  } catch (e) {
    // only the first pods' latency is at stake: reported, not thrown
    error = e instanceof Error ? e.message : String(e);
    stopped = true;
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await services?.close().catch(() => undefined);
    // A memory store's data (its revisions and watch log) would otherwise stay for the process's life.
    const memory = stores.filter((u) => u.startsWith('memory:'));
    if (memory.length > 0) {
      const { dropMemoryStore } = await import('../store/memory/memory-store.js');
      for (const u of memory) dropMemoryStore(u.slice('memory:'.length));
    }
    await Promise.all(loopbacks.map((l) => l.close().catch(() => undefined)));
    try {
      if (dir) rmSync(dir, { recursive: true, force: true });
    } catch (e) {
      // Left for a later warm-up's sweep (its lock let go below): only reported.
      error ??= `the warm-up's directory ${dir} could not be removed: ${(e as Error).message}`;
    } finally {
      if (lockFd !== undefined) closeSync(lockFd);
    }
  }
  return {
    stopped,
    rounds,
    calls,
    failed,
    datastores: stores.length,
    stale,
    ...(error === undefined ? {} : { error }),
    ...(firstFailure === undefined ? {} : { firstFailure }),
  };
}
