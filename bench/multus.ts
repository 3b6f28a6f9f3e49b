/**
 * Multus-style pods: PODS pods × NETWORKS networks (default 128 × 16 = 2,048 attachments), each
 * attachment one CNI call through the native shim to the agent of the pod's node (3 nodes, each
 * its own agent, socket and directory) on a 3-member etcd; each pod's calls one after another
 * (Multus's delegates: net-0 on eth0, then net1, net2, …; DEL in reverse), 32 pods in flight.
 * The target is the whole set's ADDs in under 20 s wall (Whereabouts at this size outlasts
 * kubelet's 4-minute sandbox timeout). Subjects, alternating over RUNS rounds:
 *
 *   own pools    cluster mode, every network its own pool (`pools: ["pool-net-i"]`)
 *   shared pool  cluster mode, all 16 networks on one pool
 *   host-local   the reference host-local plugin on the same schedule (each node its own data
 *                directory and, per network, its own range of the network's /16): the figure
 *                podipam's ADD and DEL walls are compared with, in the same run
 *   warm         the agents' warm pool (`ipam: {type: podipam, agent: SOCK}`; --min-idle a node's
 *                share of the attachments, so that the burst is served from the idle queue;
 *                each round starts once it is refilled), which serves any
 *                network name from the agent's --pools: the shared-pool case; per-network
 *                pools it cannot serve from its idle queue (a pool per network would need an
 *                annotation, which allocates directly on the datastore, i.e. cluster mode)
 *
 * Every round checks what the e2e test checks (test/e2e/multus-networks.test.ts): every answer
 * a valid result in its network's pool, distinct per pod and across the run; nothing held after
 * the DELs and `ipam check` clean (host-local: no address file left). Prints per round and the
 * medians: ADD wall, DEL wall, the ratio of ADD wall to the 20 s target, the slowest pod,
 * datastore round trips per attachment, the agents' group commits and group releases, and each
 * subject's ADD and DEL walls over host-local's.
 *
 * Knobs: PODIPAM_BENCH_MULTUS_PODS (128), _NETWORKS (16), _IN_FLIGHT (32), _NODES (3),
 * PODIPAM_BENCH_MULTUS_RUNS (3), PODIPAM_BENCH_MULTUS_SUBJECTS (own,shared,warm,host-local),
 * PODIPAM_BENCH_MULTUS_WARM_MIN_IDLE (a node's share), PODIPAM_BENCH_MULTUS_DRIVER (lean; node:
 * Node's child_process, as the e2e test);
 * PODIPAM_BENCH_MULTUS_AGENT_RT (unset; e.g. 1: the agents run with `--realtime-priority 1`, as the
 * DaemonSet and the systemd unit run them — every agent thread under SCHED_RR, so an ADD does not
 * wait behind the shims and etcd for a CPU; needs CAP_SYS_NICE);
 * PODIPAM_TRACE=1 reaches the agents (their traces: `podipam-trace` lines in their stderr);
 * PODIPAM_BENCH_MULTUS_AGENT_PROF=DIR: the agents run with `--cpu-prof` into DIR (written when they stop);
 * PODIPAM_BENCH_MULTUS_AGENT_NODE_ARGS: more flags for the agents' node, space-separated, after
 *   PODIPAM_BENCH_AGENT_NODE_ARGS's (every bench's agents: test/helpers/agent.ts AS_SHIPPED, as
 *   PODIPAM_BENCH_AGENT_ARGS for the agent's own flags);
 * PODIPAM_BENCH_MULTUS_LAYOUT (together,apart): where the processes run, each layout a whole run of
 * its own (bench/lib/cpu-layout.ts) — `together`: everything on every CPU, the etcd members
 * competing with the node for it; `apart`: the node's processes (driver, plugins, agents) on all
 * CPUs but the last and the members on the last, as a cluster's etcd runs on machines of its own
 * (host-local then has the node's CPUs, as podipam has);
 * PODIPAM_BENCH_MULTUS_TXN_COST=N: after the rounds, N transactions of each ADD-like shape on the
 * same etcd, the members' CPU per transaction (bench/lib/etcd-txn-cost.ts: fixed cost vs bytes).
 *
 * CPU per attachment (ms, from /proc: user + system) over each round's ADD and DEL phases: the
 * lean driver and the plugins it waited for (shims, or host-local), the agents, the etcd members.
 * Run alone: `node dist/bench/multus.js` after a build.
 */
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { AS_SHIPPED, SHIM_BIN, requireShim, warmPoolFilled, words } from '../test/helpers/agent.js';
import { startEtcd } from '../test/helpers/etcd.js';
import {
  type MultusNode,
  type MultusPool,
  type MultusRun,
  checkAttachments,
  createMultusPools,
  leftHeld,
  multusCall,
  multusSize,
  runMultusPods,
  startMultusNodes,
} from '../test/helpers/multus-pods.js';
import { HOST_LOCAL_BIN, type PluginCall, runCliSync } from '../test/helpers/plugin.js';
import { makeTempDir } from '../test/helpers/tmp.js';
import { parsePrefix } from '../src/ip/prefix.js';
import { q } from './lib/cni-subject.js';
import { childPids, cpuMs } from './lib/proc-cpu.js';
import { etcdTxnCost } from './lib/etcd-txn-cost.js';
import { openStore } from '../src/store/open-store.js';
import { buildMultusDriver, runMultusLean } from './lib/multus-driver.js';
import { type CpuLayout, allCpus, checkAffinity, cpuLayouts, describeLayout, pinProcess } from './lib/cpu-layout.js';

const SIZE = multusSize('PODIPAM_BENCH_MULTUS', { pods: 128, networks: 16, inFlight: 32, nodes: 3 });
const RUNS = Number(process.env.PODIPAM_BENCH_MULTUS_RUNS ?? 3);
const TARGET_MS = 20_000;
const SUBJECTS = (process.env.PODIPAM_BENCH_MULTUS_SUBJECTS ?? 'own,shared,warm,host-local').split(',');
/** `lean` (bench/native/multus-driver.c, posix_spawn) or `node` (child_process, as the e2e test). */
const DRIVER = process.env.PODIPAM_BENCH_MULTUS_DRIVER ?? 'lean';
/** The warm agents' --min-idle; default a node's share of the attachments (every ADD a hit). */
/** The agents' --realtime-priority (unset: ordinary priority). */
const AGENT_RT = process.env.PODIPAM_BENCH_MULTUS_AGENT_RT;
const WARM_MIN_IDLE = process.env.PODIPAM_BENCH_MULTUS_WARM_MIN_IDLE ? Number(process.env.PODIPAM_BENCH_MULTUS_WARM_MIN_IDLE) : undefined;
/** A directory for the agents' CPU profiles (node --cpu-prof); unset: none. */
const AGENT_PROF = process.env.PODIPAM_BENCH_MULTUS_AGENT_PROF;
/** Where the processes run (bench/lib/cpu-layout.ts): each layout its own etcd, agents and rounds. */
const LAYOUTS = cpuLayouts(process.env.PODIPAM_BENCH_MULTUS_LAYOUT ?? 'together,apart');

interface Subject {
  readonly name: string;
  readonly nodes: readonly MultusNode[];
  readonly pools: readonly MultusPool[];
  readonly warm: boolean;
  /** The reference plugin instead of podipam's shim. */
  readonly hostLocal?: boolean;
}

interface Round {
  readonly add: number;
  readonly del: number;
  readonly slowestPod: number;
  readonly tripsPerAttachment: number;
  readonly delTripsPerAttachment: number;
  /** Transactions that carried several ADDs / DELs, and the calls they carried. */
  readonly groups: { readonly adds: string; readonly dels: string };
  /** CPU ms per attachment of the ADD and DEL phases, by process kind. */
  readonly cpu: { readonly add: CpuSplit; readonly del: CpuSplit };
}

/** CPU ms of a phase: the driver with the plugins it waited for, the agents, the etcd members. */
interface CpuSplit {
  readonly plugins: number;
  readonly agents: number;
  readonly etcd: number;
}

function cpuNow(agents: readonly number[], etcd: readonly number[]): CpuSplit {
  const sum = (pids: readonly number[]): number => pids.reduce((t, p) => t + cpuMs(p), 0);
  return { plugins: cpuMs('children'), agents: sum(agents), etcd: sum(etcd) };
}

const perAttachment = (a: CpuSplit, b: CpuSplit, n: number): CpuSplit => ({
  plugins: (b.plugins - a.plugins) / n,
  agents: (b.agents - a.agents) / n,
  etcd: (b.etcd - a.etcd) / n,
});

const cpuText = (c: CpuSplit): string =>
  `${(c.plugins + c.agents + c.etcd).toFixed(2)} (plugins ${c.plugins.toFixed(2)}, agents ${c.agents.toFixed(2)}, etcd ${c.etcd.toFixed(2)})`;

const sec = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;

interface Counters {
  readonly trips: number;
  readonly groupCommits: number;
  readonly groupedAdds: number;
  readonly groupReleases: number;
  readonly groupedDels: number;
}

async function counters(nodes: readonly MultusNode[]): Promise<Counters> {
  const all = await Promise.all(nodes.map((n) => n.agent.status()));
  const sum = (f: (d: (typeof all)[number]['datastore']) => number | undefined): number => all.reduce((t, s) => t + (f(s.datastore) ?? 0), 0);
  return {
    trips: sum((d) => d.roundTrips),
    groupCommits: sum((d) => d.groupCommits),
    groupedAdds: sum((d) => d.groupedAdds),
    groupReleases: sum((d) => d.groupReleases),
    groupedDels: sum((d) => d.groupedDels),
  };
}

/**
 * Network `net` of pod `pod` through host-local: the network's /16 split among the nodes (node
 * n gets 10.(64+net).(16n).2 – 10.(64+net).(16n+15).254, up to 16 nodes), the node's own data
 * directory; the rest of the call (ids, netns, CNI_ARGS) as podipam's.
 */
function hostLocalCall(url: string, node: MultusNode, nodeIndex: number, pool: MultusPool, command: string, pod: number, net: number): PluginCall {
  const c = multusCall(url, node, pool, command, pod, net);
  const [a, b] = pool.cidr.split('.');
  const range = { subnet: pool.cidr, rangeStart: `${a}.${b}.${16 * nodeIndex}.2`, rangeEnd: `${a}.${b}.${16 * nodeIndex + 15}.254` };
  return {
    ...c,
    config: { cniVersion: '1.0.0', name: `net-${net}`, ipam: { type: 'host-local', ranges: [[range]], dataDir: join(node.dir, 'host-local') } },
    env: {},
  };
}

/** Address files host-local still keeps under the nodes' data directories (its `lock` and `last_reserved_ip.*` aside). */
function hostLocalLeft(nodes: readonly MultusNode[]): string[] {
  const left: string[] = [];
  for (const n of nodes) {
    const dir = join(n.dir, 'host-local');
    let nets: string[];
    try {
      nets = readdirSync(dir);
    } catch {
      continue;
    }
    for (const net of nets)
      for (const f of readdirSync(join(dir, net))) if (f !== 'lock' && !f.startsWith('last_reserved_ip')) left.push(`${n.name}/${net}/${f}`);
  }
  return left;
}

function mustBeClean(what: string, run: MultusRun): void {
  if (run.failures.length) throw new Error(`${what}: ${run.failures.length} calls failed, first: ${run.failures[0]}`);
}

/** Nothing in use and `ipam check` clean (the warm pool writes its pod records behind: up to 30 s). */
async function settledClean(url: string, what: string): Promise<void> {
  for (let i = 0; ; i++) {
    const left = leftHeld(url);
    const clean = left.allocated === 0 && left.check.startsWith('{') && JSON.stringify(JSON.parse(left.check)) === JSON.stringify({ leaks: [], problems: [] });
    if (clean) return;
    if (i >= 300) throw new Error(`${what}: after DEL still held ${left.allocated}, ipam check ${left.check}`);
    await sleep(100);
  }
}

type Call = (command: string, pod: number, net: number) => PluginCall;
type Runner = (call: Call, command: 'ADD' | 'DEL' | 'VERSION', plugin?: string) => Promise<MultusRun>;

/** The same schedule answered by the shim's VERSION (no agent, no datastore): the harness's and exec's own cost. */
async function floor(url: string, s: Subject, runner: Runner): Promise<number> {
  const r = await runner((_c, pod, net) => multusCall(url, s.nodes[pod % s.nodes.length]!, s.pools[net]!, 'VERSION', pod, net), 'VERSION');
  mustBeClean('VERSION floor', r);
  return r.ms;
}

/** Every warm node's idle queue back to `min` (refills, and DELs' addresses past their cooldown): bounded, 120 s. */
async function warmRefilled(s: Subject, min: number): Promise<void> {
  for (const n of s.nodes) await warmPoolFilled(n.agent, min, { families: ['ipv4'], what: `the warm pool of ${n.name}`, everyMs: 100, tries: 1200 });
}

async function round(url: string, s: Subject, runner: Runner): Promise<Round> {
  if (s.warm) await warmRefilled(s, WARM_MIN_IDLE ?? Math.ceil((SIZE.pods * SIZE.networks) / SIZE.nodes));
  const call: Call = s.hostLocal
    ? (command, pod, net) => hostLocalCall(url, s.nodes[pod % s.nodes.length]!, pod % s.nodes.length, s.pools[net]!, command, pod, net)
    : (command, pod, net) => multusCall(url, s.nodes[pod % s.nodes.length]!, s.warm ? 'warm' : s.pools[net]!, command, pod, net);
  const plugin = s.hostLocal ? HOST_LOCAL_BIN : SHIM_BIN;
  const c0 = await counters(s.nodes);
  const agentPids = s.nodes.map((n) => n.agent.child.pid!);
  const etcdPids = childPids('etcd');
  const u0 = cpuNow(agentPids, etcdPids);
  const add = await runner(call, 'ADD', plugin);
  const u1 = cpuNow(agentPids, etcdPids);
  mustBeClean(`${s.name} ADD`, add);
  const { problems, addresses } = checkAttachments(add, s.pools);
  if (problems.length) throw new Error(`${s.name}: ${problems.join('; ')}`);
  if (addresses !== SIZE.pods * SIZE.networks) throw new Error(`${s.name}: ${addresses} distinct addresses for ${SIZE.pods * SIZE.networks} attachments`);
  const c1 = await counters(s.nodes);
  const u2 = cpuNow(agentPids, etcdPids);
  const del = await runner(call, 'DEL', plugin);
  const u3 = cpuNow(agentPids, etcdPids);
  mustBeClean(`${s.name} DEL`, del);
  const c2 = await counters(s.nodes);
  if (s.hostLocal) {
    const left = hostLocalLeft(s.nodes);
    if (left.length) throw new Error(`host-local: after DEL still held ${left.length}, first ${left[0]}`);
  } else await settledClean(url, s.name);
  const n = SIZE.pods * SIZE.networks;
  return {
    add: add.ms,
    del: del.ms,
    slowestPod: Math.max(...add.podMs),
    cpu: { add: perAttachment(u0, u1, n), del: perAttachment(u2, u3, n) },
    tripsPerAttachment: s.hostLocal ? 0 : (c1.trips - c0.trips) / n,
    delTripsPerAttachment: s.hostLocal ? 0 : (c2.trips - c1.trips) / n,
    groups: s.hostLocal
      ? { adds: '-', dels: '-' }
      : {
          adds: `${c1.groupCommits - c0.groupCommits}/${c1.groupedAdds - c0.groupedAdds}`,
          dels: `${c2.groupReleases - c1.groupReleases}/${c2.groupedDels - c1.groupedDels}`,
        },
  };
}

export async function run(): Promise<readonly string[]> {
  requireShim();
  const summary: string[] = [];
  try {
    for (const layout of LAYOUTS) {
      // This process's CPUs are what the agents, the driver and the plugins it starts inherit.
      pinProcess(process.pid, layout.node);
      const head = `layout ${describeLayout(layout)}`;
      console.log(head);
      summary.push(head, ...(await runLayout(layout)));
    }
  } finally {
    pinProcess(process.pid, allCpus());
  }
  return summary;
}

async function runLayout(layout: CpuLayout): Promise<readonly string[]> {
  const dir = makeTempDir('bench-multus');
  const etcd = await startEtcd({ members: 3, ...(layout.datastore !== undefined ? { cpus: layout.datastore } : {}) });
  const nodes: MultusNode[] = [];
  const summary: string[] = [];
  try {
    checkAffinity('etcd member', childPids('etcd'), layout.datastore ?? layout.node);
    const url = etcd.url;
    const driver = DRIVER === 'node' ? undefined : buildMultusDriver(dir.path);
    const runner: Runner = driver
      ? async (call, command, plugin) => runMultusLean(driver, plugin ?? SHIM_BIN, dir.path, SIZE, call, command)
      : (call, command, plugin) => runMultusPods(SIZE, call, command, plugin);
    const own = await createMultusPools(url, SIZE.networks, false);
    const shared = await createMultusPools(url, SIZE.networks, true);
    const warmCidr = '10.48.0.0/14';
    const r = runCliSync(url, ['pool', 'create', 'pool-warm', '--cidr', warmCidr]);
    if (r.code !== 0) throw new Error(`pool create pool-warm: ${r.stderr}`);
    const warmPool: MultusPool = { name: 'pool-warm', cidr: warmCidr, prefix: parsePrefix(warmCidr) };
    const perNode = Math.ceil((SIZE.pods * SIZE.networks) / SIZE.nodes);
    const agentArgs = [...(AGENT_RT !== undefined ? ['--realtime-priority', AGENT_RT] : []), ...AS_SHIPPED.moreArgs];
    const nodeArgs = [
      ...AS_SHIPPED.nodeArgs,
      ...(AGENT_PROF ? ['--cpu-prof', '--cpu-prof-dir', AGENT_PROF] : []),
      ...words(process.env.PODIPAM_BENCH_MULTUS_AGENT_NODE_ARGS),
    ];
    const clusterNodes = await startMultusNodes(url, dir.path, SIZE.nodes, 'node', { agentArgs, nodeArgs, asShipped: true });
    nodes.push(...clusterNodes);
    const subjects: Subject[] = [];
    if (SUBJECTS.includes('own')) subjects.push({ name: 'own pools', nodes: clusterNodes, pools: own, warm: false });
    if (SUBJECTS.includes('shared')) subjects.push({ name: 'shared pool', nodes: clusterNodes, pools: shared, warm: false });
    if (SUBJECTS.includes('host-local')) subjects.push({ name: 'host-local', nodes: clusterNodes, pools: own, warm: false, hostLocal: true });
    if (SUBJECTS.includes('warm')) {
      const warmNodes = await startMultusNodes(url, dir.path, SIZE.nodes, 'warm', {
        warm: {
          pools: ['pool-warm'],
          minIdle: WARM_MIN_IDLE ?? perNode,
          capacity: 2 * Math.max(perNode, WARM_MIN_IDLE ?? 0),
        },
        agentArgs,
        nodeArgs,
        asShipped: true,
      });
      nodes.push(...warmNodes);
      subjects.push({ name: 'warm', nodes: warmNodes, pools: Array.from({ length: SIZE.networks }, () => warmPool), warm: true });
    }
    checkAffinity(
      'agent',
      nodes.map((n) => n.agent.child.pid!),
      layout.node,
    );
    console.log(
      `multus (${DRIVER} driver${AGENT_RT !== undefined ? `, agents at --realtime-priority ${AGENT_RT}` : ''}): ${SIZE.pods} pods × ${SIZE.networks} networks = ${SIZE.pods * SIZE.networks} attachments, ${SIZE.inFlight} pods in flight, ${SIZE.nodes} nodes (an agent each), 3-member etcd; ${RUNS} rounds, subjects alternating; target < ${TARGET_MS / 1000} s ADD wall`,
    );
    const rounds = new Map<string, Round[]>(subjects.map((s) => [s.name, []]));
    const floors: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      floors.push(await floor(url, subjects[0]!, runner));
      console.log(`  round ${i + 1} harness floor (shim VERSION, same schedule) ${sec(floors[i]!)}`);
      for (const s of i % 2 ? [...subjects].reverse() : subjects) {
        const x = await round(url, s, runner);
        rounds.get(s.name)!.push(x);
        console.log(
          `  round ${i + 1} ${s.name.padEnd(12)} ADD ${sec(x.add).padStart(8)}  DEL ${sec(x.del).padStart(8)}  slowest pod ${sec(x.slowestPod).padStart(8)}  ${x.tripsPerAttachment.toFixed(3)} ADD / ${x.delTripsPerAttachment.toFixed(3)} DEL round trips per attachment  groups (txns/calls) ADD ${x.groups.adds} DEL ${x.groups.dels}`,
        );
        console.log(`  round ${i + 1} ${s.name.padEnd(12)} CPU ms per attachment: ADD ${cpuText(x.cpu.add)}  DEL ${cpuText(x.cpu.del)}`);
      }
    }
    const head = `  ${''.padEnd(28)} ${subjects.map((s) => s.name.padStart(12)).join(' ')}`;
    console.log(`medians of ${RUNS} rounds:`);
    console.log(head);
    summary.push(head.trim());
    const line = (label: string, f: (x: Round) => number, fmt: (v: number) => string): void => {
      const text = `${label.padEnd(28)} ${subjects.map((s) => fmt(q(rounds.get(s.name)!.map(f), 0.5)).padStart(12)).join(' ')}`;
      console.log(`  ${text}`);
      summary.push(text);
    };
    line(`ADD wall (${SIZE.pods}×${SIZE.networks})`, (x) => x.add, sec);
    line(
      `ADD wall / ${TARGET_MS / 1000} s target`,
      (x) => x.add / TARGET_MS,
      (v) => `${v.toFixed(2)}x`,
    );
    line('slowest pod (16 ADDs)', (x) => x.slowestPod, sec);
    line('DEL wall', (x) => x.del, sec);
    line(
      'ADD round trips/attachment',
      (x) => x.tripsPerAttachment,
      (v) => v.toFixed(3),
    );
    line(
      'DEL round trips/attachment',
      (x) => x.delTripsPerAttachment,
      (v) => v.toFixed(3),
    );
    const ms2 = (v: number): string => `${v.toFixed(2)} ms`;
    line('ADD CPU/attachment, all', (x) => x.cpu.add.plugins + x.cpu.add.agents + x.cpu.add.etcd, ms2);
    line('  plugins (+ driver)', (x) => x.cpu.add.plugins, ms2);
    line('  agents', (x) => x.cpu.add.agents, ms2);
    line('  etcd members', (x) => x.cpu.add.etcd, ms2);
    line('DEL CPU/attachment, all', (x) => x.cpu.del.plugins + x.cpu.del.agents + x.cpu.del.etcd, ms2);
    const hl = rounds.get('host-local');
    if (hl) {
      // Per round, each subject over host-local in the same round (then the median of those ratios).
      const ratio = (label: string, f: (x: Round) => number): void => {
        const text = `${label.padEnd(28)} ${subjects
          .map((s) =>
            `${q(
              rounds.get(s.name)!.map((x, i) => f(x) / f(hl[i]!)),
              0.5,
            ).toFixed(2)}x`.padStart(12),
          )
          .join(' ')}`;
        console.log(`  ${text}`);
        summary.push(text);
      };
      ratio('ADD wall / host-local', (x) => x.add);
      ratio('DEL wall / host-local', (x) => x.del);
    }
    const fl = `harness floor (${DRIVER} driver, shim VERSION × ${SIZE.pods * SIZE.networks}): ${sec(q(floors, 0.5))}`;
    console.log(`  ${fl}`);
    summary.push(fl);
    const txnCost = Number(process.env.PODIPAM_BENCH_MULTUS_TXN_COST ?? 0);
    if (txnCost > 0) {
      const store = await openStore(url);
      try {
        for (const c of await etcdTxnCost(store, childPids('etcd'), txnCost)) {
          const text = `txn cost: ${c.shape.padEnd(26)} etcd ${c.etcdMs.toFixed(2)} ms/txn, client ${c.clientMs.toFixed(2)} ms/txn, wall ${c.wallMs.toFixed(2)} ms`;
          console.log(`  ${text}`);
          summary.push(text);
        }
      } finally {
        await store.close();
      }
    }
    if (process.env.PODIPAM_TRACE) {
      for (const n of nodes) writeFileSync(join(process.env.PODIPAM_BENCH_MULTUS_TRACE_DIR ?? '/tmp', `multus-trace-${n.name}.log`), n.agent.log());
    }
    return summary;
  } finally {
    for (const n of nodes) await n.agent.stop();
    await etcd.stop();
    dir.remove();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) for (const l of await run()) console.log(l);
