/**
 * Pod starts under the real runtime: Debian's containerd + runc driven over CRI as kubelet does
 * (test/helpers/containerd.ts), `PODIPAM_BENCH_CRI_PODS` (64) sandboxes started at once, then
 * stopped and removed, `PODIPAM_BENCH_CRI_ROUNDS` (3) rounds per subject, subjects interleaved
 * round by round in one containerd (its conflist swapped between rounds) so that machine noise
 * hits all alike:
 *   host-local       bridge + Debian's host-local
 *   agent local      bridge + the shim → `podipam agent`, host-local's layout (ranges)
 *   agent cluster    bridge + the shim → `podipam agent`, cluster blocks on SQLite
 *   agent warm       bridge + the shim → `podipam agent` with a warm pool (its addresses from the
 *                    same SQLite datastore, under a node name of its own; as the warm bench runs it)
 * Prints per subject the RunPodSandbox p50, p90 and p99 over every round's sandboxes (the
 * runtime's whole work: netns, runc, the CNI chain) with p50 and p99 over host-local's, and, for
 * podipam, the agent's own ADD p50/p99 over the run (`agent status`, its last 2,048 calls: every
 * ADD of the run up to 32 rounds of 64) — measured while runc and containerd compete for the CPU —
 * and the disk's own fsync times while the cluster agent's sandboxes start (below). The aim: podipam's p50 and p99 at most host-local's, the agent's ADD p99 under 5 ms. Run alone: `node dist/bench/index.js cri`. Knobs (below):
 * PODIPAM_BENCH_CRI_PODS, _ROUNDS, _TRACE, _AGENT_NICE, _AGENT_SLICE_US, _AGENT_RT, _FSYNC_PROBE_MS.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startContainerd } from '../test/helpers/containerd.js';
import { criErrorText } from '../test/helpers/cri-client.js';
import { type RunningAgent, SHIM_BIN, requireShim, startAgent, AS_SHIPPED, warmPoolFilled } from '../test/helpers/agent.js';
import { BRIDGE_BIN, HOST_LOCAL_BIN, runCliSync } from '../test/helpers/plugin.js';
import { makeTempDir } from '../test/helpers/tmp.js';
import { buildNative } from './lib/build-native.js';
import { ms, q, ratio } from './lib/cni-subject.js';
import { type FsyncProbe, startFsyncProbe } from './lib/fsync-probe.js';

const PODS = Number(process.env.PODIPAM_BENCH_CRI_PODS ?? 64);
const ROUNDS = Number(process.env.PODIPAM_BENCH_CRI_ROUNDS ?? 3);
/** The agents' ADD p99 the bench aims under, while the runtime competes for the CPU. */
const AGENT_ADD_P99_AIM_MS = 5;
/** `PODIPAM_BENCH_CRI_TRACE=PREFIX`: the agents run with PODIPAM_TRACE=1, their trace lines go to PREFIX.local / PREFIX.cluster / PREFIX.warm. */
const TRACE = process.env.PODIPAM_BENCH_CRI_TRACE;
const agentEnv = TRACE ? { PODIPAM_TRACE: '1' } : {};
/**
 * `PODIPAM_BENCH_CRI_AGENT_NICE=-10`: the agents run at that nice value — what a CPU request in
 * the agent's DaemonSet buys it on a busy node (a larger CPU weight than the runtime's children),
 * here where the bench, containerd, its shims and runc share two cores.
 */
const AGENT_NICE = process.env.PODIPAM_BENCH_CRI_AGENT_NICE;
/**
 * `PODIPAM_BENCH_CRI_AGENT_SLICE_US=100`: the agents ask the scheduler (EEVDF, Linux >= 6.12) for
 * that time slice (bench/native/set-slice.c, sched_setattr's sched_runtime for SCHED_OTHER) — same
 * nice value and CPU share, an earlier deadline when they wake: no privilege needed.
 */
const AGENT_SLICE_US = process.env.PODIPAM_BENCH_CRI_AGENT_SLICE_US;
/**
 * `PODIPAM_BENCH_CRI_AGENT_RT` (default 1, as the DaemonSet and the systemd unit run the agent):
 * the agents run with `--realtime-priority N` (every thread under SCHED_RR, native/sched.c): a
 * waking agent preempts every ordinary task at once, so its ADDs do not wait behind containerd's,
 * runc's and the bench's work for a CPU. `off`: ordinary priority (what an agent started by hand
 * without the flag gets).
 */
const AGENT_RT_KNOB = process.env.PODIPAM_BENCH_CRI_AGENT_RT ?? '1';
const AGENT_RT = AGENT_RT_KNOB === 'off' ? undefined : AGENT_RT_KNOB;
/**
 * `PODIPAM_BENCH_CRI_FSYNC_PROBE_MS` (default 50; 0: off): while the cluster agent's sandboxes
 * start (its rounds' RunPodSandbox calls in flight), a probe (bench/lib/fsync-probe.ts) rewrites
 * a page beside the SQLite datastore and fsyncs it every that many ms: what one durable commit
 * costs on the disk meanwhile. The cluster agent's ADD commits SQLite's WAL with fsync
 * (synchronous=FULL): each waits for at least one such fsync (its own or its group's).
 */
const FSYNC_PROBE_MS = Number(process.env.PODIPAM_BENCH_CRI_FSYNC_PROBE_MS ?? 50);
if (!Number.isInteger(FSYNC_PROBE_MS) || FSYNC_PROBE_MS < 0 || FSYNC_PROBE_MS > 10_000) {
  throw new Error(
    `PODIPAM_BENCH_CRI_FSYNC_PROBE_MS must be 0 (off) or an integer 1-10000 (ms), got ${JSON.stringify(process.env.PODIPAM_BENCH_CRI_FSYNC_PROBE_MS)}`,
  );
}
const AGENT_PRIORITY = AGENT_RT === undefined ? 'at ordinary priority' : `at --realtime-priority ${AGENT_RT}`;

interface CriSubject {
  readonly name: string;
  readonly ipam: Record<string, unknown>;
  readonly agent?: RunningAgent;
  readonly runMs: number[];
}

export async function run(): Promise<readonly string[]> {
  requireShim();
  const dir = makeTempDir('bench-cri');
  const url = `sqlite:${join(dir.path, 'ds.db')}`;
  const ctd = await startContainerd({ bridge: BRIDGE_BIN, loopback: '/usr/lib/cni/loopback', 'host-local': HOST_LOCAL_BIN, podipam: SHIM_BIN });
  const agents: RunningAgent[] = [];
  let probe: FsyncProbe | undefined;
  try {
    // The bridges get no gateway address (isGateway false): a round's sandboxes may span blocks (gateways).
    const r = runCliSync(url, ['pool', 'create', 'bench', '--cidr', '10.238.0.0/20', '--block-size', '24']);
    if (r.code !== 0) throw new Error(`pool create: ${r.stderr}`);
    // One agent per podipam subject, so that each one's ADD latencies are its own.
    const socket = join(dir.path, 'run', 'agent-local.sock');
    const rt = AGENT_RT !== undefined ? ['--realtime-priority', AGENT_RT] : [];
    const agent = await startAgent(socket, ['--node', 'bench-node', '--datastore', url, ...rt], agentEnv, AS_SHIPPED);
    agents.push(agent);
    const socket2 = join(dir.path, 'run', 'agent-cluster.sock');
    const agent2 = await startAgent(socket2, ['--node', 'bench-node', '--datastore', url, ...rt], agentEnv, AS_SHIPPED);
    agents.push(agent2);
    // The warm pool's agent: a node of its own (its warm handles and the cluster agent's blocks
    // apart); its ADD commits the pod's row to its resource DB without an fsync (docs/agent.md).
    const socket3 = join(dir.path, 'run', 'agent-warm.sock');
    const warmPool = [
      '--data-dir',
      join(dir.path, 'warm'),
      '--min-idle',
      String(PODS),
      '--max-idle',
      String(4 * PODS),
      '--capacity',
      String(16 * PODS),
      '--cooldown',
      '1s',
    ];
    const agent3 = await startAgent(socket3, ['--node', 'bench-node-warm', '--datastore', url, ...warmPool, ...rt], agentEnv, AS_SHIPPED);
    agents.push(agent3);
    if (AGENT_NICE !== undefined) {
      for (const a of agents) {
        const rn = spawnSync('renice', ['-n', AGENT_NICE, '-p', String(a.child.pid)], { encoding: 'utf8' });
        if (rn.status !== 0) throw new Error(`renice ${AGENT_NICE} agent ${a.child.pid}: ${rn.stderr}`);
      }
    }
    if (AGENT_RT !== undefined) {
      for (const a of agents) {
        for (let i = 0; i < 100 && !a.log().includes('real-time scheduling on'); i++) await sleep(50);
        if (!a.log().includes('real-time scheduling on')) throw new Error(`agent ${a.child.pid} did not turn real-time scheduling on:\n${a.log()}`);
      }
    }
    if (AGENT_SLICE_US !== undefined) {
      const tool = buildNative('set-slice.c', join(dir.path, 'set-slice'));
      for (const a of agents) {
        const r = spawnSync(tool, [String(a.child.pid), String(Number(AGENT_SLICE_US) * 1000)], { encoding: 'utf8' });
        if (r.status !== 0) throw new Error(`set-slice ${AGENT_SLICE_US} us agent ${a.child.pid}: ${r.stderr}`);
      }
    }
    const subjects: CriSubject[] = [
      { name: 'host-local', ipam: { type: 'host-local', ranges: [[{ subnet: '10.239.0.0/24' }]], dataDir: join(dir.path, 'hl') }, runMs: [] },
      {
        name: 'agent local',
        ipam: { type: 'podipam', agent: socket, ranges: [[{ subnet: '10.239.1.0/24' }]], dataDir: join(dir.path, 'pl') },
        agent,
        runMs: [],
      },
      { name: 'agent cluster', ipam: { type: 'podipam', agent: socket2, datastore: url, nodeName: 'bench-node' }, agent: agent2, runMs: [] },
      { name: 'agent warm', ipam: { type: 'podipam', agent: socket3 }, agent: agent3, runMs: [] },
    ];
    await warmPoolFilled(agent3, PODS, { families: ['ipv4'], what: "the cri bench's warm agent" });
    if (FSYNC_PROBE_MS > 0) probe = await startFsyncProbe(dir.path, FSYNC_PROBE_MS);
    const probed = subjects.find((x) => x.name === 'agent cluster');
    let pod = 0;
    for (let round = 0; round < ROUNDS; round++) {
      for (const [k, s] of subjects.entries()) {
        for (const f of readdirSync(ctd.cniConfDir)) rmSync(join(ctd.cniConfDir, f));
        const conf = {
          cniVersion: '1.0.0',
          name: `bench-${pod}`,
          plugins: [{ type: 'bridge', bridge: `bench-cri${k}`, isGateway: false, ipMasq: false, ipam: s.ipam }],
        };
        writeFileSync(join(ctd.cniConfDir, '10-bench.conflist'), JSON.stringify(conf));
        await sleep(1500); // containerd reloads its CNI config on a file event
        if (s === probed) probe?.sample(true);
        const ids = await Promise.all(
          Array.from({ length: PODS }, async () => {
            const n = pod++;
            const t0 = performance.now();
            const id = await ctd.cri.runPodSandbox({ name: `p${n}`, namespace: 'bench', uid: `bench-${n}` }, ctd.logDir).catch((e: unknown) => {
              throw new Error(`${s.name}: RunPodSandbox p${n}: ${criErrorText(e)}`);
            });
            s.runMs.push(performance.now() - t0);
            return id;
          }),
        );
        if (s === probed) probe?.sample(false);
        await Promise.all(
          ids.map(async (id) => {
            await ctd.cri.stopPodSandbox(id);
            await ctd.cri.removePodSandbox(id);
          }),
        );
      }
    }
    const disk = await probe?.stop();
    probe = undefined;
    const hl = subjects[0]!.runMs;
    console.log(
      `${PODS} sandboxes at once × ${ROUNDS} rounds per subject (containerd ${(await ctd.cri.version()).runtimeVersion}; agents ${AGENT_PRIORITY}${AGENT_RT === undefined ? '' : ', as shipped'}); agent ADD aim p99 < ${AGENT_ADD_P99_AIM_MS} ms:`,
    );
    const lines: string[] = [];
    for (const s of subjects) {
      const add = s.agent ? (await s.agent.status()).latencyMs.ADD : undefined;
      const agentPart = add ? `; agent ADD p50 ${ms(add.p50)} p99 ${ms(add.p99)} (n ${add.n})` : '';
      const vs = s === subjects[0] ? '' : ` (${ratio(q(s.runMs, 0.5), q(hl, 0.5))} / ${ratio(q(s.runMs, 0.99), q(hl, 0.99))} host-local)`;
      const line = `${s.name.padEnd(14)} RunPodSandbox p50 ${ms(q(s.runMs, 0.5))} p90 ${ms(q(s.runMs, 0.9))} p99 ${ms(q(s.runMs, 0.99))}${vs}${agentPart}`;
      console.log(line);
      lines.push(`cri ${line}`);
    }
    lines.push(`cri agents ${AGENT_PRIORITY}`);
    if (disk) {
      const line = `disk fsync beside the datastore while the cluster agent's sandboxes start (every ${FSYNC_PROBE_MS} ms): p50 ${ms(disk.p50)} p90 ${ms(disk.p90)} p99 ${ms(disk.p99)} max ${ms(disk.max)} (n ${disk.n})`;
      console.log(line);
      lines.push(`cri ${line}`);
    }
    if (TRACE) {
      writeFileSync(`${TRACE}.local`, agent.log());
      writeFileSync(`${TRACE}.cluster`, agent2.log());
      writeFileSync(`${TRACE}.warm`, agent3.log());
    }
    return lines;
  } finally {
    probe?.kill();
    await ctd.stop();
    for (const a of agents) await a.stop();
    dir.remove();
  }
}
