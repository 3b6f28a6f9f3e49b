/**
 * The node agent behind the native shim, side by side in one run with host-local and with the
 * per-pod Node.js plugin (and, for the record, bin/podipam forwarding to the agent — what a
 * shim written in JavaScript would cost):
 *
 *   local    sequential ADD then DEL of one container, PAIRS times, the subjects alternating so
 *            they share the machine's load: p50/p99 per call; CPU per call including the agent
 *            process's own CPU (from /proc/<pid>/stat); a BURST-pod burst at 32 in flight
 *   cluster  dual-stack cluster mode on SQLite and on 1-member etcd: the shim + agent vs the
 *            per-pod plugin — sequential p50/p99, the burst's wall time, and datastore round
 *            trips per pod (the agent's counter; the plugin's PODIPAM_STATS lines)
 *
 * Knobs: PODIPAM_BENCH_PAIRS (200), PODIPAM_BENCH_BURST (256), PODIPAM_BENCH_SETTLE_PAIRS (4000:
 * the lean comparison's "settled" rows come after that many more pairs through the agent),
 * PODIPAM_BENCH_IDLE_MS (default 0: none; N: "after idle" rows once the agent has idled N ms). Run alone:
 * `node dist/bench/agent.js` after a build; `… agent.js lean` only the posix_spawn comparison
 * with the floor (and the breakdown), `… agent.js breakdown` only where one ADD's time goes.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { AS_SHIPPED, type RunningAgent, SHIM_BIN, requireShim, startAgent } from '../test/helpers/agent.js';
import { startEtcd } from '../test/helpers/etcd.js';
import { HOST_LOCAL_BIN, PODIPAM_BIN, runCliSync } from '../test/helpers/plugin.js';
import { makeTempDir } from '../test/helpers/tmp.js';
import { tracedBreakdown } from './lib/traced-breakdown.js';
import { type LeanSubject, buildLeanDrivers, burstWalls, floorSubject, runLeanDriver, seqTimes } from './lib/lean-driver.js';
import { cpuMs, threadCpuMs } from './lib/proc-cpu.js';
import { BURST, IN_FLIGHT, PAIRS, type Subject, cniEnv, ms, q, ratio } from './lib/cni-subject.js';

/** Pairs the agent serves, unmeasured, before the "settled" rows of the lean comparison (PODIPAM_BENCH_SETTLE_PAIRS; 0: none). */
const SETTLE_PAIRS = Number(process.env.PODIPAM_BENCH_SETTLE_PAIRS ?? 4000);
/**
 * PODIPAM_BENCH_IDLE_MS (0: none): after the settled rows the agent idles that long, then the same
 * pairs again — what a node sees when pods come after a quiet spell (V8 collects in the idle
 * time, and throws away optimised code whose objects died: bench/results/idle-deopt.md).
 */
const IDLE_MS = Number(process.env.PODIPAM_BENCH_IDLE_MS ?? 0);
if (!Number.isInteger(IDLE_MS) || IDLE_MS < 0 || IDLE_MS > 3_600_000) {
  throw new Error(`PODIPAM_BENCH_IDLE_MS must be an integer 0-3600000 (ms), got ${JSON.stringify(process.env.PODIPAM_BENCH_IDLE_MS)}`);
}

function once(s: Subject, net: string, command: string, id: string): { ms: number; stderr: string } {
  const input = JSON.stringify({ cniVersion: '1.0.0', name: net, ipam: s.ipam });
  const t0 = performance.now();
  const r = spawnSync(s.bin, [], { env: cniEnv(s, command, id), input, encoding: 'utf8' });
  const t = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${s.name} ${command} ${id}: ${r.stdout}${r.stderr}`);
  return { ms: t, stderr: r.stderr };
}

function run1(s: Subject, net: string, command: string, id: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = require_spawn(s.bin, cniEnv(s, command, id));
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('close', (code: number) => (code === 0 ? resolve(err) : reject(new Error(`${s.name} ${command} ${id}: ${out}`))));
    child.stdin.end(JSON.stringify({ cniVersion: '1.0.0', name: net, ipam: s.ipam }));
  });
}

import { spawn } from 'node:child_process';
function require_spawn(bin: string, env: NodeJS.ProcessEnv) {
  return spawn(bin, [], { env, stdio: ['pipe', 'pipe', 'pipe'] });
}

interface Seq {
  add: number[];
  del: number[];
  cpu: number;
  trips: number;
}

/** Sequential ADD+DEL pairs, subjects alternating; CPU per call and round trips per call. */
function sequential(subjects: readonly Subject[], net: string, pairs: number): Map<string, Seq> {
  const out = new Map(subjects.map((s): [string, Seq] => [s.name, { add: [], del: [], cpu: 0, trips: 0 }]));
  for (let i = 0; i < pairs; i++) {
    const order = i % 2 ? subjects : [...subjects].reverse();
    for (const s of order) {
      const o = out.get(s.name)!;
      const c0 = cpuMs('children') + (s.agent ? cpuMs(s.agent.child.pid!) : 0);
      const a = once(s, net, 'ADD', `seq${i}`);
      const d = once(s, net, 'DEL', `seq${i}`);
      o.add.push(a.ms);
      o.del.push(d.ms);
      o.cpu += (cpuMs('children') + (s.agent ? cpuMs(s.agent.child.pid!) : 0) - c0) / (2 * pairs);
      o.trips += statTrips(a.stderr) + statTrips(d.stderr);
    }
  }
  return out;
}

function statTrips(stderr: string): number {
  let n = 0;
  for (const m of stderr.matchAll(/podipam-stats (\{.*\})/g)) n += (JSON.parse(m[1]!) as { roundTrips: number }).roundTrips;
  return n;
}

/** BURST ADDs (then DELs) with IN_FLIGHT at a time: wall ms and plugin-counted round trips. */
async function burst(s: Subject, net: string, command: string): Promise<{ ms: number; trips: number }> {
  let next = 0;
  let trips = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < BURST) {
        const t = statTrips(await run1(s, net, command, `burst${next++}`)); // not `trips += await …`: that reads trips before the await
        trips += t;
      }
    }),
  );
  return { ms: performance.now() - t0, trips };
}

function table(rows: string[], header: readonly string[], width = 24): (label: string, cells: readonly string[]) => void {
  const line = (label: string, cells: readonly string[]): void => {
    const text = `${label.padEnd(width)} ${cells.map((c) => c.padStart(12)).join(' ')}`;
    console.log(`  ${text}`);
    rows.push(text);
  };
  line('', header);
  return line;
}

async function localMode(dir: string, rows: string[]): Promise<void> {
  const agent = await startAgent(join(dir, 'local', 'agent.sock'), [], {}, AS_SHIPPED);
  try {
    const data = (n: string) => ({ dataDir: join(dir, n), ranges: [[{ subnet: '10.128.0.0/16' }]] });
    const shim: Subject = {
      name: 'shim+agent',
      bin: SHIM_BIN,
      ipam: { type: 'podipam', ...data('shim') },
      env: { PODIPAM_AGENT_SOCKET: agent.socket, PODIPAM_PLUGIN: '' },
      agent,
    };
    const hl: Subject = { name: 'host-local', bin: HOST_LOCAL_BIN, ipam: { type: 'host-local', ...data('hl') }, env: {} };
    const node: Subject = { name: 'per-pod node', bin: PODIPAM_BIN, ipam: { type: 'podipam', ...data('node') }, env: {} };
    const jsShim: Subject = { name: 'node forwarding', bin: PODIPAM_BIN, ipam: { type: 'podipam', agent: agent.socket, ...data('fwd') }, env: {}, agent };
    const subjects = [shim, hl, node, jsShim];
    console.log(`local mode: ${PAIRS} sequential ADD+DEL pairs (subjects alternating), ${BURST}-pod burst at ${IN_FLIGHT} in flight`);
    const seq = sequential(subjects, 'bench-local', PAIRS);
    const line = table(rows, [...subjects.map((s) => s.name), 'shim/h-l']);
    const cell = (f: (x: Seq) => number) => [...subjects.map((s) => ms(f(seq.get(s.name)!))), ratio(f(seq.get(shim.name)!), f(seq.get(hl.name)!))];
    line(
      'local ADD p50',
      cell((x) => q(x.add, 0.5)),
    );
    line(
      'local ADD p99',
      cell((x) => q(x.add, 0.99)),
    );
    line(
      'local DEL p50',
      cell((x) => q(x.del, 0.5)),
    );
    line(
      'local DEL p99',
      cell((x) => q(x.del, 0.99)),
    );
    line(
      'local CPU per call',
      cell((x) => x.cpu),
    );
    const wall: number[] = [];
    for (const s of [shim, hl, node]) {
      const a = await burst(s, 'bench-local-burst', 'ADD');
      await burst(s, 'bench-local-burst', 'DEL');
      wall.push(a.ms);
    }
    line(`local burst ${BURST} ADD wall`, [...wall.map(ms), '', ratio(wall[0]!, wall[1]!)]);
    await leanDriver(dir, agent, rows);
  } finally {
    await agent.stop();
  }
}

/**
 * The same comparison driven by bench/native/cni-driver.c (posix_spawn, as a runtime's exec
 * does, ~0.1 ms per call of harness) instead of Node's child_process (~1.5 ms per call, paid
 * by both subjects alike, which pulls every ratio towards 1), with the physical floor beside
 * them: bench/native/cni-floor.c, a static binary that reads the config and prints a result.
 * Prints each subject's overhead above the floor, shim/host-local and floor/host-local, and the
 * agent's footprint (idle RSS, CPU per 1,000 ADD+DEL pairs).
 */
async function leanDriver(dir: string, agent: RunningAgent, rows: string[]): Promise<void> {
  const drivers = buildLeanDrivers(dir);
  const { driver, floorBin } = drivers;
  const subjects: LeanSubject[] = [
    floorSubject(drivers),
    {
      name: 'shim+agent',
      bin: SHIM_BIN,
      ipam: { type: 'podipam', dataDir: join(dir, 'lean-shim'), ranges: [[{ subnet: '10.128.0.0/16' }]] },
      env: { PODIPAM_AGENT_SOCKET: agent.socket, PODIPAM_PLUGIN: '' },
    },
    { name: 'host-local', bin: HOST_LOCAL_BIN, ipam: { type: 'host-local', dataDir: join(dir, 'lean-hl'), ranges: [[{ subnet: '10.128.0.0/16' }]] }, env: {} },
  ];
  const runDriver = (args: string[], s: LeanSubject): string => runLeanDriver(drivers, args, s);
  const pid = agent.child.pid!;
  const rssIdle = rssMiB(pid);
  let agentCpu = 0;
  let shimAdds = 0;
  // `rounds` rounds of `per` sequential pairs, the subjects alternating: each one's ADD and DEL
  // times; `footprint`: the agent's CPU counts towards the footprint line (the first rounds only,
  // comparable with the runs before the settled rows).
  const sequential = (rounds: number, per: number, footprint: boolean): Map<string, { add: number[]; del: number[] }> => {
    const seq = new Map<string, { add: number[]; del: number[] }>(subjects.map((s) => [s.name, { add: [], del: [] }]));
    for (let round = 0; round < rounds; round++) {
      for (const s of round % 2 ? subjects : [...subjects].reverse()) {
        const c0 = threadCpuMs(pid);
        const t = seqTimes(runDriver(['seq', String(per)], s));
        if (footprint && s.name === 'shim+agent') {
          agentCpu += threadCpuMs(pid) - c0;
          shimAdds += t.add.length;
        }
        seq.get(s.name)!.add.push(...t.add);
        seq.get(s.name)!.del.push(...t.del);
      }
    }
    return seq;
  };
  const seq = sequential(4, Math.ceil(PAIRS / 4), true);
  console.log(`local mode, lean driver (posix_spawn): ${PAIRS} sequential pairs in 4 rounds, ${BURST}-pod burst at ${IN_FLIGHT} in flight`);
  const line = table(rows, ['floor', 'shim+agent', 'host-local', 'shim-floor', 'h-l-floor', 'shim/h-l', 'floor/h-l']);
  const percentiles = (prefix: string, sq: typeof seq): void => {
    const f = sq.get('floor')!;
    const a = sq.get('shim+agent')!;
    const h = sq.get('host-local')!;
    for (const [label, z, x, y] of [
      [`${prefix} ADD p50`, q(f.add, 0.5), q(a.add, 0.5), q(h.add, 0.5)],
      [`${prefix} ADD p99`, q(f.add, 0.99), q(a.add, 0.99), q(h.add, 0.99)],
      [`${prefix} DEL p50`, q(f.del, 0.5), q(a.del, 0.5), q(h.del, 0.5)],
      [`${prefix} DEL p99`, q(f.del, 0.99), q(a.del, 0.99), q(h.del, 0.99)],
    ] as const) {
      line(label, [ms(z), ms(x), ms(y), ms(x - z), ms(y - z), ratio(x, y), ratio(z, y)]);
    }
  };
  percentiles('lean', seq);
  const bursts = new Map<string, number[][]>(subjects.map((s) => [s.name, []]));
  for (let round = 0; round < 3; round++) {
    for (const s of round % 2 ? subjects : [...subjects].reverse()) {
      const w = burstWalls(runDriver(['burst', String(BURST), String(IN_FLIGHT)], s));
      bursts.get(s.name)!.push([w.add, w.del]);
    }
  }
  const med = (name: string, i: number): number =>
    q(
      bursts.get(name)!.map((b) => b[i]!),
      0.5,
    );
  for (const [label, i] of [
    [`lean burst ${BURST} ADD wall`, 0],
    [`lean burst ${BURST} DEL wall`, 1],
  ] as const) {
    const [z, x, y] = [med('floor', i), med('shim+agent', i), med('host-local', i)];
    line(label, [ms(z), ms(x), ms(y), ms(x - z), ms(y - z), ratio(x, y), ratio(z, y)]);
  }
  // The same rounds once the agent's code has settled: its first thousands of calls after a start
  // still see V8 compiling (bench/results/tail.md), so SETTLE_PAIRS more pairs, unmeasured, first.
  const rssAfter = rssMiB(pid); // before the settled rounds: comparable with the runs before them
  if (SETTLE_PAIRS > 0) {
    runDriver(
      ['seq', String(SETTLE_PAIRS)],
      subjects.find((s) => s.name === 'shim+agent')!,
    );
    console.log(`  the same ${PAIRS} pairs again after ${SETTLE_PAIRS} more (unmeasured) through the agent:`);
    percentiles('settled', sequential(4, Math.ceil(PAIRS / 4), false));
  }
  if (IDLE_MS > 0) {
    await sleep(IDLE_MS);
    console.log(`  the same ${PAIRS} pairs again after the agent idled ${(IDLE_MS / 1000).toFixed(1)} s:`);
    percentiles('after idle', sequential(4, Math.ceil(PAIRS / 4), false));
  }
  await breakdown(dir, driver, floorBin, rows);
  const footprint = `agent footprint: idle RSS ${rssIdle.toFixed(1)} MiB, after the bench ${rssAfter.toFixed(1)} MiB; agent CPU per 1,000 ADD+DEL pairs ${((agentCpu * 1000) / Math.max(1, shimAdds)).toFixed(0)} ms (host-local: no agent)`;
  console.log(`  ${footprint}`);
  rows.push(footprint);
}

/**
 * Where one ADD's time goes (bench/lib/traced-breakdown.ts): PAIRS/2 sequential pairs through
 * the shim to a local-mode agent of its own, both tracing.
 */
async function breakdown(dir: string, driver: string, floorBin: string, rows: string[]): Promise<void> {
  const agent = await startAgent(join(dir, 'traced', 'agent.sock'), [], { PODIPAM_TRACE: '1' }, AS_SHIPPED);
  try {
    const pairs = Math.ceil(PAIRS / 2);
    await tracedBreakdown({
      drivers: { driver, floorBin, dir },
      agent,
      name: 'bench-traced',
      ipam: { type: 'podipam', dataDir: join(dir, 'traced-data'), ranges: [[{ subnet: '10.128.0.0/16' }]] },
      pairs,
      title: `where one ADD's time goes (shim + agent, both tracing; ${pairs} sequential pairs; per segment; tail: the slowest 5 % of calls' mean minus the median):`,
      rows,
    });
  } finally {
    await agent.stop();
  }
}

/** Resident set of a process in MiB, from /proc/<pid>/status. */
function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

async function clusterMode(kind: 'sqlite' | 'etcd', dir: string, rows: string[]): Promise<void> {
  const etcd = kind === 'etcd' ? await startEtcd({ members: 1 }) : undefined;
  const url = etcd ? etcd.url : `sqlite:${join(dir, `cluster-${Date.now()}.db`)}`;
  let agent: RunningAgent | undefined;
  try {
    for (const [name, cidr] of [
      ['b-v4', '10.96.0.0/12'],
      ['b-v6', 'fd00:96::/104'],
    ] as const) {
      const r = runCliSync(url, ['pool', 'create', name, '--cidr', cidr]);
      if (r.code !== 0) throw new Error(r.stderr);
    }
    agent = await startAgent(join(dir, `cl-${kind}`, 'agent.sock'), ['--node', 'bench-a', '--datastore', url], {}, AS_SHIPPED);
    const shim: Subject = {
      name: 'shim+agent',
      bin: SHIM_BIN,
      ipam: { type: 'podipam', datastore: url, nodeName: 'bench-a' },
      env: { PODIPAM_AGENT_SOCKET: agent.socket, PODIPAM_PLUGIN: '' },
      agent,
    };
    const node: Subject = {
      name: 'per-pod node',
      bin: PODIPAM_BIN,
      ipam: { type: 'podipam', datastore: url, nodeName: 'bench-b', cacheDir: join(dir, `cache-${kind}`) },
      env: { PODIPAM_STATS: '1' },
    };
    const pairs = Math.max(20, Math.floor(PAIRS / 4));
    console.log(`cluster mode on ${kind}: ${pairs} sequential ADD+DEL pairs, ${BURST}-pod burst at ${IN_FLIGHT} in flight (dual-stack)`);
    const trips0 = (await agent.status()).datastore.roundTrips;
    const seq = sequential([shim, node], `bench-${kind}`, pairs);
    const shimSeqTrips = (await agent.status()).datastore.roundTrips - trips0;
    const line = table(rows, ['shim+agent', 'per-pod node', 'ratio']);
    const s = seq.get(shim.name)!;
    const n = seq.get(node.name)!;
    line(`${kind} ADD p50`, [ms(q(s.add, 0.5)), ms(q(n.add, 0.5)), ratio(q(s.add, 0.5), q(n.add, 0.5))]);
    line(`${kind} ADD p99`, [ms(q(s.add, 0.99)), ms(q(n.add, 0.99)), ratio(q(s.add, 0.99), q(n.add, 0.99))]);
    line(`${kind} DEL p50`, [ms(q(s.del, 0.5)), ms(q(n.del, 0.5)), ratio(q(s.del, 0.5), q(n.del, 0.5))]);
    line(`${kind} CPU per call`, [ms(s.cpu), ms(n.cpu), ratio(s.cpu, n.cpu)]);
    line(`${kind} seq trips per call`, [(shimSeqTrips / (2 * pairs)).toFixed(2), (n.trips / (2 * pairs)).toFixed(2), '']);
    const t1 = (await agent.status()).datastore.roundTrips;
    const g1 = (await agent.status()).datastore;
    const sa = await burst(shim, `bench-${kind}-burst`, 'ADD');
    const t2 = (await agent.status()).datastore.roundTrips;
    const na = await burst(node, `bench-${kind}-burst`, 'ADD');
    await burst(shim, `bench-${kind}-burst`, 'DEL');
    await burst(node, `bench-${kind}-burst`, 'DEL');
    const g2 = (await agent.status()).datastore;
    line(`${kind} burst ${BURST} ADD wall`, [ms(sa.ms), ms(na.ms), ratio(sa.ms, na.ms)]);
    line(`${kind} burst trips per ADD`, [((t2 - t1) / BURST).toFixed(2), (na.trips / BURST).toFixed(2), '']);
    line(`${kind} burst group commits`, [`${g2.groupCommits - g1.groupCommits} (${g2.groupedAdds - g1.groupedAdds} ADDs)`, '-', '']);
  } finally {
    await agent?.stop();
    await etcd?.stop();
  }
}

/** Only the lean-driver comparison (floor, shim + agent, host-local): `node dist/bench/agent.js lean`. */
export async function runLean(): Promise<string[]> {
  requireShim();
  const dir = makeTempDir('bench-agent-lean');
  const agent = await startAgent(join(dir.path, 'lean', 'agent.sock'), [], {}, AS_SHIPPED);
  const rows: string[] = [];
  try {
    await leanDriver(dir.path, agent, rows);
    return rows;
  } finally {
    await agent.stop();
    dir.remove();
  }
}

export async function run(): Promise<string[]> {
  requireShim();
  const dir = makeTempDir('bench-agent');
  const rows: string[] = [];
  try {
    await localMode(dir.path, rows);
    await clusterMode('sqlite', dir.path, rows);
    await clusterMode('etcd', dir.path, rows);
    const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
    rows.push(`load average at the end: ${load}`);
    return rows;
  } finally {
    dir.remove();
  }
}

/** Only the breakdown of one ADD (bench/lib/call-breakdown.ts): `node dist/bench/agent.js breakdown`. */
export async function runBreakdown(): Promise<string[]> {
  requireShim();
  const dir = makeTempDir('bench-agent-breakdown');
  const rows: string[] = [];
  try {
    const { driver, floorBin } = buildLeanDrivers(dir.path);
    await breakdown(dir.path, driver, floorBin, rows);
    return rows;
  } finally {
    dir.remove();
  }
}

const commands: Record<string, () => Promise<string[]>> = { lean: runLean, breakdown: runBreakdown };
if (process.argv[1] === fileURLToPath(import.meta.url)) await (commands[process.argv[2] ?? ''] ?? run)();
