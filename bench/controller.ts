/**
 * Node CIDR controller throughput: nodes per second from registration to CIDR recorded, for
 * 5,000 dual-stack nodes, on SQLite and on etcd (one member, via the test helper), each
 * scenario on a fresh store:
 *
 *   live       the controller runs (polling every 250 ms, 8 workers) while 5,000 nodes register
 *              with 32 writes in flight; time from the first registration to the last CIDR set
 *   backlog    5,000 nodes registered first, then `runOnce` (rebuild + assign all, batched)
 *   per node   the same backlog with batching off: one read + one write per node, the way
 *              kube-controller-manager patches one Node at a time (the baseline)
 *   restart    a fresh controller over the 5,000 assigned nodes: occupancy rebuilt, nothing to do
 *
 * Plus the pure allocator: a v6 /32 cut into /64s (2^32 blocks), 200,000 allocations.
 * Knobs: PODIPAM_BENCH_NODES (default 5000), PODIPAM_BENCH_CONTROLLER_ETCD_MEMBERS (1 or 3; 1).
 * Run alone: `node dist/bench/controller.js`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CidrSet } from '../src/alloc/cidr-set.js';
import { addNode } from '../src/controller/add-node.js';
import { parseControllerConfig } from '../src/controller/controller-config.js';
import { NodeCidrController } from '../src/controller/node-cidr-controller.js';
import { silentLog } from '../src/log/logger.js';
import { parsePrefix } from '../src/ip/index.js';
import { openStore, type Store } from '../src/store/index.js';
import { startEtcd } from '../test/helpers/etcd.js';

const NODES = Number(process.env.PODIPAM_BENCH_NODES ?? 5000);
const ETCD_MEMBERS = process.env.PODIPAM_BENCH_CONTROLLER_ETCD_MEMBERS === '3' ? 3 : 1;
const ETCD_LABEL = `etcd (${ETCD_MEMBERS} member${ETCD_MEMBERS === 1 ? '' : 's'})`;
const CONFIG = parseControllerConfig({ clusterCidrs: '10.0.0.0/8,fd00:10::/48', nodeMaskSize: '24', nodeMaskSizeV6: '64' });
const quiet = silentLog;

interface Row {
  readonly store: string;
  readonly mode: string;
  readonly ms: number;
  readonly roundTrips: number;
  readonly rate: boolean;
  /** Registration → CIDR recorded, p50 and p99 (live only). */
  latency?: string;
}

async function register(store: Store, inFlight = 32, registered?: Map<string, number>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < NODES) {
        const name = `node-${next++}`;
        await addNode(store, { name });
        if (registered) {
          registered.set(name, performance.now());
          // Nodes register from elsewhere: let the controller's timers run between them (SQLite
          // calls are synchronous and would otherwise hold the event loop for the whole burst).
          await new Promise((r) => setImmediate(r));
        }
      }
    }),
  );
}

function percentile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
}

let lastLatency = '';

async function live(store: Store): Promise<number> {
  let assigned = 0;
  let done!: () => void;
  const all = new Promise<void>((r) => (done = r));
  const registered = new Map<string, number>();
  const latencies: number[] = [];
  const onChange = (name: string, rec: unknown): void => {
    if (!rec) return;
    // A node can be served before addNode's promise resolves here: count that as 0.
    latencies.push(Math.max(0, performance.now() - (registered.get(name) ?? performance.now())));
    if (++assigned === NODES) done();
  };
  const c = new NodeCidrController({ store, config: CONFIG, log: quiet, onChange });
  await c.start();
  let timer: NodeJS.Timeout | undefined;
  try {
    const t0 = performance.now();
    await register(store, 32, registered);
    // Bounded: a controller that stalls shows as this timeout, not as a hang.
    await Promise.race([
      all,
      new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`live: ${assigned} of ${NODES} assigned after 300 s`)), 300_000))),
    ]);
    const ms = performance.now() - t0;
    latencies.sort((a, b) => a - b);
    lastLatency = `${percentile(latencies, 0.5).toFixed(0)} / ${percentile(latencies, 0.99).toFixed(0)} ms`;
    return ms;
  } finally {
    clearTimeout(timer);
    await c.stop();
  }
}

async function runOnce(store: Store, batch: boolean): Promise<number> {
  const c = new NodeCidrController({ store, config: CONFIG, log: quiet, batch });
  const t0 = performance.now();
  const s = await c.runOnce();
  if (s.failed.length || s.waiting.length) throw new Error(`runOnce left ${s.failed.length} failed, ${s.waiting.length} waiting`);
  return performance.now() - t0;
}

/** Counts a store's round trips between start() and stop() (default: the whole scenario). */
interface Counter {
  start(): void;
  stop(): void;
}

/** Runs `fn` on a fresh store and records its time and counted round trips. */
async function scenario(
  rows: Row[],
  label: string,
  mode: string,
  open: () => Promise<[Store, () => Promise<void>]>,
  fn: (s: Store, c: Counter) => Promise<number>,
  rate = true,
): Promise<void> {
  const [store, close] = await open();
  try {
    let from = store.roundTrips;
    let to: number | undefined;
    const ms = await fn(store, { start: () => (from = store.roundTrips), stop: () => (to = store.roundTrips) });
    rows.push({ store: label, mode, ms, roundTrips: (to ?? store.roundTrips) - from, rate });
  } finally {
    await close();
  }
}

async function scenarios(rows: Row[], label: string, open: () => Promise<[Store, () => Promise<void>]>): Promise<void> {
  await scenario(rows, label, 'live', open, live);
  (rows[rows.length - 1] as Row).latency = lastLatency;
  await scenario(rows, label, 'per node (baseline)', open, async (s, count) => {
    await register(s);
    count.start();
    return runOnce(s, false);
  });
  let restart = 0;
  await scenario(rows, label, 'backlog (batched)', open, async (s, count) => {
    await register(s);
    count.start();
    const ms = await runOnce(s, true);
    count.stop();
    restart = await runOnce(s, true);
    return ms;
  });
  rows.push({ store: label, mode: 'restart (rebuild only)', ms: restart, roundTrips: 0, rate: false });
}

/** A full garbage collection, so heap figures count what is retained, not garbage. */
function collect(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

function allocatorFigures(): string {
  const set = new CidrSet(parsePrefix('2001:db8::/32'), 64);
  const n = 200_000;
  collect();
  const heap0 = process.memoryUsage().heapUsed;
  const t0 = performance.now();
  // Every 7th block released again: a fragmented bitmap, not one collapsed run.
  for (let i = 0; i < n; i++) {
    const p = set.allocateNext();
    if (p && i % 7 === 3) set.release(p);
  }
  const ms = performance.now() - t0;
  collect();
  const kib = (process.memoryUsage().heapUsed - heap0) / 1024;
  return `| allocator | v6 /32 → /64 (2^32 blocks), ${n.toLocaleString('en')} allocateNext, 1 in 7 released | ${(ms / 1000).toFixed(2)} s | ${Math.round((n * 1000) / ms).toLocaleString('en')} allocations/s | retained heap ${kib.toFixed(0)} KiB for ${set.used.toLocaleString('en')} blocks used | — |`;
}

/** Runs the benchmark, prints one table, returns the summary lines. */
export async function run(): Promise<readonly string[]> {
  const rows: Row[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'podipam-bench-ctl-'));
  let n = 0;
  try {
    await scenarios(rows, 'sqlite', async () => {
      const s = await openStore(`sqlite:${join(dir, `ds${n++}.db`)}`);
      return [s, () => s.close()];
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  await scenarios(rows, ETCD_LABEL, async () => {
    const etcd = await startEtcd({ members: ETCD_MEMBERS });
    const s = await openStore(etcd.url);
    return [s, async () => (await s.close(), await etcd.stop())];
  });
  const lines = [
    `Node CIDR controller — ${NODES.toLocaleString('en')} dual-stack nodes (10.0.0.0/8 → /24, fd00:10::/48 → /64), 8 workers`,
    '',
    '| store | mode | wall | nodes/s | round trips per node (timed part; live includes registration) | registration → CIDR p50 / p99 |',
    '|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.store} | ${r.mode} | ${(r.ms / 1000).toFixed(2)} s | ${r.rate ? Math.round((NODES * 1000) / r.ms).toLocaleString('en') : '—'} | ${r.rate ? (r.roundTrips / NODES).toFixed(2) : '—'} | ${r.latency ?? '—'} |`,
    ),
    allocatorFigures(),
  ];
  console.log(`\n${lines.join('\n')}\n`);
  const ratio = (store: string) => {
    const base = rows.find((r) => r.store === store && r.mode.startsWith('per node'));
    const batched = rows.find((r) => r.store === store && r.mode.startsWith('backlog'));
    return base && batched ? (base.ms / batched.ms).toFixed(1) : '?';
  };
  return rows
    .filter((r) => r.rate)
    .map((r) => `${r.store} ${r.mode}: ${Math.round((NODES * 1000) / r.ms)} nodes/s`)
    .concat([`batched vs per node: ×${ratio('sqlite')} (sqlite), ×${ratio(ETCD_LABEL)} (etcd)`]);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await run();
}
