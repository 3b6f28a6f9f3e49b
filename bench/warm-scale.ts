/**
 * The warm pool at scale: NODES nodes' agent back ends (src/warm/warm-service.ts, each with its
 * own resource DB, its warm handles and its write-behind queue) simulated in PROCS processes on a
 * 3-member etcd, PODS pods each — by default 5,000 x 30 = 150,000 dual-stack pods, the size of
 * bench/cluster.ts's scale run on the direct cluster path (604 pods/s on etcd x3).
 *
 * Nodes run IN_FLIGHT at a time (a node's life here: start → rebuild from its empty resource
 * DB, reconcile with the datastore, preload to minIdle → its PODS ADDs served from the pool →
 * write-behind flushed → closed, its resource DB removed), so file handles and timers stay
 * bounded while every node's pool, warm handles and pod records are real. Wall time, pods/s,
 * datastore round trips per pod (the shared ClusterServices' count: every read, list and txn,
 * node start-up included), pool hit rate, and RSS sampled every tenth of the run (flat RSS:
 * the state of finished nodes lives in etcd, not in the process). At the end the datastore must
 * hold one record per pod and every refilled address, else the run fails.
 *
 * Knobs: PODIPAM_BENCH_WARM_NODES (5000), PODIPAM_BENCH_WARM_PODS (30),
 * PODIPAM_BENCH_WARM_IN_FLIGHT (128 nodes), PODIPAM_BENCH_WARM_COMPACT_MS (COMPACT_MS, 5 min),
 * PODIPAM_BENCH_WARM_ETCD_PPROF=1 (the members serve Go's profiles, /debug/pprof/; the run takes
 * a 20 s CPU profile of each member after the first tenth and after the eighth — or, in a run
 * too short for that, once the first is done: Go takes one at a time — and their
 * allocation profiles at the end, and prints where their CPU and allocation went),
 * PODIPAM_BENCH_WARM_ETCD_GOGC (the members' Go GOGC, ETCD_GOGC; `default` leaves Go's 100),
 * PODIPAM_BENCH_WARM_PROCS (2: the processes simulating the nodes, node n in process n mod
 * PROCS, IN_FLIGHT nodes in flight between them; on a cluster every agent has its node's CPU, while one
 * simulating process caps the run at what one thread does — with more, the run measures the
 * datastore's side. They start together; the curve's tenths are theirs combined, see mergeShards).
 * etcd's own counters (member 0's /metrics) give keys and bytes put per pod, live keys, db bytes
 * and the compactions' time per tenth. Run alone: `node dist/bench/index.js warm-scale`.
 * A smaller run prints the projected time for 150,000 pods at the measured rate.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ClusterServices } from '../src/agent/cluster-services.js';
import { WarmService } from '../src/warm/warm-service.js';
import { WarmBackend } from '../src/plugin/warm-backend.js';
import { type Log, silentLog } from '../src/log/logger.js';
import { ClusterIpam } from '../src/cluster/index.js';
import type { NetConf } from '../src/cni/types.js';
import { openStore, type Store } from '../src/store/index.js';
import { type EtcdCluster, etcdPost, startEtcd } from '../test/helpers/etcd.js';
import { etcdAllocProfiles, etcdCpuProfiles } from './lib/etcd-profile.js';

const NODES = Number(process.env.PODIPAM_BENCH_WARM_NODES ?? 5000);
const PODS = Number(process.env.PODIPAM_BENCH_WARM_PODS ?? 30);
const IN_FLIGHT = Number(process.env.PODIPAM_BENCH_WARM_IN_FLIGHT ?? 128);

/** PODIPAM_BENCH_WARM_PROCS: how many processes simulate the nodes (1 to 16). */
export function simProcs(): number {
  const v = process.env.PODIPAM_BENCH_WARM_PROCS ?? '2';
  if (!/^([1-9]|1[0-6])$/.test(v)) throw new Error(`PODIPAM_BENCH_WARM_PROCS=${v}: a number of processes from 1 to 16`);
  return Number(v);
}
const POOL = { minIdle: 32, maxIdle: 64, capacity: 128, cooldownMs: 30_000, stickyForMs: 0 };
const FULL = 150_000;

const mib = (x: number): string => (x / 2 ** 20).toFixed(1);

/** One point of the run's curve (see Result.rss). */
export interface Sample {
  readonly pods: number;
  readonly s: number;
  readonly rssMiB: string;
  readonly heapMiB: string;
  readonly cpuS: number;
  readonly etcdCpuS: number;
  readonly etcdDbMiB: string;
  /** The largest member's resident memory (its Go heap and the pages of its db file it touched). */
  readonly etcdRssMiB: string;
  /** Member 0's counters at this point (etcdCounters); absent when its /metrics did not answer. */
  readonly etcd?: EtcdCounters;
}

/** What one member's /metrics says the store did so far: the figures that grow with what podipam writes. */
export interface EtcdCounters {
  /** Keys written (a put in a txn counts one), their encoded size (key, value, revisions), deletes, txns. */
  readonly puts: number;
  readonly putBytes: number;
  readonly deletes: number;
  readonly txns: number;
  /** Live keys, and the db file's size and the part of it in use. */
  readonly keys: number;
  readonly dbBytes: number;
  readonly dbInUseBytes: number;
  /** Compactions finished and the milliseconds they took together (etcd 3.4 rereads every live revision in each). */
  readonly compactions: number;
  readonly compactionMs: number;
  /** Of which the in-memory index's walk over every key, which stops reads and writes while it runs. */
  readonly indexCompactionMs: number;
  /** Applies etcd logged as slow (over 100 ms). */
  readonly slowApplies: number;
  /** Ranges served, and the bytes this member sent its clients (answers to reads and txns, watch events). */
  readonly ranges: number;
  readonly sentBytes: number;
}

const COUNTERS: Record<keyof EtcdCounters, string> = {
  puts: 'etcd_debugging_mvcc_put_total',
  putBytes: 'etcd_debugging_mvcc_total_put_size_in_bytes',
  deletes: 'etcd_debugging_mvcc_delete_total',
  txns: 'etcd_debugging_mvcc_txn_total',
  keys: 'etcd_debugging_mvcc_keys_total',
  dbBytes: 'etcd_mvcc_db_total_size_in_bytes',
  dbInUseBytes: 'etcd_mvcc_db_total_size_in_use_in_bytes',
  compactions: 'etcd_debugging_mvcc_db_compaction_total_duration_milliseconds_count',
  compactionMs: 'etcd_debugging_mvcc_db_compaction_total_duration_milliseconds_sum',
  indexCompactionMs: 'etcd_debugging_mvcc_index_compaction_pause_duration_milliseconds_sum',
  slowApplies: 'etcd_server_slow_apply_total',
  ranges: 'etcd_debugging_mvcc_range_total',
  sentBytes: 'etcd_network_client_grpc_sent_bytes_total',
};

/** Parses the counters out of a Prometheus text page (a missing one reads 0). */
export function parseEtcdCounters(text: string): EtcdCounters {
  const values = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+) (\S+)$/.exec(line);
    if (m) values.set(m[1]!, Number(m[2]));
  }
  return Object.fromEntries(Object.entries(COUNTERS).map(([k, name]) => [k, values.get(name) ?? 0])) as unknown as EtcdCounters;
}

/** One member's counters from `metricsUrl` (its /metrics), or undefined when it does not answer within 10 s. */
export async function etcdCounters(metricsUrl: string | undefined): Promise<EtcdCounters | undefined> {
  if (!metricsUrl) return undefined;
  try {
    const res = await fetch(metricsUrl, { signal: AbortSignal.timeout(10000) });
    return res.ok ? parseEtcdCounters(await res.text()) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The members' CPU seconds together (from /proc/PID/stat: utime + stime at 100 ticks/s), the
 * largest member's db file and the largest resident set, for members given as `pid:dataDir`. NaN when a member is gone.
 */
function etcdGauges(members: readonly string[]): { cpuS: number; dbBytes: number; rssBytes: number } {
  let cpuS = 0;
  let dbBytes = 0;
  let rssBytes = 0;
  for (const m of members) {
    const [pid, dir] = [m.slice(0, m.indexOf(':')), m.slice(m.indexOf(':') + 1)];
    try {
      // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      cpuS += (Number(f[11]) + Number(f[12])) / 100;
      rssBytes = Math.max(rssBytes, Number(f[21]) * 4096); // rss (field 24), in 4 KiB pages
      dbBytes = Math.max(dbBytes, statSync(join(dir, 'member', 'snap', 'db')).size);
    } catch {
      cpuS = NaN;
    }
  }
  return { cpuS, dbBytes, rssBytes };
}

/** `pid:dataDir` of each running member (found by its data directory in /proc/PID/cmdline). */
function memberPids(etcd: EtcdCluster): string[] {
  const out: string[] = [];
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    let cmd: string;
    try {
      cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    const args = cmd.split('\0');
    if (!/(^|\/)etcd$/.test(args[0] ?? '')) continue;
    const m = etcd.members.find((x) => args.includes(x.dataDir));
    if (m) out.push(`${pid}:${m.dataDir}`);
  }
  return out;
}

export interface Result {
  readonly nodes: number;
  readonly pods: number;
  readonly seconds: number;
  /** CPU of the process simulating the nodes (etcd's is apart). */
  readonly cpuSeconds: number;
  readonly roundTrips: number;
  readonly hits: number;
  readonly misses: number;
  readonly refillTxns: number;
  readonly writeTxns: number;
  /**
   * Sampled every tenth of the run: pods done, seconds since the start, RSS and heap after a GC,
   * CPU seconds of this process and of the etcd members together so far, the largest member's db.
   */
  readonly rss: readonly Sample[];
  readonly peakRssMiB: string;
  readonly heapAfterGcMiB: string;
  /** Addresses of refills that timed out but landed (adopted at the node's next start). */
  readonly orphaned: number;
  /** Addresses the simulated nodes' warm handles held when they closed (refilled minus returned). */
  readonly held: number;
  /** When each process that simulated the nodes (mergeShards) had done its share (s): one per process. */
  readonly ends: readonly number[];
  /** ADDs answered code 11 (a refill timed out) and retried. */
  readonly retries: number;
  /** Refill txns that failed (timed out, maybe landed). */
  readonly refillFailures: number;
  /** Member 0's counters when the run started (the samples' are since the etcd started). */
  readonly etcdAtStart?: EtcdCounters;
  /** With PODIPAM_BENCH_WARM_ETCD_PPROF=1: the members' CPU profiles and allocation, a line each. */
  readonly etcdProfiles?: readonly string[];
}

/**
 * One simulating process: the nodes n < NODES with n mod `shard.count` = `shard.index`, its
 * share of IN_FLIGHT at a time. It says `READY` on stdout once its stores are open and starts on the `GO <epoch ms>`
 * line its parent writes once every process is ready (the samples' seconds count from that
 * epoch); ends with its `RESULT` line (its share's figures; the parent checks the datastore).
 */
async function child(url: string, base: string, shard: { readonly index: number; readonly count: number }): Promise<void> {
  const cluster = new ClusterServices();
  try {
    const mine = shareOf(NODES, shard.index, shard.count);
    const conf: NetConf = { cniVersion: '1.0.0', name: 'scale-net', ipam: { type: 'podipam', agent: '/run/podipam/agent.sock' }, raw: {} };
    const totals = { refillFailures: 0, retries: 0, hits: 0, misses: 0, refillTxns: 0, writeTxns: 0, refilled: 0, returned: 0 };
    const rss: Sample[] = [];
    const members = (process.env.PODIPAM_BENCH_WARM_ETCD_MEMBERS ?? '').split(',').filter(Boolean);
    const metricsUrl = process.env.PODIPAM_BENCH_WARM_ETCD_METRICS;
    const pprofUrls = (process.env.PODIPAM_BENCH_WARM_ETCD_PPROF_URLS ?? '').split(',').filter(Boolean);
    // CPU profiles of the members, each taken while the run goes on (awaited at the end).
    const profiles: Promise<string[]>[] = [];
    const etcd0 = etcdGauges(members);
    const counters0 = await etcdCounters(metricsUrl);
    let peakRss = 0;
    let done = 0;
    let next = shard.index;
    let nextSample = 0;
    process.stdout.write('READY\n');
    const epoch = await goSignal();
    const since = (): number => (clock() - epoch) / 1000;
    const cpu0 = process.cpuUsage();
    const node = async (n: number): Promise<void> => {
      const name = `wnode-${n}`;
      const dataDir = join(base, name);
      const log: Log = { ...silentLog, warn: (_f, msg) => void (msg.startsWith('warm pool refill failed') && totals.refillFailures++) };
      const svc = new WarmService({ datastore: url, node: name, dataDir, ...POOL, log }, cluster);
      const backend = new WarmBackend(svc);
      await svc.start();
      for (let p = 0; p < PODS; p++) {
        // A 64-hex container ID, as containerd makes them.
        const id = n.toString(16).padStart(32, '0') + p.toString(16).padStart(32, '0');
        // A miss whose refill timed out on the loaded etcd answers code 11; the runtime retries.
        let r;
        for (let attempt = 0; ; attempt++) {
          try {
            r = await backend.add({ containerId: id, ifname: 'eth0', cniArgs: new Map(), conf });
            break;
          } catch (e) {
            if ((e as { code?: number }).code !== 11 || attempt >= 150) throw e; // 30 s of an etcd that does not answer
            totals.retries++;
            await new Promise((res) => setTimeout(res, 200));
          }
        }
        if (r.ips.length !== 2) throw new Error(`${name} pod ${p}: ${JSON.stringify(r)}`);
      }
      // A write that timed out on the loaded etcd is retried, as the agent's timer would.
      for (let i = 0; ; i++) {
        await svc.flushWrites();
        const s = svc.report();
        if (s.writeBehindDepth === 0) break;
        if (i >= 20) throw new Error(`${name}: ${s.writeBehindDepth} pod records still queued (${s.lastError})`);
        await new Promise((r) => setTimeout(r, 250));
      }
      await svc.close(); // waits for a refill in flight
      // Each simulated agent's allocator memory is its own: a node done leaves no hints behind
      // in the shared process (a real agent holds its own node's view only).
      await cluster.run(url, name, async (ipam) => ipam.cache.forgetNode(name));
      rmSync(dataDir, { recursive: true, force: true });
      const k = svc.counters;
      totals.hits += k.hits;
      totals.misses += k.misses;
      totals.refillTxns += k.refillTxns;
      totals.writeTxns += k.writeTxns;
      totals.refilled += k.refilled;
      totals.returned += k.returned;
      done++;
      if (done % 16 === 0) peakRss = Math.max(peakRss, process.memoryUsage.rss());
      if (done * PODS >= nextSample) {
        nextSample += Math.max(PODS, Math.floor((mine * PODS) / 10));
        (globalThis as { gc?: () => void }).gc?.(); // RSS of what is retained, not of garbage not yet collected
        const pods = done * PODS;
        const s = +since().toFixed(3);
        const m = process.memoryUsage();
        const c = process.cpuUsage(cpu0);
        const e = etcdGauges(members);
        const counters = await etcdCounters(metricsUrl);
        rss.push({
          pods,
          s,
          rssMiB: mib(m.rss),
          heapMiB: mib(m.heapUsed),
          cpuS: (c.user + c.system) / 1e6,
          etcdCpuS: e.cpuS - etcd0.cpuS,
          etcdDbMiB: mib(e.dbBytes),
          etcdRssMiB: mib(e.rssBytes),
          ...(counters ? { etcd: counters } : {}),
        });
        // The first sample is the first node's; the second ends the first tenth, the ninth the eighth.
        // Go takes one CPU profile at a time: a second waits for the first (a short run), labelled when it starts.
        if (pprofUrls.length > 0 && (rss.length === 2 || rss.length === 9)) {
          const after = profiles[profiles.length - 1] ?? Promise.resolve([]);
          profiles.push(after.then(() => etcdCpuProfiles(pprofUrls, 20, `from ${done * PODS} pods`)));
        }
        process.stderr.write(
          `  warm-scale: ${pods} pods, ${s.toFixed(1)} s, RSS ${mib(m.rss)} MiB, heap ${mib(m.heapUsed)} MiB, etcd db ${mib(e.dbBytes)} MiB\n`,
        );
      }
    };
    await Promise.all(
      Array.from({ length: Math.min(Math.max(1, shareOf(IN_FLIGHT, shard.index, shard.count)), mine) }, async () => {
        while (next < NODES) {
          const n = next;
          next += shard.count;
          await node(n);
        }
      }),
    );
    const seconds = since();
    const cpu = process.cpuUsage(cpu0);
    const roundTrips = cluster.roundTrips();
    const pods = mine * PODS;
    const etcdProfiles = [...(await Promise.all(profiles)).flat(), ...(pprofUrls.length > 0 ? await etcdAllocProfiles(pprofUrls) : [])];
    (globalThis as { gc?: () => void }).gc?.();
    const result: Result = {
      nodes: mine,
      pods,
      seconds,
      cpuSeconds: (cpu.user + cpu.system) / 1e6,
      roundTrips,
      hits: totals.hits,
      misses: totals.misses,
      refillTxns: totals.refillTxns,
      writeTxns: totals.writeTxns,
      rss,
      peakRssMiB: mib(peakRss),
      heapAfterGcMiB: mib(process.memoryUsage().heapUsed),
      orphaned: 0,
      held: totals.refilled - totals.returned,
      ends: [seconds],
      retries: totals.retries,
      refillFailures: totals.refillFailures,
      ...(counters0 ? { etcdAtStart: counters0 } : {}),
      ...(etcdProfiles.length > 0 ? { etcdProfiles } : {}),
    };
    process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
  } finally {
    await cluster.close();
  }
}

/** Milliseconds on a clock every process of the run shares and that never steps back (the epoch's wall time, then monotonic). */
const clock = (): number => performance.timeOrigin + performance.now();

/** How many of `n` things (nodes, nodes in flight) process `index` of `count` takes: those i < n with i mod count = index. */
export function shareOf(n: number, index: number, count: number): number {
  return Math.max(0, Math.ceil((n - index) / count));
}

/** The epoch (ms, `clock`) of the parent's `GO <epoch>` line on stdin. */
async function goSignal(): Promise<number> {
  let text = '';
  process.stdin.setEncoding('utf8');
  for await (const chunk of process.stdin as AsyncIterable<string>) {
    text += chunk;
    const m = /^GO (\d+(?:\.\d+)?)$/m.exec(text);
    if (m) {
      process.stdin.pause();
      return Number(m[1]);
    }
  }
  throw new Error('warm-scale child: stdin closed before GO');
}

/**
 * The processes' results as one run's: counts, CPU and round trips summed, the run as long as
 * the last one took. The curve: each process's samples (after its first node, then each tenth of
 * its share, from (0 s, 0 pods)) are read as straight lines between them, and the run's sample is
 * taken where the processes together reached their first nodes, then each tenth of all the pods —
 * at that time, their pods and CPU summed, the members' CPU on the first process's line; RSS and
 * heap summed from each process's sample nearest in time, etcd's counters and gauges from the
 * first process's nearest. (Taking each process's k-th sample at the later one's time counted
 * the faster one's last tenth into the slower one's: a last tenth 16 % too fast in a million.)
 */
export function mergeShards(parts: readonly Result[]): Result {
  if (parts.length === 1) return parts[0]!;
  const sum = (f: (r: Result) => number): number => parts.reduce((a, r) => a + f(r), 0);
  const origin = { s: 0, pods: 0, cpuS: 0, etcdCpuS: 0 };
  const lines = parts.map((r) => [origin, ...[...r.rss].sort((a, b) => a.s - b.s)]);
  /** `f` on `line` at time `t`: linear between samples, the last one's after it. */
  const on = (
    line: readonly Pick<Sample, 's' | 'pods' | 'cpuS' | 'etcdCpuS'>[],
    t: number,
    f: (x: Pick<Sample, 'pods' | 'cpuS' | 'etcdCpuS'>) => number,
  ): number => {
    for (let i = 1; i < line.length; i++) {
      const b = line[i]!;
      if (t > b.s) continue;
      const a = line[i - 1]!;
      return b.s > a.s ? f(a) + ((t - a.s) / (b.s - a.s)) * (f(b) - f(a)) : f(b);
    }
    return f(line[line.length - 1]!);
  };
  const podsAt = (t: number): number => lines.reduce((a, l) => a + on(l, t, (x) => x.pods), 0);
  // podsAt is straight between the processes' sample times: solve within the segment that reaches `target`.
  const times = [...new Set(lines.flatMap((l) => l.map((x) => x.s)))].sort((a, b) => a - b);
  const when = (target: number): number => {
    let t0 = 0;
    let p0 = 0;
    for (const t of times) {
      const p = podsAt(t);
      if (p >= target) return p > p0 ? t0 + ((t - t0) * (target - p0)) / (p - p0) : t;
      [t0, p0] = [t, p];
    }
    return t0;
  };
  const nearest = (r: Result, t: number): Sample => r.rss.reduce((a, b) => (Math.abs(b.s - t) < Math.abs(a.s - t) ? b : a));
  const total = sum((r) => r.pods);
  // A process with no samples: no curve. Else where the first nodes were done (the first tenth's
  // start), unless a tiny run's first nodes are a tenth already, then each tenth.
  const sampled = lines.every((l) => l.length > 1);
  const start = lines.reduce((a, l) => a + (l[1]?.pods ?? 0), 0);
  const targets = !sampled ? [] : start < total / 10 ? [start] : [];
  for (let k = 1; sampled && k <= 10; k++) targets.push((total * k) / 10);
  const rss: Sample[] = [];
  for (const target of targets) {
    const t = when(target);
    const near = parts.map((r) => nearest(r, t));
    const mib = (f: (x: Sample) => string): string => near.reduce((a, x) => a + Number(f(x)), 0).toFixed(1);
    rss.push({
      ...near[0]!,
      pods: Math.round(target),
      s: +t.toFixed(3),
      cpuS: lines.reduce((a, l) => a + on(l, t, (x) => x.cpuS), 0),
      etcdCpuS: on(lines[0]!, t, (x) => x.etcdCpuS),
      rssMiB: mib((x) => x.rssMiB),
      heapMiB: mib((x) => x.heapMiB),
    });
  }
  const first = parts[0]!;
  return {
    nodes: sum((r) => r.nodes),
    pods: sum((r) => r.pods),
    seconds: Math.max(...parts.map((r) => r.seconds)),
    cpuSeconds: sum((r) => r.cpuSeconds),
    roundTrips: sum((r) => r.roundTrips),
    hits: sum((r) => r.hits),
    misses: sum((r) => r.misses),
    refillTxns: sum((r) => r.refillTxns),
    writeTxns: sum((r) => r.writeTxns),
    rss,
    peakRssMiB: sum((r) => Number(r.peakRssMiB)).toFixed(1),
    heapAfterGcMiB: sum((r) => Number(r.heapAfterGcMiB)).toFixed(1),
    orphaned: sum((r) => r.orphaned),
    held: sum((r) => r.held),
    ends: parts.flatMap((r) => r.ends),
    retries: sum((r) => r.retries),
    refillFailures: sum((r) => r.refillFailures),
    ...(first.etcdAtStart ? { etcdAtStart: first.etcdAtStart } : {}),
    ...(parts.some((r) => r.etcdProfiles) ? { etcdProfiles: parts.flatMap((r) => r.etcdProfiles ?? []) } : {}),
  };
}

/** The rate between consecutive samples (each a tenth of the pods). */
function tenthRates(x: Result): string[] {
  const out: string[] = [];
  for (let i = 1; i < x.rss.length; i++) {
    const a = x.rss[i - 1]!;
    const b = x.rss[i]!;
    if (b.s > a.s) out.push(((b.pods - a.pods) / (b.s - a.s)).toFixed(0));
  }
  return out;
}

/**
 * The run's curve, a row per tenth: the rate, the CPU per pod of this process and of the etcd
 * members (what grows when the rate decays), RSS after a GC, the largest member's RSS and db; then
 * the last tenth's rate against the first's.
 */
export function curveTable(x: Pick<Result, 'rss'>): string[] {
  const samples = [...x.rss].sort((a, b) => a.pods - b.pods);
  const rows = [
    '  | pods done | s | pods/s | sim CPU µs/pod | etcd CPU µs/pod | RSS MiB | etcd RSS MiB | etcd db MiB | etcd keys | compaction s in the tenth | etcd ranges/pod | etcd sent B/pod |',
    '  |---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  const rates: number[] = [];
  for (let i = 1; i < samples.length; i++) {
    const a = samples[i - 1]!;
    const b = samples[i]!;
    const n = b.pods - a.pods;
    if (n <= 0 || b.s <= a.s) continue;
    rates.push(n / (b.s - a.s));
    const us = (v: number): string => (Number.isFinite(v) ? ((v * 1e6) / n).toFixed(0) : '-');
    rows.push(
      `  | ${b.pods} | ${b.s.toFixed(1)} | ${(n / (b.s - a.s)).toFixed(0)} | ${us(b.cpuS - a.cpuS)} | ${us(b.etcdCpuS - a.etcdCpuS)} | ${b.rssMiB} | ${b.etcdRssMiB} | ${b.etcdDbMiB} | ${b.etcd?.keys ?? '-'} | ${a.etcd && b.etcd ? ((b.etcd.compactionMs - a.etcd.compactionMs) / 1000).toFixed(1) : '-'} | ${a.etcd && b.etcd ? ((b.etcd.ranges - a.etcd.ranges) / n).toFixed(2) : '-'} | ${a.etcd && b.etcd ? ((b.etcd.sentBytes - a.etcd.sentBytes) / n).toFixed(0) : '-'} |`,
    );
  }
  if (rates.length >= 2)
    rows.push(
      `  last tenth / first tenth: ${(rates[rates.length - 1]! / rates[0]!).toFixed(3)} (${rates[0]!.toFixed(0)} → ${rates[rates.length - 1]!.toFixed(0)} pods/s)`,
    );
  return rows;
}

/**
 * What etcd carried per pod over the run (member 0's counters, start to last sample): keys and
 * bytes put, txns, live keys and db bytes per pod, and the compactions' time — each of which
 * rereads every live revision in etcd 3.4, so its cost grows with the keys the pods left behind.
 */
export function etcdPerPod(x: Pick<Result, 'rss' | 'etcdAtStart'>): string[] {
  const a = x.etcdAtStart;
  const last = [...x.rss].reverse().find((s) => s.etcd !== undefined);
  const b = last?.etcd;
  if (!a || !b || !last || last.pods <= 0) return ['  etcd per pod: no /metrics figures'];
  const n = last.pods;
  const per = (v: number, digits = 2): string => (v / n).toFixed(digits);
  return [
    `  etcd per pod (member 0, ${n} pods): ${per(b.puts - a.puts)} keys put, ${per(b.putBytes - a.putBytes, 0)} bytes put, ${per(b.deletes - a.deletes)} deletes, ${per(b.txns - a.txns, 3)} txns; live ${per(b.keys - a.keys)} keys, db ${per(b.dbBytes - a.dbBytes, 0)} bytes (in use ${per(b.dbInUseBytes - a.dbInUseBytes, 0)})`,
    `  etcd compactions (member 0): ${b.compactions - a.compactions}, ${((b.compactionMs - a.compactionMs) / 1000).toFixed(1)} s together (index walks ${((b.indexCompactionMs - a.indexCompactionMs) / 1000).toFixed(1)} s; the last ones with ${b.keys} live keys); slow applies ${b.slowApplies - a.slowApplies}; db ${mib(b.dbBytes)} MiB, ${mib(b.dbInUseBytes)} in use`,
  ];
}

/** How many keys start with `prefix`, read a page at a time (a million records never in memory at once). */
async function countKeys(store: Store, prefix: string): Promise<number> {
  let n = 0;
  let after: string | undefined;
  for (;;) {
    const page = await store.list(prefix, { limit: 5000, ...(after === undefined ? {} : { after }) });
    n += page.length;
    if (page.length < 5000) return n;
    after = page[page.length - 1]!.key;
  }
}

/**
 * Runs the warm-scale workload against the etcd at `url` in simProcs() child processes (each a
 * fresh heap, --expose-gc, a share of the nodes): creates the pools, starts them together, merges
 * their results (mergeShards) and checks the datastore holds what the nodes did — one record per
 * pod, every address the nodes' warm handles held. Asynchronous on purpose: this process's timers
 * (the compactor, startCompactor) must keep running while the children work — a spawnSync here
 * blocked them for the whole run, so etcd was never compacted.
 */
export async function runWarmScaleChild(url: string, members: readonly string[] = [], metricsUrl?: string, pprofUrls: readonly string[] = []): Promise<Result> {
  // No more processes than nodes: a process with none would have no samples to merge.
  const procs = Math.min(simProcs(), Math.max(1, NODES));
  const admin = await openStore(url, { timeoutMs: 10_000 });
  // Every node's resource DB under one directory of this process's, removed here whatever the children did.
  const base = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'podipam-warm-scale-'));
  try {
    const c = new ClusterIpam(admin);
    // Sized for the cluster: 5,000 nodes claim ~10,000 of its 262,144 blocks. (On a /10, 15%
    // full, new nodes' block guesses collided so often that many listed every affinity; see
    // BENCHMARKS.md.)
    await c.createPool({ name: 'ws-v4', cidr: '10.0.0.0/8' });
    await c.createPool({ name: 'ws-v6', cidr: 'fd00:5c::/100' });
    // PODIPAM_BENCH_WARM_CPU_PROF=DIR: a V8 CPU profile of each simulating process (1 ms samples) in DIR.
    const prof = process.env.PODIPAM_BENCH_WARM_CPU_PROF;
    const profArgs = prof ? ['--cpu-prof', '--cpu-prof-dir', prof, '--cpu-prof-interval', '1000'] : [];
    const children = Array.from({ length: procs }, (_, i) => {
      const child = spawn(process.execPath, ['--expose-gc', ...profArgs, fileURLToPath(import.meta.url)], {
        env: {
          ...process.env,
          PODIPAM_BENCH_WARM_SCALE_CHILD: url,
          PODIPAM_BENCH_WARM_BASE: base,
          PODIPAM_BENCH_WARM_SHARD: `${i}/${procs}`,
          PODIPAM_BENCH_WARM_ETCD_MEMBERS: members.join(','),
          PODIPAM_BENCH_WARM_ETCD_METRICS: metricsUrl ?? '',
          // Go takes one CPU profile at a time: the first process asks for them.
          PODIPAM_BENCH_WARM_ETCD_PPROF_URLS: i === 0 ? pprofUrls.join(',') : '',
        },
        stdio: ['pipe', 'pipe', 'inherit'],
      });
      // A child that died before the GO makes the write fail (EPIPE): its exit is the error reported, not this.
      child.stdin.on('error', () => undefined);
      let stdout = '';
      let onReady: () => void = () => undefined;
      const ready = new Promise<void>((res) => (onReady = res));
      child.stdout.setEncoding('utf8').on('data', (d: string) => {
        stdout = (stdout + d).slice(-(1 << 24));
        if (/^READY$/m.test(stdout)) onReady();
      });
      const timer = setTimeout(() => child.kill('SIGKILL'), 3_600_000);
      const closed = (once(child, 'close') as Promise<[number | null, NodeJS.Signals | null]>).then(([code, signal]) => {
        clearTimeout(timer);
        const m = /^RESULT (.*)$/m.exec(stdout);
        if (code !== 0 || !m) throw new Error(`warm-scale child ${i} of ${procs} failed (${code ?? signal}): ${stdout.slice(-500)}`);
        return JSON.parse(m[1]!) as Result;
      });
      closed.catch(() => undefined); // awaited below; a second failure is not an unhandled rejection
      return { child, ready, closed };
    });
    try {
      // A child that fails before it is ready ends the wait too (its error is the one thrown).
      await Promise.race([Promise.all(children.map((x) => x.ready)), Promise.all(children.map((x) => x.closed))]);
      const go = `GO ${clock()}\n`;
      for (const x of children) x.child.stdin.end(go);
      const x = mergeShards(await Promise.all(children.map((y) => y.closed)));
      // The datastore holds what the nodes did: one record per pod, every refilled address.
      const records = await countKeys(admin, 'agent-pods/');
      if (records !== x.pods) throw new Error(`${records} pod records in the datastore, expected ${x.pods}`);
      const allocated = (await c.usage()).pools.reduce((a, p) => a + p.allocated, 0);
      // More allocated than the nodes hold: refills that timed out but landed (held by a warm
      // handle; a node's next start adopts them). Fewer: addresses lost — a failure.
      if (allocated < x.held) throw new Error(`${allocated} addresses allocated in the datastore, the nodes hold ${x.held}`);
      return { ...x, orphaned: allocated - x.held };
    } finally {
      for (const x of children) if (x.child.exitCode === null) x.child.kill('SIGKILL');
    }
  } finally {
    await admin.close();
    rmSync(base, { recursive: true, force: true });
  }
}

export async function run(): Promise<string[]> {
  // PODIPAM_BENCH_WARM_ETCD_PPROF=1: the members serve Go's profiles at <client URL>/debug/pprof/ (a CPU profile: .../profile?seconds=30).
  const pprof = process.env.PODIPAM_BENCH_WARM_ETCD_PPROF === '1' ? ['--enable-pprof'] : [];
  const etcd = await startEtcd({ members: 3, ...BIG_ETCD, extraArgs: [...BIG_ETCD.extraArgs, ...pprof], env: etcdGoEnv() });
  if (pprof.length) console.log(`  etcd profiles: ${etcd.members.map((m) => `${m.clientUrl}/debug/pprof/`).join(' ')}`);
  // PODIPAM_BENCH_WARM_COMPACT_MS: the compaction period (COMPACT_MS); 0 never compacts (etcd keeps every revision).
  const compactMs = Number(process.env.PODIPAM_BENCH_WARM_COMPACT_MS ?? COMPACT_MS);
  const compactor = compactMs > 0 ? startCompactor(etcd, compactMs) : { stop: () => undefined, count: () => 0 };
  try {
    console.log(
      `warm-scale: ${NODES} nodes x ${PODS} dual-stack pods through the agent's warm pool (minIdle ${POOL.minIdle}, maxIdle ${POOL.maxIdle}, capacity ${POOL.capacity}), ${IN_FLIGHT} nodes in flight (${simProcs()} simulating process${simProcs() > 1 ? 'es' : ''}), 3-member etcd (GOGC ${etcdGoEnv().GOGC ?? "Go's default"})`,
    );
    const x = await runWarmScaleChild(
      etcd.url,
      memberPids(etcd),
      `${etcd.members[0]!.clientUrl}/metrics`,
      pprof.length > 0 ? etcd.members.map((m) => m.clientUrl) : [],
    );
    const rate = x.pods / x.seconds;
    const lines = [
      `warm-scale etcd x3 ${x.nodes}x${PODS} = ${x.pods} pods: ${x.seconds.toFixed(1)} s, ${rate.toFixed(0)} pods/s (direct cluster path at 150,000: 604 pods/s → ${(rate / 604).toFixed(2)}x); CPU of the simulating process${x.ends.length > 1 ? `es (${x.ends.length}, done after ${x.ends.map((e) => e.toFixed(1)).join(', ')} s)` : ''} ${x.cpuSeconds.toFixed(1)} s`,
      `  round trips per pod ${(x.roundTrips / x.pods).toFixed(3)} (node start-up included: ${(x.roundTrips / x.nodes).toFixed(2)} per node), refill txns ${x.refillTxns} (${x.refillFailures} failed), write-behind txns ${x.writeTxns}, pool hit rate ${((100 * x.hits) / Math.max(1, x.hits + x.misses)).toFixed(1)}%${x.orphaned ? `, ${x.orphaned} addresses of timed-out refills held by warm handles` : ''}, ${x.retries} ADDs retried on code 11`,
      `  RSS MiB after a GC, by pods done: ${x.rss.map((s) => `${s.pods}:${s.rssMiB}`).join(' ')}; peak ${x.peakRssMiB} MiB, heap after a full GC ${x.heapAfterGcMiB} MiB`,
      `  pods/s in each tenth of the run (sustained?): ${tenthRates(x).join(' ')}`,
      ...curveTable(x),
      ...etcdPerPod(x),
      ...(x.etcdProfiles ?? []),
      ...(x.pods < FULL
        ? [`  projected for ${FULL} pods at this rate: ${(FULL / rate).toFixed(0)} s (run with PODIPAM_BENCH_WARM_NODES=5000 for the real figure)`]
        : []),
      `  etcd compactions during the run: ${compactor.count()} (every ${compactMs ? `${compactMs / 1000} s` : '- (PODIPAM_BENCH_WARM_COMPACT_MS=0)'})`,
      `  load average at the end: ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`,
    ];
    lines.push(...etcdEvents(etcd));
    for (const l of lines) console.log(l);
    return lines;
  } catch (e) {
    for (const l of etcdEvents(etcd)) console.log(l);
    throw e;
  } finally {
    compactor.stop();
    await etcd.stop();
  }
}

/**
 * The bench's compaction period: Kubernetes' API server's (`--etcd-compaction-interval`, 5 min),
 * to the revision of one period before. etcd 3.4's compaction rereads every live revision (a
 * batch of 1,000 at a time, 10 ms apart, locking out writes while it reads one) and walks its
 * whole in-memory index: its cost grows with the keys the pods leave behind, 10–16 µs a live key
 * measured here, 13.5–16.2 s per compaction at a million pods (1.03–1.28 M keys). The earlier 20 s
 * period kept the members compacting most of the time at that size — much of the decay it
 * measured (bench/results/million.md); PODIPAM_BENCH_WARM_COMPACT_MS=20000 reproduces it.
 */
export const COMPACT_MS = 300_000;

/**
 * The members' Go environment: GOGC from PODIPAM_BENCH_WARM_ETCD_GOGC, 400 unless set
 * (`default`: none, Go's 100). At a million pods on etcd 3.4 the leader's garbage collector is
 * what grows with the keys (a GC cycle marks the whole key index; the read-buffer copies
 * allocate ~80 KiB for each read and txn): 50 % of its CPU at 750,000 pods with Go's default,
 * 21 % with 400, for about twice the members' memory (bench/results/machine2.md).
 */
export function etcdGoEnv(): { GOGC?: string } {
  const v = process.env.PODIPAM_BENCH_WARM_ETCD_GOGC ?? '400';
  if (v === 'default') return {};
  if (v !== 'off' && !/^[1-9]\d{0,5}$/.test(v)) throw new Error(`PODIPAM_BENCH_WARM_ETCD_GOGC=${v}: a percentage (e.g. 400), off or default`);
  return { GOGC: v };
}

/**
 * etcd for a run past the 150,000 pods: etcd keeps every revision until compacted, and its
 * default 2 GiB quota would not hold a million pods' records and their history (the members'
 * data is on /dev/shm, in this machine's RAM). The bench compacts every COMPACT_MS.
 */
export const BIG_ETCD = {
  extraArgs: [
    '--quota-backend-bytes',
    String(8 * 2 ** 30),
    // etcd's own defaults (the tests' 50/500 ms detect faults fast): on two shared cores a member
    // starved for half a second would otherwise start an election in the middle of the run.
    '--heartbeat-interval',
    '100',
    '--election-timeout',
    '1000',
    // As deploy/base/etcd.yaml: a member keeps 10,000 raft entries in memory between snapshots,
    // not etcd's default 100,000 (some 300 MB of the leader's heap at this bench's txn sizes).
    '--snapshot-count',
    '10000',
    // info: leader changes, slow applies and snapshots are logged, and etcdEvents() counts them
    '--log-level',
    'info',
  ],
} as const;

/** What each member's log says happened during the run: leader changes, slow requests, snapshots. */
export function etcdEvents(etcd: EtcdCluster): string[] {
  const kinds: Array<[string, RegExp]> = [
    ['leader changes', /elected leader|became leader|lost leader/],
    ['elections started', /is starting a new election/],
    ['slow requests', /took too long/],
    ['heartbeats late', /leader failed to send out heartbeat on time/],
    ['snapshots', /saved snapshot|triggering snapshot/],
    ['snapshots sent to a follower', /sending database snapshot|sent database snapshot/],
  ];
  return etcd.members.map((m) => {
    let text: string;
    try {
      text = readFileSync(m.logFile, 'utf8');
    } catch {
      return `  etcd ${m.name}: no log`;
    }
    const lines = text.split('\n');
    const counts = kinds.map(([name, re]) => `${name} ${lines.filter((l) => re.test(l)).length}`);
    const slow = slowRequests(lines);
    return `  etcd ${m.name} logged: ${counts.join(', ')}${slow.length ? `; slowest kinds: ${slow.join(', ')}` : ''}`;
  });
}

/**
 * etcd's "took too long" lines grouped by what was asked (the request kind and the first key's
 * prefix, its first two path segments): the five kinds with the most time, each as
 * `kind: count × mean ms`. What the members spent their slow applies on.
 */
export function slowRequests(lines: readonly string[]): string[] {
  const by = new Map<string, { n: number; ms: number }>();
  for (const l of lines) {
    if (!l.includes('took too long')) continue;
    let o: { took?: string; prefix?: string; request?: string };
    try {
      o = JSON.parse(l) as typeof o;
    } catch {
      continue;
    }
    const took = /^([\d.]+)(µs|ms|s)$/.exec(o.took ?? '');
    const ms = took ? Number(took[1]) * (took[2] === 's' ? 1000 : took[2] === 'ms' ? 1 : 0.001) : 0;
    const key = /key:\\?"([^"\\]*)/.exec(o.request ?? '')?.[1] ?? '';
    const kind = `${(o.prefix ?? '').trim() || 'request'} ${key.split('/').slice(0, 3).join('/')}`.trim();
    const e = by.get(kind) ?? { n: 0, ms: 0 };
    e.n++;
    e.ms += ms;
    by.set(kind, e);
  }
  return [...by]
    .sort((a, b) => b[1].ms - a[1].ms)
    .slice(0, 5)
    .map(([k, e]) => `${k}: ${e.n} × ${(e.ms / e.n).toFixed(0)} ms`);
}

export function startCompactor(etcd: EtcdCluster, everyMs = 20_000): { stop(): void; count(): number } {
  let previous: number | undefined;
  let compactions = 0;
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    void (async () => {
      try {
        const m = etcd.members[0]!;
        const head = (await etcdPost(m, 'kv/range', { key: Buffer.from('compaction-probe').toString('base64') })) as { header?: { revision?: string } };
        const rev = Number(head.header?.revision ?? 0);
        if (previous !== undefined && previous > 1) {
          await etcdPost(m, 'kv/compaction', { revision: String(previous) });
          compactions++;
        }
        previous = rev;
      } catch (e) {
        process.stderr.write(`  warm-scale: compaction skipped: ${(e as Error).message}\n`);
      } finally {
        busy = false;
      }
    })();
  }, everyMs);
  timer.unref();
  return { stop: () => clearInterval(timer), count: () => compactions };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const url = process.env.PODIPAM_BENCH_WARM_SCALE_CHILD;
  const [index, count] = (process.env.PODIPAM_BENCH_WARM_SHARD ?? '0/1').split('/').map(Number) as [number, number];
  const base = process.env.PODIPAM_BENCH_WARM_BASE;
  if (url && !base) throw new Error("warm-scale child: PODIPAM_BENCH_WARM_BASE (the directory of the nodes' resource DBs) is not set");
  if (url) await child(url, base!, { index, count });
  else await run();
}
