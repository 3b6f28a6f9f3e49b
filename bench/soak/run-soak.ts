/**
 * The long run: ADD/DEL with churn through a `podipam agent` on a real etcd, in two phases —
 *
 *   warm     the agent's warm pool (`"ipam": {"agent": SOCK}`), pods served from idle
 *            addresses, pod records written behind, surplus returned
 *   cluster  the agent in cluster mode (`"datastore"`), every ADD and DEL a transaction on
 *            etcd (group commit under load)
 *
 * Each of `lanes` lanes keeps its own set of live pods around `target / lanes` (ADD when below
 * half, DEL when above one and a half, else a seeded coin), so pods come and go for the whole
 * run. Calls go over the agent's socket protocol (the frames the native shim sends); every
 * `shimEvery`-th call goes through the real shim binary (dist/bin/podipam-cni) instead. Code 11
 * (try again later: the warm pool momentarily at capacity) is retried, as a runtime does; any
 * other failure stops the run.
 *
 * Sampled `samples` times per phase: the agent's RSS (/proc/PID/status), V8 heap in use (its
 * /metrics), open file descriptors (/proc/PID/fd), blocks in the datastore, addresses
 * allocated. At the end of a phase: DEL of every live pod; the pod records gone; `podipam ipam
 * check` clean; then the node's warm handles released (warm) → zero allocated, check clean.
 * Violations: growth after warm-up (the first WARMUP of the run) beyond the bounds below, and
 * any leak.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { callAgent } from '../../src/wire/agent-client.js';
import { ClusterIpam } from '../../src/cluster/service/cluster-ipam.js';
import { decodeBlock } from '../../src/cluster/records/block-record.js';
import { BLOCK_PREFIX, HANDLE_PREFIX } from '../../src/cluster/records/keys.js';
import { addrOfOrdinal, allocatedCount } from '../../src/alloc/block.js';
import { ResourceDb } from '../../src/warm/resource-db.js';
import { formatAddr } from '../../src/ip/index.js';
import { openStore, type Store } from '../../src/store/index.js';
import { mulberry32 } from '../../src/util/mulberry32.js';
import { SHIM_BIN, requireShim, startAgent } from '../../test/helpers/agent.js';
import { startEtcd } from '../../test/helpers/etcd.js';
import { PODIPAM_BIN } from '../../test/helpers/plugin.js';
import { makeTempDir } from '../../test/helpers/tmp.js';

export interface SoakOptions {
  /** ADD + DEL calls per phase. */
  readonly ops: number;
  readonly lanes?: number;
  /** Live pods per phase, about. */
  readonly target?: number;
  /** Every n-th call through the shim binary (0: none). */
  readonly shimEvery?: number;
  readonly samples?: number;
  readonly phases?: readonly Phase[];
  readonly log?: (line: string) => void;
}

export type Phase = 'warm' | 'cluster';

export interface Sample {
  readonly ops: number;
  readonly seconds: number;
  readonly rssMb: number;
  readonly heapMb: number;
  readonly fds: number;
  readonly blocks: number;
  readonly allocated: number;
  readonly live: number;
}

export interface PhaseReport {
  readonly phase: Phase;
  readonly ops: number;
  readonly seconds: number;
  readonly opsPerSecond: number;
  readonly viaShim: number;
  readonly retries: number;
  readonly samples: readonly Sample[];
  readonly violations: readonly string[];
}

/** Fraction of a phase ignored as warm-up before growth is judged. */
export const WARMUP = 0.2;
/**
 * Growth bounds, last fifth's maximum vs the maximum just after warm-up (memory: or 25%; blocks:
 * plus one per 61 more addresses held at the peak). File descriptors compare the windows' minimums: a
 * sample taken mid-churn also counts the connections of the calls in flight (up to one per
 * lane), while a leaked descriptor stays open in every later sample, the quietest included.
 */
export const BOUNDS = { rssMb: 48, heapMb: 24, fds: 4, blocks: 4 };

/** How many samples a fifth of `run` is (at least one). */
const fifth = (run: readonly Sample[]): number => Math.max(1, Math.ceil(run.length / 5));

/**
 * The growth bounds broken by `run` (a phase's samples after warm-up, in order): the last fifth
 * against the first. Blocks stay claimed by the node once it needed them, so their bound grows
 * with the addresses held at the run's peak (one more block per 61), not at its end — a warm
 * pool's holding rises while released addresses cool and falls when it returns them.
 */
export function growthViolations(phase: string, run: readonly Sample[]): string[] {
  const out: string[] = [];
  const early = run.slice(0, fifth(run));
  const late = run.slice(-fifth(run));
  const max = (xs: readonly Sample[], k: keyof typeof BOUNDS | 'allocated'): number => Math.max(...xs.map((s) => s[k]));
  const min = (xs: readonly Sample[], k: keyof typeof BOUNDS): number => Math.min(...xs.map((s) => s[k]));
  const morePeak = Math.max(0, max(run, 'allocated') - max(early, 'allocated'));
  for (const k of Object.keys(BOUNDS) as (keyof typeof BOUNDS)[]) {
    const grew = k === 'fds' ? min(late, k) - min(early, k) : max(late, k) - max(early, k);
    // Memory: the bound or a quarter, whichever is larger.
    const bound =
      k === 'rssMb' || k === 'heapMb' ? Math.max(BOUNDS[k], 0.25 * max(early, k)) : k === 'blocks' ? BOUNDS.blocks + Math.ceil(morePeak / 61) : BOUNDS[k];
    if (grew > bound)
      out.push(
        `${phase}: ${k} grew by ${grew.toFixed(1)} after warm-up (bound ${bound.toFixed(1)}): ${(k === 'fds' ? min(early, k) : max(early, k)).toFixed(1)} → ${(k === 'fds' ? min(late, k) : max(late, k)).toFixed(1)}`,
      );
  }
  return out;
}

const NET = { warm: 'soak-warm', cluster: 'soak-cluster' } as const;
const NODE = { warm: 'soak-w', cluster: 'soak-c' } as const;

export async function runSoak(o: SoakOptions): Promise<PhaseReport[]> {
  requireShim();
  const log = o.log ?? ((l: string) => process.stdout.write(`${l}\n`));
  // As a production etcd runs: history compacted (else a long soak fills etcd's 2 GiB backend
  // quota with old revisions — "mvcc: database space exceeded" after ~1.3M transactions here).
  const etcd = await startEtcd({
    members: 1,
    extraArgs: ['--auto-compaction-mode=revision', '--auto-compaction-retention=10000', '--quota-backend-bytes=8589934592'],
  });
  const dir = makeTempDir('soak');
  const store = await openStore(etcd.url);
  try {
    const ipam = new ClusterIpam(store);
    await ipam.createPool({ name: 'soak4', cidr: '10.96.0.0/16' });
    await ipam.createPool({ name: 'soak6', cidr: 'fd96::/64' });
    const out: PhaseReport[] = [];
    for (const phase of o.phases ?? (['warm', 'cluster'] as const)) out.push(await runPhase(phase, o, etcd.url, dir.path, store, ipam, log));
    return out;
  } finally {
    await store.close();
    await etcd.stop();
    dir.remove();
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

async function runPhase(
  phase: Phase,
  o: SoakOptions,
  url: string,
  root: string,
  store: Store,
  ipam: ClusterIpam,
  log: (l: string) => void,
): Promise<PhaseReport> {
  const lanes = o.lanes ?? 16;
  const target = o.target ?? 256;
  const shimEvery = o.shimEvery ?? 100;
  const nSamples = o.samples ?? 20;
  const node = NODE[phase];
  const socket = join(root, phase, 'agent.sock');
  const port = await freePort();
  const args = ['--node', node, '--datastore', url, '--metrics-listen', `127.0.0.1:${port}`, '--data-dir', join(root, phase, 'data')];
  if (phase === 'warm') args.push('--min-idle', '32', '--max-idle', '128', '--capacity', '2048', '--cooldown', '1s');
  const agent = await startAgent(socket, args);
  const pid = agent.child.pid!;
  const ipamConf = phase === 'warm' ? { type: 'podipam', agent: socket } : { type: 'podipam', datastore: url, nodeName: node };
  const stdin = (): string => JSON.stringify({ cniVersion: '1.0.0', name: NET[phase], ipam: ipamConf });
  const input = stdin();
  const violations: string[] = [];
  const samples: Sample[] = [];
  let ops = 0;
  let viaShim = 0;
  let retries = 0;
  const live: Set<string>[] = Array.from({ length: lanes }, () => new Set());
  const liveCount = (): number => live.reduce((n, s) => n + s.size, 0);
  const t0 = performance.now();

  const call = async (command: 'ADD' | 'DEL', id: string): Promise<void> => {
    for (let attempt = 1; ; attempt++) {
      const n = ++ops;
      const env = { CNI_COMMAND: command, CNI_CONTAINERID: id, CNI_IFNAME: 'eth0', CNI_NETNS: '/var/run/netns/soak', CNI_PATH: '/usr/lib/cni' };
      let status: number;
      let answer: string;
      if (shimEvery > 0 && n % shimEvery === 0) {
        viaShim++;
        ({ status, answer } = await runShim(env, input, phase === 'cluster' ? socket : undefined));
      } else {
        const a = await callAgent(socket, { kind: 'cni', call: { env, stdin: Buffer.from(input) } }, { connectTimeoutMs: 10_000, answerTimeoutMs: 60_000 });
        status = a.status;
        answer = a.body.toString('utf8');
      }
      if (status === 0) return;
      const code = (JSON.parse(answer) as { code?: number }).code;
      if (code !== 11 || attempt >= 200) throw new Error(`${phase}: ${command} ${id} failed (attempt ${attempt}): ${answer}`);
      retries++;
      await new Promise((r) => setTimeout(r, 20));
    }
  };

  const sample = async (): Promise<Sample> => {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
    const metrics = await scrape(port);
    const heap = Number(/^podipam_agent_process_nodejs_heap_size_used_bytes (\S+)/m.exec(metrics)?.[1] ?? NaN);
    const blocks = await store.list(BLOCK_PREFIX);
    const s: Sample = {
      ops,
      seconds: (performance.now() - t0) / 1000,
      rssMb: rssKb / 1024,
      heapMb: heap / 2 ** 20,
      fds: readdirSync(`/proc/${pid}/fd`).length,
      blocks: blocks.length,
      allocated: blocks.reduce((n, e) => n + allocatedCount(decodeBlock(e)), 0),
      live: liveCount(),
    };
    samples.push(s);
    log(
      `  ${phase} ${String(s.ops).padStart(8)} ops ${s.seconds.toFixed(1).padStart(7)} s  rss ${s.rssMb.toFixed(1)} MB  heap ${s.heapMb.toFixed(1)} MB  fds ${s.fds}  blocks ${s.blocks}  allocated ${s.allocated}  live ${s.live}`,
    );
    return s;
  };

  try {
    await sample();
    const every = Math.max(1, Math.floor(o.ops / nSamples));
    let nextSample = every;
    let sampling: Promise<unknown> | undefined;
    const perLane = Math.max(2, Math.ceil(target / lanes));
    await Promise.all(
      live.map(async (mine, lane) => {
        const rnd = mulberry32(lane + 1);
        let seq = 0;
        while (ops < o.ops) {
          const n = mine.size;
          const add = n < perLane / 2 || (n < perLane * 1.5 && rnd() < 0.5);
          if (add) {
            const id = `s${lane}-${seq++}`;
            await call('ADD', id);
            mine.add(id);
          } else {
            const ids = [...mine];
            const id = ids[Math.floor(rnd() * ids.length)]!;
            await call('DEL', id);
            mine.delete(id);
          }
          if (ops >= nextSample && !sampling) {
            nextSample += every;
            sampling = sample().finally(() => (sampling = undefined));
          }
        }
      }),
    );
    await sampling;
    const seconds = (performance.now() - t0) / 1000;
    const measured = ops;
    await sample();

    // Growth after warm-up: the last fifth vs just after warm-up.
    const run = samples.filter((s) => s.ops >= WARMUP * measured);
    violations.push(...growthViolations(phase, run));
    const liveMax = Math.max(...run.map((s) => s.live));
    // Live pods as the lanes count them, plus one ADD in flight per lane, two families each.
    const allocBound = phase === 'warm' ? 2 * (2048 + liveMax + lanes) : 2 * (liveMax + lanes);
    const lateAllocated = Math.max(...run.slice(-fifth(run)).map((s) => s.allocated));
    if (lateAllocated > allocBound) violations.push(`${phase}: ${lateAllocated} allocated, more than ${allocBound}`);

    // DEL of every live pod, then nothing may be left.
    await Promise.all(
      live.map(async (mine) => {
        for (const id of [...mine]) {
          await call('DEL', id);
          mine.delete(id);
        }
      }),
    );
    if (phase === 'warm') {
      for (let i = 0; i < 600 && (await agent.status()).warmPool!.writeBehindDepth > 0; i++) await new Promise((r) => setTimeout(r, 50));
      const records = await store.list(`agent-pods/${node}/`);
      if (records.length > 0) violations.push(`warm: ${records.length} pod records left after DEL of every pod`);
    }
    let end = await sample();
    if (phase === 'cluster' && end.allocated !== 0) violations.push(`cluster: ${end.allocated} addresses allocated after DEL of every pod`);
    if (phase === 'warm') {
      // The pool keeps working after the last DEL (returns past their cooldown, refills up to
      // minIdle): compare the datastore with the agent once nothing is in flight and two
      // readings agree (bounded), never a moving state.
      const heldNow = async () => {
        const w = (await agent.status()).warmPool!;
        const busy = Object.values(w.pools).some((p) => p.returning > 0 || p.pending > 0);
        return { w, busy, held: Object.values(w.pools).reduce((n, p) => n + p.idle + p.inUse + p.reserved + p.returning, 0) };
      };
      let h = await heldNow();
      for (let i = 0; i < 200 && (h.busy || end.allocated !== h.held); i++) {
        await new Promise((r) => setTimeout(r, 100));
        const before = await heldNow();
        end = await sample();
        h = await heldNow();
        if (before.held !== h.held) h = { ...h, busy: true };
      }
      const { w, held } = h;
      if (end.allocated !== held) {
        // Which ones: the datastore's allocations vs the agent's resource DB.
        const db = new ResourceDb(join(root, phase, 'data'));
        const rows = new Map(db.held().map((r) => [r.addr, r.handle]));
        db.close();
        const extra: string[] = [];
        for (const e of await store.list(BLOCK_PREFIX)) {
          const b = decodeBlock(e);
          for (const [o, h] of b.allocations) if (!rows.has(formatAddr(addrOfOrdinal(b.cidr, o)))) extra.push(`${formatAddr(addrOfOrdinal(b.cidr, o))} (${h})`);
        }
        violations.push(
          `warm: the datastore allocates ${end.allocated}, the agent holds ${held} (${JSON.stringify(w.pools)}); not in the resource DB (${rows.size} rows): ${extra.slice(0, 8).join(', ')}${extra.length > 8 ? ` … ${extra.length}` : ''}`,
        );
      }
    }
    const check = await cli(url, ['ipam', 'check', '--json']);
    if (!checkClean(check)) violations.push(`${phase}: ipam check: exit ${check.code}: ${check.stdout}${check.stderr}`);
    const stopped = await agent.stop();
    if (stopped !== 0) violations.push(`${phase}: the agent exited ${stopped} on SIGTERM`);
    if (phase === 'warm') {
      for (const e of await store.list(`${HANDLE_PREFIX}podipam-warm:`)) await ipam.releaseHandle(e.key.slice(HANDLE_PREFIX.length));
    }
    const left = (await store.list(BLOCK_PREFIX)).reduce((n, e) => n + allocatedCount(decodeBlock(e)), 0);
    if (left !== 0) violations.push(`${phase}: ${left} addresses allocated after DEL of everything`);
    const check2 = await cli(url, ['ipam', 'check', '--json']);
    if (!checkClean(check2)) violations.push(`${phase}: final ipam check: ${check2.stdout}${check2.stderr}`);
    const rate = measured / seconds;
    log(
      `${phase}: ${measured} ops in ${seconds.toFixed(1)} s = ${rate.toFixed(0)} ops/s (${viaShim} through the shim, ${retries} code-11 retries); ${violations.length ? violations.join('; ') : 'no growth, no leak'}`,
    );
    return { phase, ops: measured, seconds, opsPerSecond: rate, viaShim, retries, samples, violations };
  } finally {
    await agent.kill();
  }
}

function checkClean(r: { code: number | null; stdout: string }): boolean {
  try {
    const o = JSON.parse(r.stdout) as { leaks?: unknown[]; problems?: unknown[] };
    return r.code === 0 && o.leaks?.length === 0 && o.problems?.length === 0;
  } catch {
    return false;
  }
}

/** The agent's /metrics (it listens once the agent is ready: a few tries). */
async function scrape(port: number): Promise<string> {
  for (let i = 0; ; i++) {
    try {
      return await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    } catch (e) {
      if (i >= 100) throw e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

function runShim(env: Record<string, string>, input: string, socket: string | undefined): Promise<{ status: number; answer: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(SHIM_BIN, [], {
      env: { PATH: process.env.PATH, ...env, PODIPAM_PLUGIN: '', ...(socket ? { PODIPAM_AGENT_SOCKET: socket } : {}) },
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ status: code ?? 1, answer: out }));
    child.stdin.end(input);
  });
}

function cli(url: string, args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [PODIPAM_BIN, '--datastore', url, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
