/**
 * `podipam serve` on a 150,000-pod store (Kubernetes' supported maximum: 5,000 nodes × 30
 * pods, dual-stack): how long the dashboard's requests take and how many bytes they move,
 * cold (first pass over the store) and warm (the shared summary cache), plus `check` and a
 * Prometheus scrape. The store is SQLite, as `npm start` uses, written directly by
 * test/helpers/fill-cluster-store.ts (one /26 and one /122 block per node, 30 pods each,
 * every pod a handle) — filling it through the allocator would measure the allocator, which
 * `bench/cluster` does.
 *
 * Knobs: PODIPAM_BENCH_SERVE_NODES (default 5000), PODIPAM_BENCH_SERVE_PODS (default 30).
 * Run alone: `node dist/bench/serve.js`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { formatPrefix, subPrefix } from '../src/ip/index.js';
import { openStore } from '../src/store/index.js';
import { startServer } from '../src/server/start-server.js';
import { silentLog } from '../src/log/logger.js';
import { FILL_V4, fillClusterStore } from '../test/helpers/fill-cluster-store.js';

const NODES = Number(process.env.PODIPAM_BENCH_SERVE_NODES ?? 5000);
const PODS = Number(process.env.PODIPAM_BENCH_SERVE_PODS ?? 30);
const V4 = FILL_V4;

async function timed(url: string): Promise<{ ms: number; bytes: number; status: number }> {
  const t0 = performance.now();
  const res = await fetch(url);
  const body = await res.arrayBuffer();
  return { ms: performance.now() - t0, bytes: body.byteLength, status: res.status };
}

export async function run(): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'podipam-bench-serve-'));
  const url = `sqlite:${join(dir, 'podipam.db')}`;
  const lines: string[] = [];
  try {
    const store = await openStore(url);
    const t0 = performance.now();
    await fillClusterStore(store, NODES, PODS);
    await store.close();
    const fillS = (performance.now() - t0) / 1000;
    console.log(`filled ${NODES} nodes × ${PODS} pods (${NODES * PODS} pods, ${2 * NODES} blocks) into SQLite in ${fillS.toFixed(1)} s`);

    const server = await startServer({ host: '127.0.0.1', port: 0, datastoreUrl: url, tokens: {}, defaultPools: [], log: silentLog, summaryTtlMs: 60_000 });
    try {
      const base = server.url;
      const someBlock = encodeURIComponent(formatPrefix(subPrefix(V4, 26, 7n)));
      const requests: [string, string][] = [
        ['GET /api/v1/overview (cold: one pass over the store)', '/api/v1/overview'],
        ['GET /api/v1/overview (warm)', '/api/v1/overview'],
        ['GET /api/v1/pools/v4/blocks (block map)', '/api/v1/pools/v4/blocks'],
        ['GET /api/v1/pools/v6/blocks (block map)', '/api/v1/pools/v6/blocks'],
        ['GET /api/v1/nodes?limit=50', '/api/v1/nodes?limit=50'],
        ['GET /api/v1/blocks/:cidr (one block)', `/api/v1/blocks/${someBlock}`],
        ['GET /api/v1/allocations?limit=100', '/api/v1/allocations?limit=100'],
        ['GET /metrics', '/metrics'],
        ['GET /api/v1/check (every record)', '/api/v1/check'],
      ];
      console.log(`${'request'.padEnd(56)} ${'ms'.padStart(8)} ${'bytes'.padStart(10)}`);
      let pageLoad = 0;
      let pageBytes = 0;
      for (const [name, path] of requests) {
        const r = await timed(base + path);
        if (r.status !== 200) throw new Error(`${path} answered ${r.status}`);
        console.log(`${name.padEnd(56)} ${r.ms.toFixed(1).padStart(8)} ${String(r.bytes).padStart(10)}`);
        if (/overview \(cold|v4\/blocks|nodes\?limit/.test(name)) {
          pageLoad += r.ms;
          pageBytes += r.bytes;
        }
        if (/cold|v4\/blocks|check/.test(name)) lines.push(`${NODES * PODS} pods: ${name} ${r.ms.toFixed(0)} ms, ${(r.bytes / 1024).toFixed(0)} KiB`);
      }
      lines.push(`${NODES * PODS} pods: dashboard first load (overview + block map + nodes) ${pageLoad.toFixed(0)} ms, ${(pageBytes / 1024).toFixed(0)} KiB`);
      const mem = process.memoryUsage().rss / 2 ** 20;
      console.log(`server + bench process RSS ${mem.toFixed(0)} MiB`);
    } finally {
      await server.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return lines;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  for (const l of await run()) console.log(l);
}
