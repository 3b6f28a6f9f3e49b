/**
 * The warm-pool agent's own cost per call, one build against another, measured so that a few
 * per cent show through a noisy machine: two agents run at once — A from
 * PODIPAM_BENCH_BASELINE_DIST (a dist/ of main before the change; this dist/ again without it,
 * an A/A run that shows the method's own spread), B from this dist/ — each on a SQLite datastore
 * and a data directory of its own, dual-stack, its idle addresses preloaded, as shipped (the
 * warm-up, optimising during it only). A C client (bench/native/agent-ab.c) makes each call as
 * the shim does, without the exec — connect, one framed request, the answer read — alternating
 * pair by pair between the agents with a sleep before each call, so the agent is as idle between
 * calls as on a node, and both see the machine at the same moments. Each round starts both
 * agents afresh; the figure is each round's B/A ratio of the medians, and their median.
 * A one-off A/B tool (bench/tools/: not one of `npm run bench`'s modules).
 *
 *   [PODIPAM_BENCH_BASELINE_DIST=/path/to/main/dist] node dist/bench/tools/agent-ab.js [pairs] [rounds] [gap_us]
 *
 * PODIPAM_BENCH_AB_DATASTORE: `sqlite` (default: a file per agent) or `etcd` (a 1-member etcd
 * started for the run, its data on /dev/shm, shared by both agents: the etcd client's code on
 * the calls' path in cluster mode, on the refills and write-behind in warm mode).
 * PODIPAM_BENCH_AB_MODE: `warm` (default), `local` (the calls name a local range and data
 * directory of each agent's own: local mode through the same agents) or `cluster` (the calls
 * name each agent's datastore: cluster mode; every ADD and DEL then waits for a SQLite commit's
 * fsync, so TMPDIR=/dev/shm shows the agents' own work through less of the disk's noise). PODIPAM_BENCH_AB_ARGS_A / _B: more agent flags for one side, space-separated (e.g. B
 * `--optimize always`: the same build with V8 optimising throughout); PODIPAM_BENCH_AB_NODE_ARGS:
 * Node.js flags for both (e.g. `--perf-basic-prof` for a profile of both agents with perf).
 * PODIPAM_BENCH_AB_START_LOAD=N: N busy loops (`sh`) run while each agent starts, as on a node
 * busy starting up, and are stopped before the calls (the warm-up then gets fewer rounds).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ClusterIpam } from '../../src/cluster/service/index.js';
import { openStore } from '../../src/store/index.js';
import { callAgent } from '../../src/wire/agent-client.js';
import { encodeRequest } from '../../src/wire/frame.js';
import { makeTempDir } from '../../test/helpers/tmp.js';
import { words } from '../../test/helpers/agent.js';
import { buildNative } from '../lib/build-native.js';
import { startEtcd } from '../../test/helpers/etcd.js';

const pairs = Number(process.argv[2] ?? 1500);
const rounds = Number(process.argv[3] ?? 3);
const gapUs = Number(process.argv[4] ?? 1000);
/** Pairs of each round not counted: the agents' first calls after their start. */
const SKIP = 200;
if (!(Number.isInteger(pairs) && pairs > SKIP && pairs <= 20_000))
  throw new Error(`pairs must be an integer from ${SKIP + 1} to 20000: got ${process.argv[2]}`);
if (!(Number.isInteger(rounds) && rounds >= 1 && rounds <= 20)) throw new Error(`rounds must be an integer from 1 to 20: got ${process.argv[3]}`);
if (!(Number.isInteger(gapUs) && gapUs >= 0 && gapUs <= 100_000)) throw new Error(`gap_us must be an integer from 0 to 100000: got ${process.argv[4]}`);

const thisDist = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const baseline = process.env['PODIPAM_BENCH_BASELINE_DIST'];
const distA = baseline ? resolve(baseline) : thisDist;
for (const d of [distA, thisDist]) if (!existsSync(join(d, 'src/main.js'))) throw new Error(`${d}/src/main.js is missing: not a built dist/`);

const dir = makeTempDir('agent-ab');
const client = buildNative('agent-ab.c', join(dir.path, 'agent-ab'));
const MIN_IDLE = 64;
const MODE = process.env['PODIPAM_BENCH_AB_MODE'] ?? 'warm';
if (MODE !== 'warm' && MODE !== 'local' && MODE !== 'cluster') throw new Error(`PODIPAM_BENCH_AB_MODE must be warm, local or cluster: got ${MODE}`);
const DATASTORE = process.env['PODIPAM_BENCH_AB_DATASTORE'] ?? 'sqlite';
if (DATASTORE !== 'sqlite' && DATASTORE !== 'etcd') throw new Error(`PODIPAM_BENCH_AB_DATASTORE must be sqlite or etcd: got ${DATASTORE}`);
const etcd = DATASTORE === 'etcd' ? await startEtcd({ members: 1 }) : undefined;
/** Pools made on the shared etcd already (each agent's SQLite file gets its own). */
let etcdPools = false;
const NODE_ARGS = words(process.env['PODIPAM_BENCH_AB_NODE_ARGS']);
const MORE_ARGS: Record<string, readonly string[]> = { a: words(process.env['PODIPAM_BENCH_AB_ARGS_A']), b: words(process.env['PODIPAM_BENCH_AB_ARGS_B']) };
/** Busy loops running while each agent starts (its warm-up on a loaded node), stopped before the calls. */
const START_LOAD = Number(process.env['PODIPAM_BENCH_AB_START_LOAD'] ?? 0);
if (!(Number.isInteger(START_LOAD) && START_LOAD >= 0 && START_LOAD <= 8))
  throw new Error(`PODIPAM_BENCH_AB_START_LOAD must be an integer from 0 to 8: got ${process.env['PODIPAM_BENCH_AB_START_LOAD']}`);

interface Agent {
  readonly socket: string;
  /** Its datastore (and node name), which cluster-mode calls name. */
  readonly url: string;
  readonly node: string;
  readonly child: ChildProcess;
  readonly log: () => string;
  /** Its warm-up's rounds (status), shown with each round's figures. */
  readonly warmUpRounds: number | undefined;
}

/** Agent `name` of `dist` on a datastore of its own, preloaded. */
async function startAgent(dist: string, name: string, round: number): Promise<Agent> {
  const home = join(dir.path, `${name}${round}`);
  const url = etcd?.url ?? `sqlite:${home}-ds.db`;
  if (!etcd || !etcdPools) {
    const admin = new ClusterIpam(await openStore(url));
    await admin.createPool({ name: 'v4', cidr: '10.64.0.0/16' });
    await admin.createPool({ name: 'v6', cidr: 'fd00:64::/64' });
    await admin.store.close();
    etcdPools = etcd !== undefined;
  }
  const socket = `${home}.sock`;
  // On the shared etcd a node of its own each round (its data directory is new: the node's records must be too).
  const node = etcd ? `ab-${name}${round}` : `ab-${name}`;
  const args = ['agent', '--socket', socket, '--node', node, '--datastore', url, '--data-dir', home, '--metrics-listen', 'off', '--no-masquerade'];
  const pool = ['--min-idle', String(MIN_IDLE), '--max-idle', '256', '--capacity', '1024', '--cooldown', '1s'];
  const load = Array.from({ length: START_LOAD }, () => spawn('sh', ['-c', 'while :; do :; done'], { stdio: 'ignore' }));
  const child = spawn(process.execPath, [...NODE_ARGS, join(dist, 'src/main.js'), ...args, ...pool, ...(MORE_ARGS[name] ?? [])], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const fail = (why: string): Error => {
    child.kill('SIGKILL');
    return new Error(`agent ${name} (${dist}) ${why}: ${stderr}`);
  };
  let warmUpRounds: number | undefined;
  try {
    warmUpRounds = await untilReady();
  } finally {
    for (const l of load) l.kill('SIGKILL');
  }
  return { socket, url, node, child, log: () => stderr, warmUpRounds };

  async function untilReady(): Promise<number | undefined> {
    for (let i = 0; ; i++) {
      if (child.exitCode !== null || child.signalCode !== null) throw fail('exited');
      try {
        const st = JSON.parse((await callAgent(socket, { kind: 'status' }, { connectTimeoutMs: 500, answerTimeoutMs: 5000 })).body.toString('utf8')) as {
          warmPool?: { ready: boolean; pools: Record<string, { idle: number }> };
          warmUp?: { rounds: number };
        };
        const w = st.warmPool;
        if (w?.ready && (w.pools.ipv4?.idle ?? 0) >= MIN_IDLE && (w.pools.ipv6?.idle ?? 0) >= MIN_IDLE) return st.warmUp?.rounds;
      } catch {
        /* not listening yet */
      }
      if (i > 600) throw fail(`not ready with ${MIN_IDLE} idle addresses in 30 s`);
      await new Promise((w) => setTimeout(w, 50));
    }
  }
}

/** ADD, DEL, ADD, … of `pairs` pods to agent `ag`'s network, as the client reads them. */
function framesFile(ag: Agent, path: string): string {
  const ipam =
    MODE === 'local'
      ? { type: 'podipam', ranges: [[{ subnet: '10.70.0.0/16' }]], dataDir: `${path}.local` }
      : MODE === 'cluster'
        ? { type: 'podipam', agent: ag.socket, datastore: ag.url, nodeName: ag.node }
        : { type: 'podipam', agent: ag.socket };
  const conf = Buffer.from(JSON.stringify({ cniVersion: '1.0.0', name: 'abnet', type: 'bridge', ipam }));
  const parts: Buffer[] = [];
  for (let i = 0; i < pairs; i++) {
    for (const verb of ['ADD', 'DEL']) {
      const env = {
        CNI_COMMAND: verb,
        CNI_CONTAINERID: `ab${String(i).padStart(6, '0')}`,
        CNI_NETNS: '/var/run/netns/ab',
        CNI_IFNAME: 'eth0',
        CNI_PATH: '/opt/cni/bin',
        CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=p${i};K8S_POD_UID=uid-${i}`,
      };
      const frame = encodeRequest({ kind: 'cni', call: { env, stdin: conf } });
      const len = Buffer.alloc(4);
      len.writeUInt32LE(frame.length);
      parts.push(len, frame);
    }
  }
  writeFileSync(path, Buffer.concat(parts));
  return path;
}

/** Runs the client to its end: its exit status and output. */
function runClient(args: readonly string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(client, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  return new Promise((done) => child.on('close', (status) => done({ status, stdout, stderr })));
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

console.log(`agent-ab: A ${distA}${baseline ? '' : ' (no PODIPAM_BENCH_BASELINE_DIST: A/A)'}, B ${thisDist}`);
console.log(
  `${pairs} pairs per round (the first ${SKIP} not counted), ${gapUs} µs before each call, ${rounds} rounds, warm-pool agents on ${DATASTORE}, dual-stack, calls in ${MODE} mode`,
);
console.log('round    A ADD p50   B ADD p50   B/A ADD    A DEL p50   B DEL p50   B/A DEL   warm-up rounds A/B');
const ratios: { add: number; del: number }[] = [];
try {
  for (let r = 1; r <= rounds; r++) {
    const a = await startAgent(distA, 'a', r);
    const b = await startAgent(thisDist, 'b', r).catch((e: unknown) => {
      a.child.kill('SIGKILL');
      throw e;
    });
    try {
      // Not spawnSync: this process keeps reading the agents' logs meanwhile.
      const out = await runClient([
        a.socket,
        framesFile(a, join(dir.path, `a${r}.bin`)),
        b.socket,
        framesFile(b, join(dir.path, `b${r}.bin`)),
        String(gapUs),
        String(SKIP),
      ]);
      if (out.status !== 0) throw new Error(`agent-ab client failed (${out.status}): ${out.stderr}\nA: ${a.log()}\nB: ${b.log()}`);
      const rows = out.stdout
        .trim()
        .split('\n')
        .map((l) => l.split(' ').map(Number));
      const [aAdd, aDel, bAdd, bDel] = [0, 1, 2, 3].map((c) => median(rows.map((row) => row[c]!)) / 1000) as [number, number, number, number];
      ratios.push({ add: bAdd / aAdd, del: bDel / aDel });
      const ms = (x: number): string => `${x.toFixed(3)} ms`.padStart(12);
      const x = (v: number): string => `${v.toFixed(3)}x`.padStart(10);
      console.log(
        `${String(r).padEnd(5)}${ms(aAdd)}${ms(bAdd)}${x(bAdd / aAdd)}${ms(aDel)}${ms(bDel)}${x(bDel / aDel)}   ${a.warmUpRounds ?? '-'}/${b.warmUpRounds ?? '-'}`,
      );
    } finally {
      for (const ag of [a, b]) ag.child.kill('SIGTERM');
      await Promise.all(
        [a, b].map((ag) => new Promise((w) => (ag.child.exitCode !== null || ag.child.signalCode !== null ? w(undefined) : ag.child.once('exit', w)))),
      );
    }
  }
  console.log(`median of the rounds: B/A ADD ${median(ratios.map((q) => q.add)).toFixed(3)}x, DEL ${median(ratios.map((q) => q.del)).toFixed(3)}x`);
} finally {
  await etcd?.stop();
  dir.remove();
}
