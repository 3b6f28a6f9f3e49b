/**
 * What allocation history costs a pod start: ADD latency with `podipam serve` following the
 * datastore and keeping the history (history on) against the same serve with `--no-history`
 * (history off), in one run, on a SQLite datastore file and on a 1-member etcd (data on
 * /dev/shm), dual-stack:
 *
 *   per-pod  real `bin/podipam` ADD processes (cluster mode), each followed by its DEL
 *   shim     the native shim → a `podipam agent` in cluster mode (no warm pool), ADD then DEL
 *
 * The conditions alternate in ROUNDS rounds (off, on, on, off, …: serve restarted between them)
 * so that both share the machine's load; each round runs PER_POD per-pod pairs and SHIM shim
 * pairs, timing the ADDs only (the DELs give the follower releases to derive too). Printed:
 * ADD p50 and p99 per mode and condition and the on/off ratio of the p50s. Writers stamp their
 * transactions either way (the stamp is part of the allocation's own transaction), so this
 * measures what the follower's reading of the change stream costs the writers.
 *
 * Knobs: PODIPAM_BENCH_HISTORY_ROUNDS (4), PODIPAM_BENCH_HISTORY_PER_POD (40),
 * PODIPAM_BENCH_HISTORY_SHIM (200), PODIPAM_BENCH_HISTORY_STORES (sqlite,etcd1).
 * Run alone: `node dist/bench/index.js history-add`.
 */
import { defaultHistoryPath } from '../src/cli/history-path.js';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { type RunningAgent, SHIM_BIN, requireShim, startAgent, AS_SHIPPED } from '../test/helpers/agent.js';
import { startEtcd } from '../test/helpers/etcd.js';
import { PODIPAM_BIN, type PluginCall, clusterCall, runCliSync, runPlugin } from '../test/helpers/plugin.js';
import { makeTempDir } from '../test/helpers/tmp.js';
import { type ServeProcess, startServe } from '../test/e2e/serve-harness.js';

const ROUNDS = Number(process.env.PODIPAM_BENCH_HISTORY_ROUNDS ?? 4);
const PER_POD = Number(process.env.PODIPAM_BENCH_HISTORY_PER_POD ?? 40);
const SHIM = Number(process.env.PODIPAM_BENCH_HISTORY_SHIM ?? 200);
const STORES = (process.env.PODIPAM_BENCH_HISTORY_STORES ?? 'sqlite,etcd1').split(',');
const SHM = existsSync('/dev/shm') ? '/dev/shm' : undefined;

type Condition = 'off' | 'on';
type Mode = 'per-pod' | 'shim';

const q = (xs: readonly number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))] ?? NaN;
const f2 = (x: number): string => x.toFixed(2);

function table(rows: readonly (readonly string[])[]): void {
  const w = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  for (const r of rows) console.log(r.map((c, i) => (i === 0 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('  '));
}

async function pair(c: (command: string) => PluginCall, bin: string): Promise<number> {
  const add = await runPlugin(bin, c('ADD'));
  if (add.code !== 0) throw new Error(`ADD failed (${add.code}): ${add.stdout}${add.stderr}`);
  const del = await runPlugin(bin, c('DEL'));
  if (del.code !== 0) throw new Error(`DEL failed (${del.code}): ${del.stdout}${del.stderr}`);
  return add.ms;
}

async function store(kind: string): Promise<string[]> {
  const dir = makeTempDir('bench-history');
  const etcd = kind === 'etcd1' ? await startEtcd({ members: 1 }) : undefined;
  let agent: RunningAgent | undefined;
  let serve: ServeProcess | undefined;
  try {
    const url = etcd ? etcd.url : `sqlite:${join(SHM ?? dir.path, `podipam-bench-history-${process.pid}-${Date.now()}.db`)}`;
    for (const [name, cidr] of [
      ['bh-v4', '10.0.0.0/12'],
      ['bh-v6', 'fd00:b4::/104'],
    ] as const) {
      const r = runCliSync(url, ['pool', 'create', name, '--cidr', cidr]);
      if (r.code !== 0) throw new Error(`pool create: ${r.stderr}`);
    }
    const socket = join(dir.path, 'run', 'agent.sock');
    agent = await startAgent(socket, ['--node', 'bh-shim', '--datastore', url, '--data-dir', join(dir.path, 'agent')], {}, AS_SHIPPED);
    const cache = join(dir.path, 'cache');
    const perPod = (id: string) => (command: string) => clusterCall('bench-history', url, cache, command, id, 'bh-pod');
    const shim =
      (id: string) =>
      (command: string): PluginCall => ({
        command,
        containerId: id,
        ifname: 'eth0',
        config: { cniVersion: '1.0.0', name: 'bench-history', ipam: { type: 'podipam', datastore: url, nodeName: 'bh-shim' } },
        env: { PODIPAM_AGENT_SOCKET: socket, PODIPAM_PLUGIN: '' },
      });
    // The first ADDs claim the nodes' blocks: not measured.
    await pair(perPod('warm-up'), PODIPAM_BIN);
    await pair(shim('warm-up'), SHIM_BIN);
    const ms: Record<Mode, Record<Condition, number[]>> = { 'per-pod': { off: [], on: [] }, shim: { off: [], on: [] } };
    for (let round = 0; round < ROUNDS; round++) {
      // off, on, on, off, …: each condition as often early as late.
      const cond = (['off', 'on', 'on', 'off'] as const)[round % 4] as Condition;
      const dataDir = join(dir.path, `serve-${round}`);
      serve = await startServe({
        env: { PODIPAM_DATASTORE: url },
        dataDir,
        args: ['--no-default-pools', '--no-controller', ...(cond === 'off' ? ['--no-history'] : [])],
      });
      for (let i = 0; i < PER_POD; i++) ms['per-pod'][cond].push(await pair(perPod(`r${round}-p${i}`), PODIPAM_BIN));
      for (let i = 0; i < SHIM; i++) ms.shim[cond].push(await pair(shim(`r${round}-s${i}`), SHIM_BIN));
      await serve.stop();
      serve = undefined;
      const hdb = defaultHistoryPath(dataDir, url); // where serve keeps the history of this datastore
      if (existsSync(hdb) !== (cond === 'on')) throw new Error(`round ${round}, history ${cond}: ${hdb} ${existsSync(hdb) ? 'exists' : 'is missing'}`);
      rmSync(dataDir, { recursive: true, force: true });
    }
    const name = etcd ? 'etcd x1' : 'sqlite';
    const rows: string[][] = [['', 'ADD p50 off', 'ADD p50 on', 'on/off', 'p99 off', 'p99 on', 'n per condition']];
    const lines: string[] = [];
    for (const mode of ['per-pod', 'shim'] as const) {
      const off = ms[mode].off;
      const on = ms[mode].on;
      const r = q(on, 0.5) / q(off, 0.5);
      rows.push([
        `${name} ${mode}`,
        `${f2(q(off, 0.5))} ms`,
        `${f2(q(on, 0.5))} ms`,
        `${r.toFixed(3)}x`,
        `${f2(q(off, 0.99))} ms`,
        `${f2(q(on, 0.99))} ms`,
        String(off.length),
      ]);
      lines.push(
        `${name} ${mode}: ADD p50 ${f2(q(off, 0.5))} ms without history, ${f2(q(on, 0.5))} ms with (${r.toFixed(3)}x); p99 ${f2(q(off, 0.99))} / ${f2(q(on, 0.99))} ms`,
      );
    }
    table(rows);
    return lines;
  } finally {
    await serve?.stop();
    await agent?.stop();
    await etcd?.stop();
    dir.remove();
  }
}

export async function run(): Promise<string[]> {
  requireShim();
  console.log(
    `history-add: ADD with serve following the datastore (history on) vs serve --no-history, ${ROUNDS} alternating rounds x (${PER_POD} per-pod + ${SHIM} shim ADD+DEL pairs), dual-stack`,
  );
  const lines: string[] = [];
  for (const kind of STORES) lines.push(...(await store(kind)));
  lines.push(`load average at the end: ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
  return lines;
}
