/**
 * The agent's warm pool in one run beside the two things it replaces, on a 3-member etcd
 * (dual-stack, through the native shim for both agent subjects):
 *
 *   warm        shim → agent with a warm pool (`ipam: {type: podipam, agent: SOCK}`)
 *   cluster     shim → agent without a pool (`ipam: {type: podipam, datastore: URL}`: the
 *               cluster back end, one group-committed txn per ADD and per DEL)
 *   host-local  /usr/lib/cni/host-local (IPv4 only, local files)
 *   local       shim → the same agent in local mode (dual-stack ranges, files in a directory of
 *               its own): what the warm pool costs beyond the agent's own path, same process
 *   floor       bench/native/cni-floor.c: a static binary that reads the config and prints a
 *               result (what any plugin exec costs here; each subject's overhead is above it)
 *
 * Sequential ADD+DEL pairs, subjects alternating pair by pair so they share the machine's load:
 * p50/p99 per call; then a BURST-pod burst at 32 in flight (ADD wall, DEL wall) — every call
 * through the lean driver (bench/lib/lean-driver.ts: posix_spawn, as a runtime execs a plugin). Datastore round trips per
 * pod from each agent's store counter (every read, list and txn — an upper bound on
 * transactions), in the steady state (the sequential phase, after the preload) and in the
 * burst; the warm pool's hit rate (ADDs served without waiting for a refill). Then where one ADD's
 * time goes in the warm pool and in cluster mode (bench/lib/traced-breakdown.ts: agents of their
 * own, shim and agent tracing, half the pairs up to 200, the floor right after).
 *
 * The pool: minIdle 64, maxIdle 256, capacity 1024, cooldown 1 s (so sequential churn reuses
 * cooled addresses rather than refilling). Knobs: PODIPAM_BENCH_PAIRS (200), PODIPAM_BENCH_BURST
 * (256), PODIPAM_BENCH_WARM_LAYOUT (together,apart: bench/lib/cpu-layout.ts — `apart` puts the
 * etcd members on a CPU of their own, as a cluster's etcd runs on machines of its own). Run
 * alone: `node dist/bench/index.js warm`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type RunningAgent, SHIM_BIN, requireShim, startAgent, AS_SHIPPED, warmPoolFilled } from '../test/helpers/agent.js';
import { startEtcd } from '../test/helpers/etcd.js';
import { HOST_LOCAL_BIN, runCliSync } from '../test/helpers/plugin.js';
import { makeTempDir } from '../test/helpers/tmp.js';
import { BURST, IN_FLIGHT, PAIRS, type Subject, ms, q, ratio } from './lib/cni-subject.js';
import { type LeanDrivers, buildLeanDrivers, burstWalls, floorSubject, runLeanDriver, seqTimes } from './lib/lean-driver.js';
import { tracedBreakdown } from './lib/traced-breakdown.js';
import { type CpuLayout, allCpus, checkAffinity, cpuLayouts, describeLayout, pinProcess } from './lib/cpu-layout.js';
import { childPids } from './lib/proc-cpu.js';

/** Where the processes run (bench/lib/cpu-layout.ts): PODIPAM_BENCH_WARM_LAYOUT, each layout a whole run of its own. */
const LAYOUTS = cpuLayouts(process.env.PODIPAM_BENCH_WARM_LAYOUT ?? 'together,apart');

export async function run(): Promise<string[]> {
  requireShim();
  const rows: string[] = [];
  try {
    for (const layout of LAYOUTS) {
      // This process's CPUs are what the agents, the driver and the plugins it starts inherit.
      pinProcess(process.pid, layout.node);
      const head = `layout ${describeLayout(layout)}`;
      console.log(head);
      rows.push(head);
      await runLayout(layout, rows);
    }
  } finally {
    pinProcess(process.pid, allCpus());
  }
  rows.push('(warm txns: r refill, x return, w write-behind transactions)');
  rows.push(`load average at the end: ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
  return rows;
}

async function runLayout(layout: CpuLayout, rows: string[]): Promise<void> {
  const dir = makeTempDir('bench-warm');
  const etcd = await startEtcd({ members: 3, ...(layout.datastore !== undefined ? { cpus: layout.datastore } : {}) });
  const line = (label: string, cells: readonly string[]): void => {
    const text = `${label.padEnd(30)} ${cells.map((c) => c.padStart(13)).join(' ')}`;
    console.log(`  ${text}`);
    rows.push(text);
  };
  let warmAgent: RunningAgent | undefined;
  let clusterAgent: RunningAgent | undefined;
  try {
    checkAffinity('etcd member', childPids('etcd'), layout.datastore ?? layout.node);
    const url = etcd.url;
    for (const [name, cidr] of [
      ['bw-v4', '10.96.0.0/12'],
      ['bw-v6', 'fd00:96::/104'],
    ] as const) {
      const r = runCliSync(url, ['pool', 'create', name, '--cidr', cidr]);
      if (r.code !== 0) throw new Error(r.stderr);
    }
    warmAgent = await startWarmAgent(join(dir.path, 'warm'), 'bench-warm', url, 64, {});
    clusterAgent = await startAgent(join(dir.path, 'cluster', 'agent.sock'), ['--node', 'bench-cluster', '--datastore', url], {}, AS_SHIPPED);
    await warmPoolFilled(warmAgent, 64, BOTH_FAMILIES);
    const warm: Subject = { name: 'warm', bin: SHIM_BIN, ipam: { type: 'podipam', agent: warmAgent.socket }, env: { PODIPAM_PLUGIN: '' }, agent: warmAgent };
    const cluster: Subject = {
      name: 'cluster',
      bin: SHIM_BIN,
      ipam: { type: 'podipam', datastore: url, nodeName: 'bench-cluster' },
      env: { PODIPAM_AGENT_SOCKET: clusterAgent.socket, PODIPAM_PLUGIN: '' },
      agent: clusterAgent,
    };
    const hl: Subject = {
      name: 'host-local',
      bin: HOST_LOCAL_BIN,
      ipam: { type: 'host-local', dataDir: join(dir.path, 'hl'), ranges: [[{ subnet: '10.128.0.0/16' }]] },
      env: {},
    };
    checkAffinity('agent', [warmAgent.child.pid!, clusterAgent.child.pid!], layout.node);
    const drivers = buildLeanDrivers(dir.path);
    const floor: Subject = floorSubject(drivers);
    const local: Subject = {
      name: 'local',
      bin: SHIM_BIN,
      ipam: { type: 'podipam', dataDir: join(dir.path, 'local'), ranges: [[{ subnet: '10.128.0.0/16' }], [{ subnet: 'fd00:128::/64' }]] },
      env: { PODIPAM_AGENT_SOCKET: warmAgent.socket, PODIPAM_PLUGIN: '' },
    };
    const subjects = [floor, warm, local, cluster, hl];
    // One ADD+DEL each first: the cluster node claims its blocks, the agents open their stores.
    for (const s of subjects) runLeanDriver(drivers, ['seq', '1'], s, `bench-${s.name}`);
    console.log(
      `warm: ${PAIRS} sequential ADD+DEL pairs (floor, warm, local, cluster, host-local alternating pair by pair), then ${BURST} pods at ${IN_FLIGHT} in flight, every call through the lean driver (posix_spawn); 3-member etcd, dual-stack (host-local IPv4)`,
    );
    type Counts = { trips: number; hits: number; misses: number; refills: number; returns: number; writes: number };
    const counts = async (a: RunningAgent): Promise<Counts> => {
      const s = await a.status();
      const w = s.warmPool;
      return {
        trips: s.datastore.roundTrips,
        hits: w?.hits ?? 0,
        misses: w?.misses ?? 0,
        refills: w?.refillTxns ?? 0,
        returns: w?.returnTxns ?? 0,
        writes: w?.writeTxns ?? 0,
      };
    };
    const delta = (a: Counts, b: Counts): Counts => ({
      trips: b.trips - a.trips,
      hits: b.hits - a.hits,
      misses: b.misses - a.misses,
      refills: b.refills - a.refills,
      returns: b.returns - a.returns,
      writes: b.writes - a.writes,
    });
    /** Counts after the warm agent's write-behind drained (what the phase's pods cost, all of it). */
    const settled = async (a: RunningAgent): Promise<Counts> => {
      for (let i = 0; i < 200 && ((await a.status()).warmPool?.writeBehindDepth ?? 0) > 0; i++) await new Promise((r) => setTimeout(r, 50));
      return counts(a);
    };

    const seq = new Map(subjects.map((s) => [s.name, { add: [] as number[], del: [] as number[] }]));
    const w0 = await settled(warmAgent);
    const c0 = await counts(clusterAgent);
    // One pair at a time per subject, in turn, as before the lean driver: each subject's steady
    // churn runs at a third of the calls' pace (a node's pod starts, not a stress of the pool).
    for (let i = 0; i < PAIRS; i++) {
      for (const s of i % 2 ? subjects : [...subjects].reverse()) {
        const t = seqTimes(runLeanDriver(drivers, ['seq', '1', String(i + 1)], s, `bench-${s.name}`));
        seq.get(s.name)!.add.push(...t.add);
        seq.get(s.name)!.del.push(...t.del);
      }
    }
    const wSeq = delta(w0, await settled(warmAgent));
    const cSeq = delta(c0, await counts(clusterAgent));
    line('', [
      'floor',
      'warm',
      'local',
      'cluster',
      'host-local',
      'warm-floor',
      'local-floor',
      'cluster-floor',
      'warm/local',
      'warm/cluster',
      'warm/h-l',
      'cluster/h-l',
      'floor/h-l',
    ]);
    /** A row: each subject's figure, the agents' overheads above the floor, the ratios. */
    const row = ([z, w, l, c, h]: number[]): string[] => [
      ...[z!, w!, l!, c!, h!].map(ms),
      ms(w! - z!),
      ms(l! - z!),
      ms(c! - z!),
      ratio(w!, l!),
      ratio(w!, c!),
      ratio(w!, h!),
      ratio(c!, h!),
      ratio(z!, h!),
    ];
    const cells = (f: (x: { add: number[]; del: number[] }) => number): string[] => row(subjects.map((s) => f(seq.get(s.name)!)));
    /** A row of figures for the two datastore agents only (the floor, local mode and host-local have no datastore). */
    const agentsOnly = (w: string, c: string, wc: string): string[] => ['', w, '-', c, '-', '', '', '', '', wc, '', '', ''];
    line(
      'ADD p50',
      cells((x) => q(x.add, 0.5)),
    );
    line(
      'ADD p99',
      cells((x) => q(x.add, 0.99)),
    );
    line(
      'DEL p50',
      cells((x) => q(x.del, 0.5)),
    );
    line(
      'DEL p99',
      cells((x) => q(x.del, 0.99)),
    );
    line('steady: round trips per pod', agentsOnly((wSeq.trips / PAIRS).toFixed(3), (cSeq.trips / PAIRS).toFixed(3), ratio(wSeq.trips, cSeq.trips)));
    line('steady: pool hit rate', agentsOnly(`${((100 * wSeq.hits) / Math.max(1, wSeq.hits + wSeq.misses)).toFixed(1)}%`, '-', ''));
    line('steady: warm txns', agentsOnly(`${wSeq.refills}r ${wSeq.returns}x ${wSeq.writes}w`, '', ''));

    const wall = new Map<string, { add: number; del: number }>();
    const wb0 = await settled(warmAgent);
    const cb0 = await counts(clusterAgent);
    for (const s of subjects) wall.set(s.name, burstWalls(runLeanDriver(drivers, ['burst', String(BURST), String(IN_FLIGHT)], s, `bench-${s.name}`)));
    const wB = delta(wb0, await settled(warmAgent));
    const cB = delta(cb0, await counts(clusterAgent));
    const walls = (k: 'add' | 'del'): string[] => row(subjects.map((s) => wall.get(s.name)![k]));
    line(`burst ${BURST} ADD wall`, walls('add'));
    line(`burst ${BURST} DEL wall`, walls('del'));
    line('burst: round trips per pod', agentsOnly((wB.trips / BURST).toFixed(3), (cB.trips / BURST).toFixed(3), ratio(wB.trips, cB.trips)));
    line('burst: pool hit rate', agentsOnly(`${((100 * wB.hits) / Math.max(1, wB.hits + wB.misses)).toFixed(1)}%`, '-', ''));
    line('burst: warm txns', agentsOnly(`${wB.refills}r ${wB.returns}x ${wB.writes}w`, '', ''));
    // The breakdowns' agents run alone: these two may still be returning the burst's addresses.
    await warmAgent.stop();
    await clusterAgent.stop();
    warmAgent = clusterAgent = undefined;
    await breakdowns(dir.path, url, drivers, rows);
  } finally {
    await warmAgent?.stop();
    await clusterAgent?.stop();
    await etcd.stop();
    dir.remove();
  }
}

/** A warm-pool agent for `node` in `dir` (its socket and data directory there): the bench's pool sizes, `minIdle` idle addresses of each family kept. */
function startWarmAgent(dir: string, node: string, url: string, minIdle: number, env: NodeJS.ProcessEnv): Promise<RunningAgent> {
  const pool = ['--min-idle', String(minIdle), '--max-idle', '256', '--capacity', '1024', '--cooldown', '1s'];
  return startAgent(join(dir, 'agent.sock'), ['--node', node, '--datastore', url, '--data-dir', join(dir, 'data'), ...pool], env, AS_SHIPPED);
}

/** The warm agents' pools are dual-stack: both families preloaded (up to 30 s) before a measurement. */
const BOTH_FAMILIES = { families: ['ipv4', 'ipv6'], what: 'the warm bench' } as const;

/** Pairs of each breakdown (half the sequential pairs, at most 200: a warm agent's idle addresses cover them). */
const TRACED_PAIRS = Math.min(Math.ceil(PAIRS / 2), 200);

/**
 * Where one ADD's time goes in the warm pool and in cluster mode (bench/lib/traced-breakdown.ts):
 * agents of their own, tracing, on the same etcd, each ADD served from addresses preloaded
 * (the warm one) or from the node's block (the cluster one) — the pool's steady state.
 */
async function breakdowns(dir: string, url: string, drivers: LeanDrivers, rows: string[]): Promise<void> {
  const traced = { PODIPAM_TRACE: '1' };
  const warm = await startWarmAgent(join(dir, 'warm-traced'), 'bench-warm-traced', url, TRACED_PAIRS + 16, traced);
  try {
    await warmPoolFilled(warm, TRACED_PAIRS + 16, BOTH_FAMILIES);
    await tracedBreakdown({
      drivers,
      agent: warm,
      name: 'bench-warm-traced',
      ipam: { type: 'podipam', agent: warm.socket },
      pairs: TRACED_PAIRS,
      title: `where one warm-pool ADD's time goes (shim + agent, both tracing; ${TRACED_PAIRS} sequential pairs, every ADD from preloaded addresses; per segment; tail: the slowest 5 %'s mean minus the median):`,
      rows,
    });
  } finally {
    await warm.stop();
  }
  const cluster = await startAgent(join(dir, 'cluster-traced', 'agent.sock'), ['--node', 'bench-cluster-traced', '--datastore', url], traced, AS_SHIPPED);
  try {
    await tracedBreakdown({
      drivers,
      agent: cluster,
      name: 'bench-cluster-traced',
      ipam: { type: 'podipam', datastore: url, nodeName: 'bench-cluster-traced' },
      pairs: TRACED_PAIRS,
      title: `where one cluster-mode ADD's time goes (shim + agent, both tracing, 3-member etcd; ${TRACED_PAIRS} sequential pairs; the handler holds the datastore's transaction):`,
      rows,
    });
  } finally {
    await cluster.stop();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) for (const l of await run()) console.log(l);
