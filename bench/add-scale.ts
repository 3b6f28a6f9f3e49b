/**
 * How an ADD's cost grows with the cluster, one table per dimension: the pool's size (an IPv4
 * /24, /16 and /8, an IPv6 /64), the blocks other nodes hold, and the number of nodes. Each row
 * fills a fresh SQLite datastore on /dev/shm with the other nodes' blocks (direct ClusterIpam
 * calls, not timed), then a new agent's allocator — a fresh ClusterIpam, its caches cold — serves
 * PROBE ADDs of one address on a node of its own: the first ADD (snapshot load and block claim
 * among the others'), p50 and p99 of the rest, datastore round trips per ADD, and the heap the
 * new allocator retains after a full GC (what an agent holds for the cluster), and the block
 * records its lists returned per ADD. Two more tables: the probe node's own blocks (it already
 * holds 20 to 1,000 small blocks and every timed ADD claims one more), and borrowing (the probe
 * node is at its per-host cap, so every timed ADD borrows from another node's block). Flat or
 * logarithmic down a column is the contract; a column growing with the cluster is a bug.
 *
 * Knobs: PODIPAM_BENCH_ADD_SCALE_PROBE (64 ADDs), PODIPAM_BENCH_ADD_SCALE_MAX (5000: the
 * largest count of nodes and of blocks filled). Run alone: `node dist/bench/index.js add-scale`.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ClusterIpam } from '../src/cluster/index.js';
import { PoolExhaustedError } from '../src/cluster/records/errors.js';
import type { PoolSpec } from '../src/cluster/records/pool-record.js';
import { type Entry, type ListOptions, type Store, openStore } from '../src/store/index.js';
import { q } from './lib/cni-subject.js';

const PROBE = Number(process.env.PODIPAM_BENCH_ADD_SCALE_PROBE ?? 64);
const MAX = Number(process.env.PODIPAM_BENCH_ADD_SCALE_MAX ?? 5000);

/** One row: a pool, and the other nodes filled before the probe, each holding `blocksEach` blocks. */
export interface Case {
  readonly dimension: string;
  readonly label: string;
  readonly pool: PoolSpec;
  readonly family: 4 | 6;
  readonly nodes: number;
  readonly blocksEach: number;
  /** Blocks the probe node fills itself before the timed ADDs (untimed). */
  readonly probeOwns?: number;
  /** The probe node holds one full block and its per-host cap is 1: every timed ADD borrows. */
  readonly atCap?: boolean;
}

export interface Row {
  readonly case: Case;
  /** Blocks in the datastore before the probe (the others'). */
  readonly blocks: number;
  readonly firstMs: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly roundTripsPerAdd: number;
  /** Block records (entries) the probe's lists returned, per ADD. */
  readonly listedPerAdd: number;
  /** Heap the probe's allocator retains after a full GC (NaN without --expose-gc). */
  readonly heapKiB: number;
}

/** Addresses per filling request (the most one request may ask), requests per filling transaction. */
const PER_REQUEST = 32;
const GROUP = 32;

const gc = (): void => (globalThis as { gc?: () => void }).gc?.();
const canGc = (): boolean => typeof (globalThis as { gc?: unknown }).gc === 'function';

/** The addresses in one block of `pool` (its blockSize within its family's width). */
function blockAddrs(pool: PoolSpec, family: 4 | 6): number {
  return 2 ** ((family === 4 ? 32 : 128) - (pool.blockSize ?? (family === 4 ? 26 : 122)));
}

/** `store` with a count of the entries its lists return. */
function countingLists(store: Store): { readonly store: Store; readonly listed: () => number } {
  let listed = 0;
  const wrapped = new Proxy(store, {
    get(target, p) {
      if (p === 'list')
        return async (prefix: string, o?: ListOptions): Promise<Entry[]> => {
          const r = await target.list(prefix, o);
          listed += r.length;
          return r;
        };
      const v: unknown = Reflect.get(target, p);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  return { store: wrapped, listed: () => listed };
}

/** Asks `want` addresses for `node` in requests of PER_REQUEST, GROUP requests a transaction, until its per-host cap stops it. */
async function fillNode(admin: ClusterIpam, node: string, family: 4 | 6, want: number): Promise<void> {
  const reqs = Array.from({ length: Math.ceil(want / PER_REQUEST) }, (_, k) => ({
    node,
    handle: `fill-${node}-${k}`,
    auto: { [family]: Math.min(PER_REQUEST, want - k * PER_REQUEST) },
  }));
  for (let g = 0; g < reqs.length; g += GROUP) {
    for (const o of await admin.assignMany(node, reqs.slice(g, g + GROUP))) {
      if (o.ok) continue;
      if (o.error instanceof PoolExhaustedError) return; // its blocks are full
      throw o.error;
    }
  }
}

/** Fills a fresh datastore in `dir` as the case says, then times PROBE ADDs (`probe` of them) of a new agent. */
export async function measureCase(c: Case, dir: string, probe = PROBE): Promise<Row> {
  const url = `sqlite:${join(dir, `add-scale-${c.dimension}-${c.label.replace(/\W+/g, '_')}.db`)}`;
  const counted = countingLists(await openStore(url));
  const store = counted.store;
  try {
    {
      const admin = new ClusterIpam(store);
      await admin.createPool(c.pool);
      // A filling node holds blocksEach blocks (a per-host cap above Calico's default of 20).
      if (c.blocksEach > 1) await admin.updateSettings({ maxBlocksPerHost: c.blocksEach + 1 });
      // One address claims the first block; a node with more asks what its blocks hold (a cap one above, so
      // no request meets the cap and lists every block to borrow): requests of PER_REQUEST
      // addresses, a group of GROUP of them per transaction.
      const want = c.blocksEach > 1 ? c.blocksEach * blockAddrs(c.pool, c.family) : 1;
      for (let n = 0; n < c.nodes; n++) await fillNode(admin, `other-${n}`, c.family, want);
      // The probe node's own blocks, filled up to a cap of that many.
      const owns = c.atCap ? 1 : (c.probeOwns ?? 0);
      if (owns > 0) {
        await admin.updateSettings({ maxBlocksPerHost: owns });
        await fillNode(admin, 'probe', c.family, owns * blockAddrs(c.pool, c.family));
      }
      // The probe node takes as many blocks as its ADDs need (/30 blocks: 16 or more), unless it is at its cap.
      await admin.updateSettings({ maxBlocksPerHost: c.atCap ? 1 : Math.max(1000, owns + probe + 1) });
    }
    const blocks = (await store.list('blocks/')).filter((e) => !e.value.includes('"affinity":"probe"')).length;
    gc();
    gc();
    const heap0 = process.memoryUsage().heapUsed;
    const rt0 = store.roundTrips;
    const listed0 = counted.listed();
    const agent = new ClusterIpam(store);
    const times: number[] = [];
    for (let i = 0; i < probe; i++) {
      const t = performance.now();
      const got = await agent.assign({ node: 'probe', handle: `probe-${i}`, auto: { [c.family]: 1 } });
      times.push(performance.now() - t);
      if (got.length !== 1) throw new Error(`${c.dimension} ${c.label}: ADD ${i} got ${got.length} addresses`);
    }
    const roundTrips = store.roundTrips - rt0;
    const listed = counted.listed() - listed0;
    gc();
    gc();
    const heapKiB = canGc() ? (process.memoryUsage().heapUsed - heap0) / 1024 : NaN;
    const rest = times.slice(1);
    // keep the agent (and so its caches) alive until the heap was read
    if ((await agent.currentPools()).pools.length !== 1) throw new Error(`${c.dimension} ${c.label}: pools lost`);
    return {
      case: c,
      blocks,
      firstMs: times[0] ?? NaN,
      p50Ms: q(rest, 0.5),
      p99Ms: q(rest, 0.99),
      roundTripsPerAdd: roundTrips / probe,
      listedPerAdd: listed / probe,
      heapKiB,
    };
  } finally {
    await store.close();
  }
}

/** The three dimensions, up to `max` nodes / blocks. */
export function cases(max = MAX): Case[] {
  const v4 = (cidr: string, blockSize?: number): PoolSpec => ({ name: 'p', cidr, ...(blockSize === undefined ? {} : { blockSize }) });
  const upTo = (xs: number[]) => xs.filter((x) => x <= max);
  return [
    // Pool size: the same 3 other nodes with a block each, in pools from 4 blocks to 2^58.
    { dimension: 'pool size', label: 'IPv4 /24', pool: v4('10.0.0.0/24'), family: 4, nodes: 3, blocksEach: 1 },
    { dimension: 'pool size', label: 'IPv4 /16', pool: v4('10.0.0.0/16'), family: 4, nodes: 3, blocksEach: 1 },
    { dimension: 'pool size', label: 'IPv4 /8', pool: v4('10.0.0.0/8'), family: 4, nodes: 3, blocksEach: 1 },
    { dimension: 'pool size', label: 'IPv6 /64', pool: { name: 'p', cidr: 'fd00:5c::/64' }, family: 6, nodes: 3, blocksEach: 1 },
    // Blocks: ever more small blocks (/30: 4 addresses) of a /8, 20 per other node (Calico's per-host cap).
    ...upTo([20, 1000, 5000, 20_000]).map((b): Case => ({
      dimension: 'blocks',
      label: `${b} blocks`,
      pool: v4('10.0.0.0/8', 30),
      family: 4,
      nodes: b / 20,
      blocksEach: 20,
    })),
    // Nodes: ever more other nodes, each holding one /26 block of a /8.
    ...upTo([10, 1000, 5000, 20_000]).map((n): Case => ({
      dimension: 'nodes',
      label: `${n} nodes`,
      pool: v4('10.0.0.0/8'),
      family: 4,
      nodes: n,
      blocksEach: 1,
    })),
    // The probe node's own blocks: it holds 20 to 1,000 /30 blocks (one address each), and every timed ADD claims another.
    ...upTo([20, 200, 1000]).map((b): Case => ({
      dimension: 'own blocks',
      label: `owns ${b} blocks`,
      pool: v4('10.0.0.0/8', 30),
      family: 4,
      nodes: 3,
      blocksEach: 1,
      probeOwns: b,
    })),
    // Borrowing: the probe node is at its cap (one full /26), every timed ADD borrows from one of the other nodes' blocks.
    ...upTo([10, 1000, 5000]).map((n): Case => ({
      dimension: 'borrowing at the cap',
      label: `${n} nodes`,
      pool: v4('10.0.0.0/8'),
      family: 4,
      nodes: n,
      blocksEach: 1,
      atCap: true,
    })),
  ];
}

/** A table per dimension. */
export function tables(rows: readonly Row[]): string[] {
  const out: string[] = [];
  for (const dim of [...new Set(rows.map((r) => r.case.dimension))]) {
    out.push(`ADD by ${dim} (a new agent's ${rows[0] ? PROBE : 0} ADDs on a node of its own, SQLite on /dev/shm):`);
    out.push(
      '| case | blocks held by others | first ADD ms | ADD p50 ms | ADD p99 ms | round trips/ADD | blocks listed/ADD | heap retained KiB |',
      '|---|---|---|---|---|---|---|---|',
    );
    for (const r of rows.filter((x) => x.case.dimension === dim)) {
      out.push(
        `| ${r.case.label} | ${r.blocks} | ${r.firstMs.toFixed(2)} | ${r.p50Ms.toFixed(3)} | ${r.p99Ms.toFixed(3)} | ${r.roundTripsPerAdd.toFixed(2)} | ${(r.listedPerAdd ?? NaN).toFixed(1)} | ${Number.isFinite(r.heapKiB) ? r.heapKiB.toFixed(0) : '-'} |`,
      );
    }
  }
  return out;
}

async function child(): Promise<void> {
  const dir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'podipam-add-scale-'));
  try {
    const rows: Row[] = [];
    for (const c of cases()) {
      const t = performance.now();
      rows.push(await measureCase(c, dir));
      process.stderr.write(`  add-scale: ${c.dimension} ${c.label} (${((performance.now() - t) / 1000).toFixed(1)} s)\n`);
    }
    process.stdout.write(`RESULT ${JSON.stringify(rows)}\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function run(): Promise<string[]> {
  // A child with --expose-gc: the retained heap is measured after a full GC.
  const p = spawn(process.execPath, ['--expose-gc', fileURLToPath(import.meta.url)], {
    env: { ...process.env, PODIPAM_BENCH_ADD_SCALE_CHILD: '1' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let stdout = '';
  p.stdout.setEncoding('utf8').on('data', (d: string) => void (stdout += d));
  const [code] = (await once(p, 'close')) as [number | null];
  const m = /^RESULT (.*)$/m.exec(stdout);
  if (code !== 0 || !m) throw new Error(`add-scale child failed (${code}): ${stdout.slice(-500)}`);
  const lines = tables(JSON.parse(m[1]!) as Row[]);
  for (const l of lines) console.log(l);
  return lines;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  if (process.env.PODIPAM_BENCH_ADD_SCALE_CHILD) await child();
  else await run();
}
