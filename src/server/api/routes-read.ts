/**
 * Read-only API routes: aggregates for the dashboard (overview, block map), pools, blocks,
 * nodes, paged allocations, the check report, pods (routes-pods.ts) and the allocation history (routes-history.ts). Lists of blocks and nodes come from the
 * summary cache; only block detail and allocation pages read block records.
 */
import { ClusterIpam } from '../../cluster/index.js';
import { familyBits, formatPrefix, parsePrefix, prefixContainsPrefix, type Prefix } from '../../ip/index.js';
import type { ApiDeps } from './api-deps.js';
import { heldJson } from './held-json.js';
import { listAllocations } from './allocation-query.js';
import { addPodRoutes } from './routes-pods.js';
import { addHistoryRoutes } from './routes-history.js';
import { addForecastRoutes } from './routes-forecast.js';
import type { BlockSummary, PoolSummary } from '../summary/cluster-summary.js';
import { badField, notFound } from '../http/http-error.js';
import type { HandlerSpec } from '../http/http-server.js';
import type { Router } from '../http/router.js';
import { NAME, NAME_HINT, queryInt } from '../http/validate.js';

/** Pools with at most this many block slots get every slot drawn (unclaimed ones too). */
const MAX_DRAWN_SLOTS = 4096;

export function addReadRoutes(r: Router<HandlerSpec>, d: ApiDeps): void {
  r.add('GET', '/api/v1/overview', {
    run: async () => {
      const s = await d.summary.get();
      return { generatedAt: s.generatedAt, datastore: d.datastoreUrl, totals: s.totals, pools: s.pools };
    },
  });

  r.add('GET', '/api/v1/pools', { run: async () => ({ items: (await d.summary.get()).pools }) });
  r.add('GET', '/api/v1/pools/:name', { run: async (c) => findPool((await d.summary.get()).pools, poolName(c.params.name)) });

  // What a pool still holds, by node and pod (follow a drain to empty).
  r.add('GET', '/api/v1/pools/:name/held', { run: async (c) => heldJson(await d.ipam.poolHeld(poolName(c.params.name))) });

  r.add('GET', '/api/v1/pools/:name/blocks', {
    run: async (c) => {
      const s = await d.summary.get();
      const pool = findPool(s.pools, poolName(c.params.name));
      return blockMap(
        pool,
        s.blocks.filter((b) => b.pool === pool.name),
      );
    },
  });

  r.add('GET', '/api/v1/blocks', {
    run: async (c) => {
      const s = await d.summary.get();
      const pool = c.query.get('pool') ?? undefined;
      const node = c.query.get('node') ?? undefined;
      if (pool !== undefined) findPool(s.pools, poolName(pool, 'pool'));
      const limit = queryInt(c.query, 'limit', 1000, 1, 10_000);
      const after = c.query.get('after') ?? undefined;
      let rows = s.blocks.filter((b) => (pool === undefined || b.pool === pool) && (node === undefined || b.node === node));
      if (after !== undefined) {
        const i = rows.findIndex((b) => b.cidr === after);
        if (i < 0)
          throw badField(
            'after',
            `query parameter "after" ${JSON.stringify(after)} is not a block of this listing: pass the "next" value of the previous page`,
          );
        rows = rows.slice(i + 1);
      }
      const page = rows.slice(0, limit).map(blockJson);
      return rows.length > limit ? { items: page, next: page[page.length - 1]?.cidr } : { items: page };
    },
  });

  r.add('GET', '/api/v1/blocks/:cidr', {
    run: async (c) => {
      const cidr = parseCidrParam(c.params.cidr as string, 'cidr');
      const block = await d.ipam.blockAllocations(cidr);
      if (!block) throw notFound(`block ${formatPrefix(cidr)} does not exist`);
      const pool = (await d.summary.get()).pools.find((p) => p.family === cidr.family && prefixContainsPrefix(parsePrefix(p.cidr), cidr));
      const allocations = block.allocations;
      const pods = await d.ipam.podsOfHandles([...new Set(allocations.map((a) => a.handle))]);
      return {
        cidr: formatPrefix(cidr),
        pool: pool?.name ?? null,
        node: block.node,
        capacity: Number(block.capacity),
        allocated: allocations.length,
        allocations: allocations.map((a) => ({ ip: a.ip, handle: a.handle, pod: pods.get(a.handle) ?? null })),
      };
    },
  });

  r.add('GET', '/api/v1/nodes', {
    run: async (c) => {
      const s = await d.summary.get();
      const q = c.query.get('q')?.trim().toLowerCase();
      const limit = queryInt(c.query, 'limit', 100, 1, 10_000);
      const after = c.query.get('after') ?? undefined;
      let rows = q ? s.nodes.filter((n) => n.name.toLowerCase().includes(q)) : s.nodes;
      const total = rows.length;
      if (after !== undefined) rows = rows.filter((n) => n.name > after);
      const items = rows.slice(0, limit);
      return rows.length > limit ? { items, total, next: items[items.length - 1]?.name } : { items, total };
    },
  });
  r.add('GET', '/api/v1/nodes/:name', {
    run: async (c) => {
      const n = (await d.summary.get()).nodes.find((x) => x.name === c.params.name);
      if (!n) throw notFound(`node "${c.params.name}" does not exist (no record and no block affine to it)`);
      return n;
    },
  });

  r.add('GET', '/api/v1/allocations', {
    run: async (c) => {
      const pool = c.query.get('pool') ?? undefined;
      let poolPrefix: Prefix | undefined;
      if (pool !== undefined) poolPrefix = parsePrefix(findPool((await d.summary.get()).pools, poolName(pool, 'pool')).cidr);
      return listAllocations(d.ipam, {
        pool: poolPrefix,
        node: c.query.get('node') ?? undefined,
        handle: c.query.get('handle') ?? undefined,
        limit: queryInt(c.query, 'limit', 100, 1, 5000),
        after: c.query.get('after') ?? undefined,
      });
    },
  });

  r.add('GET', '/api/v1/check', {
    run: async (c) => {
      // ?maxAge=SECONDS (default 10) bounds how old a shared report may be; 0 asks for a fresh one.
      const report = await d.checks.get(queryInt(c.query, 'maxAge', 10, 0, 3600) * 1000);
      // A problem about a handle record names the handle, so a client can release it by handle.
      const problems = report.problems.map((p) => {
        const handle = ClusterIpam.handleOfKey(p.key);
        return handle === undefined ? p : { ...p, handle };
      });
      return {
        checkedAt: report.checkedAt,
        tookMs: report.tookMs,
        leaks: report.leaks,
        problems,
        ...(report.stickyHolds ? { stickyHolds: report.stickyHolds } : {}),
        ...(report.borrowed ? { borrowed: report.borrowed } : {}),
      };
    },
  });

  addPodRoutes(r, d);
  addHistoryRoutes(r, d);
  addForecastRoutes(r, d);
}

function poolName(name: string | undefined, field = 'name'): string {
  if (name === undefined || !NAME.test(name)) throw badField(field, `pool ${field} must be ${NAME_HINT}: got ${JSON.stringify(name)}`);
  return name;
}

function findPool(pools: readonly PoolSummary[], name: string): PoolSummary {
  const p = pools.find((x) => x.name === name);
  if (!p) throw notFound(`pool "${name}" does not exist`);
  return p;
}

function parseCidrParam(text: string, field: string): Prefix {
  try {
    return parsePrefix(text);
  } catch (e) {
    throw badField(field, `${field} must be a block CIDR such as 10.244.0.64/26 (URL-encoded as 10.244.0.64%2F26): ${(e as Error).message}`);
  }
}

function blockJson(b: BlockSummary): { cidr: string; pool: string | null; node: string | null; allocated: number; capacity: number } {
  return { cidr: b.cidr, pool: b.pool, node: b.node, allocated: b.allocated, capacity: b.capacity };
}

/**
 * The compact block map of a pool: `cells` in address order, each claimed block as
 * `[cidr, nodeIndex (-1: none), allocated]` and each run of unclaimed slots as a count —
 * unclaimed slots only when the pool has at most MAX_DRAWN_SLOTS of them (`slots` is null
 * otherwise, e.g. a /56 IPv6 pool of /122 blocks).
 */
function blockMap(pool: PoolSummary, blocks: readonly BlockSummary[]): Record<string, unknown> {
  const nodes: string[] = [];
  const nodeIndex = new Map<string, number>();
  const idx = (n: string | null): number => {
    if (n === null) return -1;
    let i = nodeIndex.get(n);
    if (i === undefined) {
      i = nodes.length;
      nodes.push(n);
      nodeIndex.set(n, i);
    }
    return i;
  };
  // Blocks of several sizes (the block size changed) do not fall on one grid of slots: listed only.
  const drawAll = pool.formerBlockSizes.length === 0 && pool.blockSlots <= BigInt(MAX_DRAWN_SLOTS);
  const slots = Number(pool.blockSlots); // exact when drawAll
  const cells: (number | [string, number, number])[] = [];
  const base = parsePrefix(pool.cidr).base;
  const shift = BigInt(familyBits(pool.family) - pool.blockSize);
  let nextSlot = 0;
  for (const b of blocks) {
    if (drawAll) {
      const slot = Number((b.prefix.base - base) >> shift);
      if (slot > nextSlot) cells.push(slot - nextSlot);
      nextSlot = slot + 1;
    }
    cells.push([b.cidr, idx(b.node), b.allocated]);
  }
  if (drawAll && slots > nextSlot) cells.push(slots - nextSlot);
  return {
    pool: pool.name,
    cidr: pool.cidr,
    blockSize: pool.blockSize,
    blockCapacity: pool.blockCapacity,
    slots: drawAll ? slots : null,
    claimed: blocks.length,
    nodes,
    cells,
  };
}
