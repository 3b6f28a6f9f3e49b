/**
 * The cluster (block IPAM) back end, dual-stack throughout, on SQLite and on etcd with 1 and
 * 3 members (started here with the test helper, data on /dev/shm; the SQLite files go there
 * too so both engines get the same storage):
 *
 *   plugin   real `bin/podipam` ADD processes: sequential ADDs (p50/p99 per process) and a
 *            burst with 16 in flight over 4 nodes (ADDs/s); datastore round trips per ADD and
 *            DEL as counted by each plugin process (PODIPAM_STATS=1), not guessed
 *   service  in-process ClusterIpam.assign on 50 nodes with a claimed block each: p50/p99,
 *            allocations/s, round trips — side by side with Calico's call pattern replayed on
 *            the same store (libcalico-go autoAssign per family: list reservations, list pools,
 *            list the host's affinities, get config, get block, get handle, CAS handle, CAS block)
 *   scale    5,000 nodes x 30 pods = 150,000 dual-stack pods in-process on each store, each run
 *            in a child process of its own: wall time, peak RSS and heap, heap retained after a
 *            full GC, round trips per pod (node start-up and block claims included)
 *
 * Knobs: PODIPAM_BENCH_SEQ (100), PODIPAM_BENCH_BURST (256), PODIPAM_BENCH_SERVICE (1000),
 * PODIPAM_BENCH_SCALE_NODES (5000), PODIPAM_BENCH_SCALE_PODS (30),
 * PODIPAM_BENCH_SCALE_STORES (memory,sqlite,etcd1,etcd3). Run alone: `node dist/bench/cluster.js`.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { allocateOrdinals } from '../src/alloc/block.js';
import { decodeBlock, encodeBlock } from '../src/cluster/records/block-record.js';
import { ClusterIpam } from '../src/cluster/index.js';
import { adjustHandle, decodeHandle, encodeHandle } from '../src/cluster/records/handle-record.js';
import { CONFIG_KEY, POOL_PREFIX, RESERVATION_PREFIX, affinityPrefix, blockKey, handleKey, parseAffinityKey } from '../src/cluster/records/keys.js';
import { decodePool } from '../src/cluster/records/pool-record.js';
import { formatPrefix } from '../src/ip/index.js';
import { openStore, type Store } from '../src/store/index.js';
import { startEtcd } from '../test/helpers/etcd.js';
import { PODIPAM_BIN, type PluginRun, runPlugin } from '../test/helpers/plugin.js';
import { makeTempDir } from '../test/helpers/tmp.js';

const SEQ = Number(process.env.PODIPAM_BENCH_SEQ ?? 100);
const BURST = Number(process.env.PODIPAM_BENCH_BURST ?? 256);
const SERVICE = Number(process.env.PODIPAM_BENCH_SERVICE ?? 1000);
const SCALE_NODES = Number(process.env.PODIPAM_BENCH_SCALE_NODES ?? 5000);
const SCALE_PODS = Number(process.env.PODIPAM_BENCH_SCALE_PODS ?? 30);
const SCALE_STORES = (process.env.PODIPAM_BENCH_SCALE_STORES ?? 'memory,sqlite,etcd1,etcd3').split(',');
const SHM = existsSync('/dev/shm') ? '/dev/shm' : undefined;

interface Backend {
  readonly name: string;
  readonly url: string;
  stop(): Promise<void>;
}

async function backend(kind: string): Promise<Backend> {
  if (kind === 'memory') return { name: 'memory', url: 'memory:', stop: async () => undefined };
  if (kind === 'sqlite') {
    const dir = makeTempDir('bench-cluster');
    return { name: 'sqlite', url: `sqlite:${join(SHM ?? dir.path, `podipam-bench-${process.pid}-${Date.now()}.db`)}`, stop: async () => dir.remove() };
  }
  const members = kind === 'etcd3' ? 3 : 1;
  const etcd = await startEtcd({ members });
  return { name: `etcd x${members}`, url: etcd.url, stop: () => etcd.stop() };
}

async function withBackend<T>(kind: string, fn: (b: Backend) => Promise<T>): Promise<T> {
  const b = await backend(kind);
  try {
    return await fn(b);
  } finally {
    await b.stop();
    if (b.url.startsWith('sqlite:')) for (const s of ['', '-wal', '-shm']) await import('node:fs').then((fs) => fs.rmSync(b.url.slice(7) + s, { force: true }));
  }
}

/** The bench pools: a v4 /12 (16,384 blocks of /26) and a v6 /104 (262,144 blocks of /122). */
async function pools(store: Store): Promise<void> {
  const c = new ClusterIpam(store);
  await c.createPool({ name: 'bench-v4', cidr: '10.0.0.0/12' });
  await c.createPool({ name: 'bench-v6', cidr: 'fd00:be::/104' });
}

async function poolsAt(url: string): Promise<void> {
  const store = await openStore(url);
  try {
    await pools(store);
  } finally {
    await store.close();
  }
}

const q = (xs: readonly number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))] ?? NaN;
const f1 = (x: number): string => x.toFixed(1);
const f2 = (x: number): string => x.toFixed(2);
const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

function table(rows: readonly (readonly string[])[]): void {
  const w = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  for (const r of rows) console.log(r.map((c, i) => (i === 0 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('  '));
}

/** Round trips a plugin run reported on stderr. */
function statsOf(r: PluginRun): number {
  const m = /podipam-stats (\{.*\})/.exec(r.stderr);
  if (r.code !== 0 || !m) throw new Error(`plugin failed (${r.code}): ${r.stdout}${r.stderr}`);
  return (JSON.parse(m[1]!) as { roundTrips: number }).roundTrips;
}

async function plugin(kind: string): Promise<string[]> {
  return withBackend(kind, async (b) => {
    await poolsAt(b.url);
    const cache = makeTempDir('bench-cluster-cache');
    try {
      const call = (command: string, id: string, node: string) =>
        runPlugin(PODIPAM_BIN, {
          command,
          containerId: id,
          ifname: 'eth0',
          env: { PODIPAM_STATS: '1' },
          config: { cniVersion: '1.0.0', name: 'bench', ipam: { type: 'podipam', datastore: b.url, nodeName: node, cacheDir: cache.path } },
        });
      // The first ADD on a node reads pools/settings and claims its blocks: reported apart.
      const coldRt = statsOf(await call('ADD', 'warm', 'seq'));
      for (let n = 0; n < 4; n++) statsOf(await call('ADD', `warm-${n}`, `burst-${n}`));
      const addMs: number[] = [];
      const addRt: number[] = [];
      for (let i = 0; i < SEQ; i++) {
        const r = await call('ADD', `s${i}`, 'seq');
        addMs.push(r.ms);
        addRt.push(statsOf(r));
      }
      const delMs: number[] = [];
      const delRt: number[] = [];
      for (let i = 0; i < SEQ; i++) {
        const r = await call('DEL', `s${i}`, 'seq');
        delMs.push(r.ms);
        delRt.push(statsOf(r));
      }
      let next = 0;
      const burstRt: number[] = [];
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          while (next < BURST) {
            const i = next++;
            burstRt.push(statsOf(await call('ADD', `b${i}`, `burst-${i % 4}`)));
          }
        }),
      );
      const burstS = (performance.now() - t0) / 1000;
      const row = [
        b.name,
        String(coldRt),
        f1(q(addMs, 0.5)),
        f1(q(addMs, 0.99)),
        f2(mean(addRt)),
        f1(q(delMs, 0.5)),
        f2(mean(delRt)),
        f1(BURST / burstS),
        f2(mean(burstRt)),
      ];
      return row;
    } finally {
      cache.remove();
    }
  });
}

/** Calico's steady-state call sequence for one dual-stack pod, replayed on a Store (see module comment). */
async function calicoPattern(store: Store, node: string, handle: string): Promise<void> {
  for (const family of [4, 6]) {
    await store.list(RESERVATION_PREFIX);
    (await store.list(POOL_PREFIX)).map(decodePool).filter((p) => p.cidr.family === family);
    const affinities = await store.list(affinityPrefix(node));
    await store.get(CONFIG_KEY);
    for (const a of affinities) {
      const cidr = parseAffinityKey(a.key)!.cidr;
      if (cidr.family !== family) continue;
      const e = (await store.get(blockKey(cidr)))!;
      const r = allocateOrdinals(decodeBlock(e), 1, handle);
      if (r.ordinals.length === 0) continue;
      const h = await store.get(handleKey(handle));
      const rec = adjustHandle(h ? decodeHandle(h) : { node, blocks: new Map() }, new Map([[formatPrefix(cidr), 1]]));
      await store.txn([{ key: handleKey(handle), rev: h?.rev ?? 0 }], [{ type: 'put', key: handleKey(handle), value: encodeHandle(rec) }]);
      const u = await store.txn([{ key: e.key, rev: e.rev }], [{ type: 'put', key: e.key, value: encodeBlock(r.block) }]);
      if (!u.succeeded) throw new Error('conflict: the bench runs one client per node');
      break;
    }
  }
}

async function service(kind: string): Promise<string[][]> {
  return withBackend(kind, async (b) => {
    const store = await openStore(b.url);
    try {
      await pools(store);
      const c = new ClusterIpam(store);
      const nodes = Array.from({ length: 50 }, (_, i) => `svc-${i}`);
      for (const n of nodes) await c.assign({ node: n, handle: `warm-${n}`, auto: 'each-family' });
      const measure = async (name: string, fn: (node: string, i: number) => Promise<unknown>): Promise<string[]> => {
        const ms: number[] = [];
        const rt0 = store.roundTrips;
        const t0 = performance.now();
        for (let i = 0; i < SERVICE; i++) {
          const s = performance.now();
          await fn(nodes[i % nodes.length]!, i);
          ms.push(performance.now() - s);
        }
        const total = (performance.now() - t0) / 1000;
        return [`${b.name} ${name}`, f2(q(ms, 0.5)), f2(q(ms, 0.99)), f1(SERVICE / total), f2((store.roundTrips - rt0) / SERVICE)];
      };
      const rows = [
        await measure('podipam ADD', (node, i) => c.assign({ node, handle: `p${i}`, auto: 'each-family' })),
        await measure('podipam DEL', (node, i) => c.releaseHandle(`p${i}`, node)),
        await measure('Calico pattern ADD', (node, i) => calicoPattern(store, node, `c${i}`)),
      ];
      const [ours, , calico] = rows;
      rows.push([
        `${b.name} ratio Calico/podipam`,
        `${f1(Number(calico![1]) / Number(ours![1]))}x`,
        `${f1(Number(calico![2]) / Number(ours![2]))}x`,
        `${f1(Number(ours![3]) / Number(calico![3]))}x`,
        `${f1(Number(calico![4]) / Number(ours![4]))}x`,
      ]);
      return rows;
    } finally {
      await store.close();
    }
  });
}

/**
 * One scale run in a child process of its own (so peak RSS belongs to that store alone),
 * started with --expose-gc to also report the heap still retained after a full GC.
 */
async function scale(kind: string): Promise<string[]> {
  return withBackend(kind, async (b) => {
    const r = spawnSync(process.execPath, ['--expose-gc', fileURLToPath(import.meta.url)], {
      env: {
        ...process.env,
        PODIPAM_BENCH_SCALE_CHILD: JSON.stringify({ name: b.name, url: kind === 'memory' ? 'memory:' : b.url, etcd: kind.startsWith('etcd') }),
      },
      stdio: ['ignore', 'pipe', 'inherit'],
      encoding: 'utf8',
      timeout: 3_600_000,
    });
    const row = /^ROW (.*)$/m.exec(r.stdout ?? '');
    if (r.status !== 0 || !row) throw new Error(`scale ${b.name} failed (${r.status ?? r.signal}): ${(r.stdout ?? '').slice(-300)}`);
    return JSON.parse(row[1]!) as string[];
  });
}

/** The body of a scale child: 5,000 nodes x 30 pods through one ClusterIpam; prints `ROW [...]`. */
async function scaleChild(spec: { name: string; url: string; etcd: boolean }): Promise<void> {
  const store = await openStore(spec.url, { timeoutMs: 10_000 });
  try {
    await pools(store);
    const c = new ClusterIpam(store);
    const inFlight = spec.etcd ? 32 : 1;
    let peakRss = 0;
    let peakHeap = 0;
    const sample = (): void => {
      const m = process.memoryUsage();
      peakRss = Math.max(peakRss, m.rss);
      peakHeap = Math.max(peakHeap, m.heapUsed);
    };
    const rt0 = store.roundTrips;
    const t0 = performance.now();
    let next = 0;
    let done = 0;
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (next < SCALE_NODES) {
          const n = next++;
          for (let p = 0; p < SCALE_PODS; p++) {
            // A 64-hex container ID, as containerd makes them: the handle's real size.
            const id = n.toString(16).padStart(32, '0') + p.toString(16).padStart(32, '0');
            await c.assign({ node: `node-${n}`, handle: `k8s-pod-network:${id}:eth0`, auto: 'each-family' });
          }
          // Sampled per node: on the memory store the loop never yields to timers.
          sample();
          if (++done % 1000 === 0) process.stderr.write(`  scale ${spec.name}: ${done} nodes, ${((performance.now() - t0) / 1000).toFixed(0)} s\n`);
        }
      }),
    );
    const secs = (performance.now() - t0) / 1000;
    const rts = store.roundTrips - rt0;
    (globalThis as { gc?: () => void }).gc?.();
    const retained = process.memoryUsage().heapUsed;
    const pods = SCALE_NODES * SCALE_PODS;
    const u = await c.usage();
    const allocated = u.pools.reduce((n, p) => n + p.allocated, 0);
    if (allocated !== 2 * pods) throw new Error(`scale ${spec.name}: ${allocated} addresses allocated, expected ${2 * pods}`);
    const mib = (x: number): string => f1(x / 2 ** 20);
    const row = [
      spec.name,
      `${SCALE_NODES}x${SCALE_PODS}`,
      f1(secs),
      f1(pods / secs),
      f2(rts / pods),
      String(u.blocks.length),
      mib(peakRss),
      mib(peakHeap),
      mib(retained),
    ];
    process.stdout.write(`ROW ${JSON.stringify(row)}\n`);
  } finally {
    await store.close();
  }
}

/** Runs the three parts and prints their tables; returns summary lines. */
export async function run(): Promise<string[]> {
  const summary: string[] = [];

  console.log(`plugin processes (dual-stack), ${SEQ} sequential ADDs then DELs on one node, then ${BURST} ADDs with 16 in flight on 4 nodes`);
  const pr: string[][] = [['store', 'RT cold ADD', 'ADD p50 ms', 'ADD p99 ms', 'RT/ADD', 'DEL p50 ms', 'RT/DEL', 'burst ADD/s', 'RT/ADD burst']];
  for (const k of ['sqlite', 'etcd1', 'etcd3']) pr.push(await plugin(k));
  table(pr);
  for (const r of pr.slice(1)) summary.push(`plugin ${r[0]}: ADD p50 ${r[2]} ms p99 ${r[3]} ms, ${r[4]} round trips/ADD, ${r[7]} ADD/s with 16 in flight`);

  console.log(`\nin-process service, ${SERVICE} dual-stack pods over 50 nodes, podipam vs Calico's call pattern on the same store`);
  const sr: string[][] = [['store / client', 'p50 ms', 'p99 ms', 'per s', 'RT/pod']];
  for (const k of ['sqlite', 'etcd1', 'etcd3']) sr.push(...(await service(k)));
  table(sr);
  for (const r of sr.slice(1).filter((x) => x[0]!.includes('ratio') || x[0]!.endsWith('podipam ADD')))
    summary.push(`service ${r[0]}: p50 ${r[1]}, ${r[3]}/s, RT ${r[4]}`);

  console.log(`\nscale: ${SCALE_NODES} nodes x ${SCALE_PODS} dual-stack pods, in-process (memory: 1 client; sqlite: 1; etcd: 32 nodes in flight)`);
  const cr: string[][] = [['store', 'size', 'seconds', 'pods/s', 'RT/pod', 'blocks', 'peak RSS MiB', 'peak heap MiB', 'heap after GC MiB']];
  for (const k of SCALE_STORES) {
    try {
      cr.push(await scale(k));
    } catch (e) {
      cr.push([k, 'FAILED', (e as Error).message.slice(0, 60), '', '', '', '', '', '']);
    }
  }
  table(cr);
  for (const r of cr.slice(1)) summary.push(`scale ${r[0]} ${r[1]}: ${r[2]} s, ${r[4]} RT/pod, peak RSS ${r[6]} MiB, heap after GC ${r[8]} MiB`);
  return summary;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const child = process.env.PODIPAM_BENCH_SCALE_CHILD;
  if (child) await scaleChild(JSON.parse(child) as { name: string; url: string; etcd: boolean });
  else for (const l of await run()) console.log(l);
}
