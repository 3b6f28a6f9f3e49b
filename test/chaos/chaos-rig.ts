/**
 * The partition rig: a 3-member etcd, each member in a network namespace of its own, and 3
 * nodes, each a namespace running `podipam agent` (a warm pool on one network, plain cluster
 * mode on another), all joined by a bridge (chaos-net.ts). Pods come and go on every node
 * (chaos-workload.ts: the native shim run inside the node) while a seeded schedule of faults
 * (chaos-schedule.ts) hits members and nodes; then every fault is healed, every pod DEL'd
 * (retried until it succeeds) and the agents stopped, and the whole history is judged
 * (history-checker.ts) with what etcd holds at the end and `podipam ipam check`.
 *
 * Networks: `chaos-warm` (the agent's warm pool over pool chaos-warm, 10.252.0.0/22 in /26
 * blocks) and `chaos-blocks` (cluster mode through the agent, pool chaos-blocks 10.253.0.0/27 in
 * /28 blocks: two blocks for three nodes, so one node always borrows addresses from another's
 * block and writers race on the same blocks). The shim's fallback is on: a pod on a node whose
 * agent is down runs the plugin itself (cluster mode straight to etcd; the warm network then
 * answers "try again later").
 *
 * `plant`: arms a planted bug (src/util/planted-bug.ts) in every agent and plugin, to prove
 * the checker catches it.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { randomBytes } from 'node:crypto';
import { ClusterIpam } from '../../src/cluster/index.js';
import { HANDLE_PREFIX } from '../../src/cluster/records/keys.js';
import { formatAddr, parseAddr } from '../../src/ip/addr.js';
import { parsePrefix, prefixContains } from '../../src/ip/prefix.js';
import { POD_RECORD_PREFIX } from '../../src/model/reserved-network.js';
import { openStore } from '../../src/store/index.js';
import type { PlantedBugName } from '../../src/util/planted-bug.js';
import { warmHandleNode } from '../../src/warm/warm-handle.js';
import { type RunningAgent, requireShim, startAgent } from '../helpers/agent.js';
import { type EtcdCluster, startEtcd } from '../helpers/etcd.js';
import { PODIPAM_BIN, runCliSync } from '../helpers/plugin.js';
import { requireCommand, requireExecutable, requireRoot } from '../helpers/prereq.js';
import { makeTempDir } from '../helpers/tmp.js';
import { type ChaosNet, createChaosNet } from './chaos-net.js';
import { type FaultKind, type ScheduledFault, faultSchedule, seededRandom } from './chaos-schedule.js';
import { type WorkloadNetwork, type WorkloadNode, Workload } from './chaos-workload.js';
import { type CheckReport, type FaultRecord, type FinalState, checkHistory, formatViolation } from './history-checker.js';

export interface ChaosOptions {
  readonly seed: number;
  /** Length of the fault schedule (the run takes about this plus set-up and the final checks). */
  readonly scheduleMs: number;
  readonly faultMs?: readonly [number, number];
  readonly settleMs?: readonly [number, number];
  /** At most this many faults, however long the schedule (see ScheduleSpec.maxFaults). */
  readonly maxFaults?: number;
  /** No faults at all (for the planted-bug run: concurrency alone must show it). */
  readonly noFaults?: boolean;
  readonly lanes?: number;
  /** Relative weights of the warm and the cluster network in the pods' choice. */
  readonly weights?: { readonly warm: number; readonly blocks: number };
  readonly plant?: PlantedBugName;
  readonly log?: (line: string) => void;
}

export interface ChaosResult {
  readonly seed: number;
  readonly faults: Readonly<Partial<Record<FaultKind, number>>>;
  readonly report: CheckReport;
  /** Each violation with its trace, ready to print. */
  readonly violations: readonly string[];
  /** Agents that exited without the rig killing them. */
  readonly unexpectedExits: readonly string[];
  /** DELs still failing when the rig gave up waiting (also 'unreleased' violations). */
  readonly undrained: number;
  /** The failed calls by kind, network and message (ids and numbers blanked), most frequent first: what the faults cost. */
  readonly failures: readonly { readonly what: string; readonly count: number }[];
  readonly ms: number;
}

const POOLS = [
  { name: 'chaos-warm', cidr: '10.252.0.0/22', blockSize: '26' },
  { name: 'chaos-blocks', cidr: '10.253.0.0/27', blockSize: '28' },
] as const;

interface RigNode extends WorkloadNode {
  readonly id: string;
  readonly args: readonly string[];
  agent: RunningAgent | undefined;
  /** Set while the rig itself has the agent down. */
  killedByRig: boolean;
}

/** Fails with the reason unless this machine can run the rig. */
export function requireChaosPrerequisites(): void {
  requireRoot('the partition rig (network namespaces, tc, nftables)');
  requireExecutable('/usr/bin/etcd');
  requireShim();
  requireCommand('ip', ['netns', 'list'], 'iproute2');
  requireCommand('tc', ['-V'], 'iproute2');
  requireCommand('nft', ['--version'], 'nftables');
}

export async function runChaos(o: ChaosOptions): Promise<ChaosResult> {
  requireChaosPrerequisites();
  const t0 = Date.now();
  const log = o.log ?? (() => {});
  const random = seededRandom(o.seed ^ 0x5eed);
  const tag = randomBytes(3).toString('hex');
  const tmp = makeTempDir('chaos');
  let net: ChaosNet | undefined;
  let etcd: EtcdCluster | undefined;
  const nodes: RigNode[] = [];
  const unexpectedExits: string[] = [];
  let workload: Workload | undefined;
  try {
    net = createChaosNet(tag, ['m0', 'm1', 'm2', 'n0', 'n1', 'n2']);
    const theNet = net;
    const members = [0, 1, 2].map((i) => theNet.host(`m${i}`));
    etcd = await startEtcd({ members: 3, hosts: members.map((h) => ({ netns: h.netns, ip: h.ip })) });
    const url = etcd.url;
    log(`etcd ${url}; observer ${net.observerIp}`);
    for (const p of POOLS) {
      const r = runCliSync(url, ['pool', 'create', p.name, '--cidr', p.cidr, '--block-size', p.blockSize]);
      if (r.code !== 0) throw new Error(`pool create ${p.name}: exit ${r.code}: ${r.stderr}`);
    }
    const hookEnv: Record<string, string> = o.plant ? { PODIPAM_TEST_HOOKS: '1', PODIPAM_PLANT_BUG: o.plant } : {};
    for (const i of [0, 1, 2]) {
      const host = net.host(`n${i}`);
      const dir = join(tmp.path, `n${i}`);
      mkdirSync(join(dir, 'cache'), { recursive: true });
      const name = `chaos-node-${i}`;
      const args = [
        '--node',
        name,
        '--datastore',
        url,
        '--data-dir',
        join(dir, 'data'),
        '--pools',
        'chaos-warm',
        '--min-idle',
        '4',
        '--max-idle',
        '8',
        '--capacity',
        '32',
        '--cooldown',
        '1s',
      ];
      nodes.push({
        id: `n${i}`,
        name,
        netns: host.netns,
        socket: join(dir, 'agent.sock'),
        cacheDir: join(dir, 'cache'),
        args,
        agent: undefined,
        killedByRig: false,
      });
    }
    const startNodeAgent = async (n: RigNode): Promise<void> => {
      const agent = await startAgent(n.socket, n.args, hookEnv, { netns: n.netns });
      n.agent = agent;
      n.killedByRig = false;
      void agent.exited.then((code) => {
        if (n.agent === agent && !n.killedByRig) unexpectedExits.push(`${n.name}: agent exited (${code}) on its own:\n${agent.log().slice(-2000)}`);
      });
    };
    await Promise.all(nodes.map(startNodeAgent));
    const ensureAgent = async (n: RigNode): Promise<void> => {
      for (let attempt = 1; n.agent === undefined || n.agent.child.exitCode !== null || n.agent.child.signalCode !== null; attempt++) {
        try {
          await startNodeAgent(n);
        } catch (e) {
          if (attempt >= 3) throw e;
          await sleep(1000);
        }
      }
    };

    const networks: WorkloadNetwork[] = [
      { name: 'chaos-warm', weight: o.weights?.warm ?? 1, ipam: (n) => ({ type: 'podipam', agent: n.socket }) },
      {
        name: 'chaos-blocks',
        weight: o.weights?.blocks ?? 1,
        ipam: (n) => ({ type: 'podipam', datastore: url, nodeName: n.name, pools: ['chaos-blocks'], cacheDir: n.cacheDir }),
      },
    ];
    const poolOf: Record<string, ReturnType<typeof parsePrefix>> = { 'chaos-warm': parsePrefix(POOLS[0].cidr), 'chaos-blocks': parsePrefix(POOLS[1].cidr) };
    workload = new Workload({
      nodes,
      networks,
      lanes: o.lanes ?? 3,
      holdMs: [50, 600],
      callTimeoutMs: 30_000,
      random,
      env: { PODIPAM_PLUGIN: PODIPAM_BIN, ...hookEnv },
    });
    workload.start();

    // The faults, one at a time.
    const faults: FaultRecord[] = [];
    const counts: Partial<Record<FaultKind, number>> = {};
    const schedule = o.noFaults
      ? []
      : faultSchedule({
          seed: o.seed,
          totalMs: o.scheduleMs,
          faultMs: o.faultMs ?? [2000, 5000],
          settleMs: o.settleMs ?? [1000, 2500],
          members: 3,
          nodes: 3,
          maxFaults: o.maxFaults,
        });
    if (o.noFaults) await sleep(o.scheduleMs);
    for (const f of schedule) {
      const rec = await inject(f, { net, etcd, nodes, startNodeAgent, ensureAgent });
      faults.push(rec);
      counts[f.kind] = (counts[f.kind] ?? 0) + 1;
      log(`fault ${rec.kind} ${rec.target} for ${(rec.end ?? Date.now()) - rec.start} ms; ${workload.calls.length} calls so far`);
      await sleep(f.settleMs);
    }

    // Heal, DEL everything, stop the agents (their write-behind flushed), then judge.
    await workload.stop();
    for (const h of net.hosts.keys()) net.heal(h);
    for (const m of etcd.members) m.resume();
    await Promise.all(nodes.map(ensureAgent));
    const undrained = await workload.drain(90_000);
    log(`drained: ${workload.calls.length} calls, ${undrained} DELs still failing`);
    for (const n of nodes) {
      n.killedByRig = true;
      await n.agent?.stop();
    }
    const final = await finalState(url);
    const report = checkHistory(workload.calls, [], faults, final, (network, address) => {
      const p = poolOf[network];
      return p !== undefined && prefixContains(p, parseAddr(address));
    });
    const failures = new Map<string, number>();
    for (const c of workload.calls) {
      if (c.ok) continue;
      const what = `${c.kind} ${c.network}: ${(c.error ?? '')
        .replace(/[0-9a-f]{12,}/g, 'ID')
        .replace(/\d+(\.\d+)*/g, 'N')
        .slice(0, 200)}`;
      failures.set(what, (failures.get(what) ?? 0) + 1);
    }
    return {
      seed: o.seed,
      faults: counts,
      report,
      violations: report.violations.map(formatViolation),
      unexpectedExits,
      undrained,
      failures: [...failures].sort((a, b) => b[1] - a[1]).map(([what, count]) => ({ what, count })),
      ms: Date.now() - t0,
    };
  } finally {
    // Bounded clean-up: a run that threw must not leave lanes, agents or members behind.
    workload?.abort();
    for (const n of nodes) n.killedByRig = true;
    await withinMs(10_000, Promise.all(nodes.map(async (n) => n.agent?.kill())));
    for (const m of etcd?.members ?? []) m.resume();
    await withinMs(10_000, etcd?.stop() ?? Promise.resolve());
    net?.remove();
    tmp.remove();
  }
}

/** Waits for `p`, at most `ms`. */
async function withinMs(ms: number, p: Promise<unknown>): Promise<void> {
  const timer = sleep(ms, undefined, { ref: false });
  await Promise.race([p.catch(() => {}), timer]);
}

interface Rig {
  readonly net: ChaosNet;
  readonly etcd: EtcdCluster;
  readonly nodes: RigNode[];
  readonly startNodeAgent: (n: RigNode) => Promise<void>;
  readonly ensureAgent: (n: RigNode) => Promise<void>;
}

/** Applies one fault, holds it for its time, heals it; its record (times on this process's clock). */
async function inject(f: ScheduledFault, rig: Rig): Promise<FaultRecord> {
  const { net, etcd } = rig;
  const node = rig.nodes[f.target]!;
  let memberIndex = f.target;
  if (f.kind === 'leader-isolate') memberIndex = await etcd.leader().catch(() => f.target);
  const member = `m${memberIndex}`;
  const start = Date.now();
  switch (f.kind) {
    case 'member-link-down':
      net.linkDown(member);
      break;
    case 'member-drop':
    case 'leader-isolate':
      net.drop(member, 'both');
      break;
    case 'member-one-way-out':
      net.drop(member, 'out');
      break;
    case 'member-one-way-in':
      net.drop(member, 'in');
      break;
    case 'member-slow':
      net.slow(member, 256);
      break;
    case 'member-pause':
      await etcd.members[memberIndex]!.pause();
      break;
    case 'node-link-down':
      net.linkDown(node.id);
      break;
    case 'node-drop':
      net.drop(node.id, 'both');
      break;
    case 'node-one-way-out':
      net.drop(node.id, 'out');
      break;
    case 'node-slow':
      net.slow(node.id, 256);
      break;
    case 'node-agent-kill-while-cut': {
      net.drop(node.id, 'both');
      await sleep(f.faultMs * 0.3);
      node.killedByRig = true;
      await node.agent?.kill();
      await sleep(f.faultMs * 0.3);
      // Restarted while still cut off; healed a moment later; ready once it answers.
      const restarted = rig.startNodeAgent(node).catch(() => rig.ensureAgent(node));
      await sleep(f.faultMs * 0.4);
      net.heal(node.id);
      await restarted;
      return { kind: f.kind, target: node.name, start, end: Date.now() };
    }
  }
  await sleep(f.faultMs);
  if (f.kind === 'member-pause') etcd.members[memberIndex]!.resume();
  else net.heal(f.kind.startsWith('node') ? node.id : member);
  return { kind: f.kind, target: f.kind.startsWith('node') ? node.name : `etcd ${member}`, start, end: Date.now() };
}

/** What etcd holds at the end: every handle with its addresses, the warm pod records, `ipam check`. */
async function finalState(url: string): Promise<FinalState> {
  const store = await openStore(url);
  try {
    const admin = new ClusterIpam(store);
    const handles: FinalState['handles'][number][] = [];
    for (const e of await store.list(HANDLE_PREFIX)) {
      const handle = e.key.slice(HANDLE_PREFIX.length);
      const got = (await admin.addressesOf(handle)) ?? [];
      handles.push({ handle, addresses: got.map((a) => formatAddr(a.addr)), warmStock: warmHandleNode(handle) !== undefined });
    }
    const podRecords = (await store.list(POD_RECORD_PREFIX)).map((e) => e.key);
    const r = runCliSync(url, ['ipam', 'check', '--json']);
    let check: FinalState['check'];
    try {
      const j = JSON.parse(r.stdout) as { leaks?: unknown[]; problems?: unknown[] };
      check = { leaks: j.leaks ?? [], problems: j.problems ?? [] };
    } catch {
      check = { leaks: [], problems: [`ipam check exit ${r.code}: ${r.stdout}${r.stderr}`] };
    }
    return { handles, podRecords, check };
  } finally {
    await store.close();
  }
}
