/**
 * The `local` back end against the reference host-local, side by side in one run:
 *
 *   startup   `node -e 0` (the floor any Node plugin pays), `CNI_COMMAND=VERSION` of both
 *   seq       sequential ADD then DEL of one container, PAIRS times, alternating the two plugins
 *             so both see the same machine load; p50/p99 per call
 *   burst     BURST ADDs with 32 in flight on one network (wall time), then the DELs likewise
 *
 * Each plugin has its own dataDir (tmpfs-backed /tmp or not, the same for both). Knobs:
 * PODIPAM_BENCH_PAIRS (default 200), PODIPAM_BENCH_BURST (256), PODIPAM_BENCH_STARTUP (30).
 * Run alone: `node dist/bench/local.js` after a build.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { HOST_LOCAL_BIN, PODIPAM_BIN, type PluginCall, runPlugin } from '../test/helpers/plugin.js';
import { makeTempDir } from '../test/helpers/tmp.js';

const PAIRS = Number(process.env.PODIPAM_BENCH_PAIRS ?? 200);
const BURST = Number(process.env.PODIPAM_BENCH_BURST ?? 256);
const STARTUP_RUNS = Number(process.env.PODIPAM_BENCH_STARTUP ?? 30);
const IN_FLIGHT = 32;

interface Plugin {
  readonly name: string;
  readonly bin: string;
  readonly type: string;
}

const PODIPAM: Plugin = { name: 'podipam', bin: PODIPAM_BIN, type: 'podipam' };
const HOST_LOCAL: Plugin = { name: 'host-local', bin: HOST_LOCAL_BIN, type: 'host-local' };

function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
}

const ms = (x: number) => `${x.toFixed(1)} ms`;
const ratio = (a: number, b: number) => `${(a / b).toFixed(1)}x`;

function call(p: Plugin, dataDir: string, command: string, id: string): PluginCall {
  return {
    command,
    containerId: id,
    ifname: 'eth0',
    config: { cniVersion: '1.0.0', name: 'bench', ipam: { type: p.type, dataDir, ranges: [[{ subnet: '10.128.0.0/16' }]] } },
  };
}

/** Wall time of one synchronous run of `argv` with `env`, stdin `input`; throws on failure. */
function timeSync(argv: readonly string[], env: NodeJS.ProcessEnv, input = ''): number {
  const t0 = performance.now();
  const r = spawnSync(argv[0]!, argv.slice(1), { env, input, encoding: 'utf8' });
  const t = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${argv.join(' ')} failed (${r.status}): ${r.stdout}${r.stderr}`);
  return t;
}

/**
 * CPU time (user + system, ms) of this process's waited-for children so far, from
 * /proc/self/stat (cutime + cstime, in clock ticks of 10 ms). Per call it is coarse, over
 * hundreds of calls a mean that machine load barely moves, unlike wall time.
 */
function childCpuMs(): number {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[13]) + Number(fields[14])) * 10;
}

function envOf(c: PluginCall): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    CNI_COMMAND: c.command,
    CNI_CONTAINERID: c.containerId,
    CNI_IFNAME: c.ifname,
    CNI_NETNS: '/var/run/netns/bench',
    CNI_PATH: '/usr/lib/cni',
  };
}

interface Startup {
  readonly floor: number[];
  readonly podipam: number[];
  readonly hostLocal: number[];
  /** Mean CPU ms per run: `node -e 0`, podipam VERSION. */
  readonly cpu: { floor: number; podipam: number };
}

function startup(): Startup {
  const out: Startup = { floor: [], podipam: [], hostLocal: [], cpu: { floor: 0, podipam: 0 } };
  const version = { PATH: process.env.PATH, CNI_COMMAND: 'VERSION' };
  for (let i = 0; i < STARTUP_RUNS; i++) {
    let c = childCpuMs();
    out.floor.push(timeSync([process.execPath, '-e', '0'], { PATH: process.env.PATH }));
    out.cpu.floor += (childCpuMs() - c) / STARTUP_RUNS;
    c = childCpuMs();
    out.podipam.push(timeSync([PODIPAM_BIN], version));
    out.cpu.podipam += (childCpuMs() - c) / STARTUP_RUNS;
    out.hostLocal.push(timeSync([HOST_LOCAL_BIN], version));
  }
  return out;
}

interface SeqTimes {
  readonly add: number[];
  readonly del: number[];
  /** Mean CPU ms per call (user + system of the plugin process). */
  cpu: number;
}

function sequential(dirs: Record<string, string>): Record<string, SeqTimes> {
  const out: Record<string, SeqTimes> = { podipam: { add: [], del: [], cpu: 0 }, 'host-local': { add: [], del: [], cpu: 0 } };
  for (let i = 0; i < PAIRS; i++) {
    for (const p of i % 2 ? [PODIPAM, HOST_LOCAL] : [HOST_LOCAL, PODIPAM]) {
      const cpu0 = childCpuMs();
      const add = call(p, dirs[p.name]!, 'ADD', `seq${i}`);
      out[p.name]!.add.push(timeSync([p.bin], envOf(add), JSON.stringify(add.config)));
      const del = call(p, dirs[p.name]!, 'DEL', `seq${i}`);
      out[p.name]!.del.push(timeSync([p.bin], envOf(del), JSON.stringify(del.config)));
      out[p.name]!.cpu += (childCpuMs() - cpu0) / (2 * PAIRS);
    }
  }
  return out;
}

/** Runs `count` calls with IN_FLIGHT at a time; returns the wall time. */
async function burst(p: Plugin, dataDir: string, command: string, count: number): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < count) {
        const id = `burst${next++}`;
        const r = await runPlugin(p.bin, call(p, dataDir, command, id));
        if (r.code !== 0) throw new Error(`${p.name} ${command} ${id}: ${r.stdout}`);
      }
    }),
  );
  return performance.now() - t0;
}

/** Runs the benchmark, prints its table, returns summary lines for bench/index.ts. */
export async function run(): Promise<string[]> {
  const dirs = { podipam: makeTempDir('bench-podipam'), 'host-local': makeTempDir('bench-hostlocal') };
  const paths = { podipam: dirs.podipam.path, 'host-local': dirs['host-local'].path };
  try {
    console.log(`local back end vs host-local (${STARTUP_RUNS} start-ups, ${PAIRS} sequential ADD+DEL pairs, ${BURST}-pod burst at ${IN_FLIGHT} in flight)`);
    const s = startup();
    const floor = quantile(s.floor, 0.5);
    const startLine =
      `start-up p50: node -e 0 ${ms(floor)}, podipam VERSION ${ms(quantile(s.podipam, 0.5))} (+${ms(quantile(s.podipam, 0.5) - floor)}), ` +
      `host-local VERSION ${ms(quantile(s.hostLocal, 0.5))}; CPU mean: node -e 0 ${ms(s.cpu.floor)}, podipam VERSION ${ms(s.cpu.podipam)}`;
    console.log(`  ${startLine}`);

    const seq = sequential(paths);
    const rows: string[] = [];
    const line = (label: string, a: number, b: number) => {
      const text = `${label.padEnd(22)} ${ms(a).padStart(10)} ${ms(b).padStart(10)} ${ratio(a, b).padStart(8)}`;
      console.log(`  ${text}`);
      rows.push(text);
    };
    console.log(`  ${''.padEnd(22)} ${'podipam'.padStart(10)} ${'host-local'.padStart(10)} ${'ratio'.padStart(8)}`);
    for (const verb of ['add', 'del'] as const) {
      for (const q of [0.5, 0.99]) {
        line(`${verb.toUpperCase()} p${q * 100}`, quantile(seq.podipam![verb], q), quantile(seq['host-local']![verb], q));
      }
    }
    const pair = (name: string) => seq[name]!.add.map((a, i) => a + seq[name]!.del[i]!);
    line('ADD+DEL pair p50', quantile(pair('podipam'), 0.5), quantile(pair('host-local'), 0.5));
    line('ADD+DEL pair p99', quantile(pair('podipam'), 0.99), quantile(pair('host-local'), 0.99));
    line('CPU per call (mean)', seq.podipam!.cpu, seq['host-local']!.cpu);

    const wall: Record<string, { add: number; del: number }> = {};
    for (const p of [HOST_LOCAL, PODIPAM]) {
      const add = await burst(p, paths[p.name as keyof typeof paths], 'ADD', BURST);
      const del = await burst(p, paths[p.name as keyof typeof paths], 'DEL', BURST);
      wall[p.name] = { add, del };
    }
    line(`burst ${BURST} ADD wall`, wall.podipam!.add, wall['host-local']!.add);
    line(`burst ${BURST} DEL wall`, wall.podipam!.del, wall['host-local']!.del);
    const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
    console.log(`  (load average at the end: ${load})`);
    return [startLine, ...rows, `load average at the end: ${load}`];
  } finally {
    dirs.podipam.remove();
    dirs['host-local'].remove();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await run();
