/**
 * Server-side aggregation of the cluster store for the dashboard, the API and the metrics:
 * per pool and per block counts, per node block and address counts — never one row per
 * address. One pass over `pools/`, `blocks/` and `nodes/` (paged lists), reading each block's
 * JSON only for its CIDR, affinity and number of allocations. On a 150,000-pod store that is
 * a few thousand block records; `SummaryCache` shares one pass between every caller for
 * `ttlMs`, so many open dashboards and a Prometheus scrape cost one read.
 */
import { usableCount } from '../alloc/block-addressing.js';
import { blockAt, blockCount, poolUsableCount } from '../alloc/block-layout.js';
import { BLOCK_PREFIX, POOL_PREFIX, parseBlockKey } from '../cluster/keys.js';
import { decodePool, type Pool } from '../cluster/pool-record.js';
import { listAll } from '../store/list-all.js';
import { decodeNodeRecord, NODE_PREFIX } from '../controller/node-record.js';
import { type Prefix, formatPrefix, prefixContainsPrefix } from '../ip/index.js';
import type { Store } from '../store/index.js';

export interface PoolSummary {
  readonly name: string;
  readonly cidr: string;
  readonly family: 4 | 6;
  readonly blockSize: number;
  readonly nodeSelector: string;
  readonly disabled: boolean;
  readonly deleting: boolean;
  /** Addresses the pool can hand out, exact: blocks × usable addresses per block (JSON: a number up to 2^53 − 1, a decimal string beyond). */
  readonly capacity: bigint;
  readonly allocated: number;
  /** Blocks claimed. */
  readonly blocks: number;
  /** Blocks the pool can be cut into, exact (JSON as `capacity`). */
  readonly blockSlots: bigint;
  /** Usable addresses per block (network, gateway and IPv4 broadcast excluded). */
  readonly blockCapacity: number;
}

export interface BlockSummary {
  readonly cidr: string;
  readonly prefix: Prefix;
  readonly node: string | null;
  readonly allocated: number;
  /** Usable addresses in the block. */
  readonly capacity: number;
  /** The pool holding the block, or null for a block no pool covers (its pool was deleted). */
  readonly pool: string | null;
}

export interface NodeSummary {
  readonly name: string;
  readonly podCIDRs: readonly string[];
  readonly labels: Readonly<Record<string, string>>;
  /** False for a node known only from block affinities (a CNI node never registered). */
  readonly registered: boolean;
  readonly deleting: boolean;
  readonly createdAt?: string;
  readonly blocks: number;
  /** Addresses allocated in the node's blocks. */
  readonly allocated: number;
}

export interface ClusterSummary {
  readonly generatedAt: string;
  readonly pools: readonly PoolSummary[];
  /** Every block, in address order within each family (v4 first). */
  readonly blocks: readonly BlockSummary[];
  readonly nodes: readonly NodeSummary[];
  readonly totals: { readonly pools: number; readonly nodes: number; readonly blocks: number; readonly allocated: number; readonly capacity: bigint };
}

/** Reads the whole aggregate in one pass. Records that do not decode are skipped (ipam check reports them). */
export async function summarize(store: Store): Promise<ClusterSummary> {
  const [poolEntries, blockEntries, nodeEntries] = await Promise.all([listAll(store, POOL_PREFIX), listAll(store, BLOCK_PREFIX), listAll(store, NODE_PREFIX)]);
  const pools: Pool[] = [];
  for (const e of poolEntries) {
    try {
      pools.push(decodePool(e));
    } catch {
      /* reported by ipam check */
    }
  }
  const blocks: BlockSummary[] = [];
  const perPool = new Map<string, { allocated: number; blocks: number }>(pools.map((p) => [p.name, { allocated: 0, blocks: 0 }]));
  for (const e of blockEntries) {
    const prefix = parseBlockKey(e.key);
    if (!prefix) continue;
    let node: string | null = null;
    let allocated = 0;
    try {
      const o = JSON.parse(e.value) as { affinity?: unknown; allocations?: unknown };
      node = typeof o.affinity === 'string' ? o.affinity : null;
      allocated = o.allocations && typeof o.allocations === 'object' ? Object.keys(o.allocations).length : 0;
    } catch {
      continue;
    }
    const pool = pools.find((p) => p.cidr.family === prefix.family && prefixContainsPrefix(p.cidr, prefix));
    if (pool) {
      const c = perPool.get(pool.name) as { allocated: number; blocks: number };
      c.allocated += allocated;
      c.blocks += 1;
    }
    const capacity = Number(usableCount(prefix));
    blocks.push({ cidr: formatPrefix(prefix), prefix, node, allocated, capacity, pool: pool?.name ?? null });
  }
  blocks.sort((a, b) => a.prefix.family - b.prefix.family || (a.prefix.base < b.prefix.base ? -1 : a.prefix.base > b.prefix.base ? 1 : 0));

  const nodes = new Map<string, { podCIDRs: readonly string[]; labels: Readonly<Record<string, string>>; registered: boolean; deleting: boolean; createdAt?: string; blocks: number; allocated: number }>();
  for (const e of nodeEntries) {
    try {
      const r = decodeNodeRecord(e.key, e.value);
      nodes.set(r.name, { podCIDRs: r.podCIDRs, labels: r.labels, registered: true, deleting: r.deleting === true, createdAt: r.createdAt, blocks: 0, allocated: 0 });
    } catch {
      /* skipped, as listNodes does */
    }
  }
  for (const b of blocks) {
    if (b.node === null) continue;
    let n = nodes.get(b.node);
    if (!n) {
      n = { podCIDRs: [], labels: {}, registered: false, deleting: false, blocks: 0, allocated: 0 };
      nodes.set(b.node, n);
    }
    n.blocks += 1;
    n.allocated += b.allocated;
  }

  const poolSummaries: PoolSummary[] = pools.map((p) => {
    const c = perPool.get(p.name) as { allocated: number; blocks: number };
    return {
      name: p.name,
      cidr: formatPrefix(p.cidr),
      family: p.cidr.family,
      blockSize: p.blockSize,
      nodeSelector: p.nodeSelector.text,
      disabled: p.disabled,
      deleting: p.deleting,
      capacity: poolUsableCount(p.cidr, p.blockSize),
      allocated: c.allocated,
      blocks: c.blocks,
      blockSlots: blockCount(p.cidr, p.blockSize),
      blockCapacity: Number(usableCount(blockAt(p.cidr, p.blockSize, 0n))),
    };
  });
  const nodeSummaries: NodeSummary[] = [...nodes].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map(([name, n]) => ({ name, ...n }));
  return {
    generatedAt: new Date().toISOString(),
    pools: poolSummaries,
    blocks,
    nodes: nodeSummaries,
    totals: {
      pools: poolSummaries.length,
      nodes: nodeSummaries.length,
      blocks: blocks.length,
      allocated: poolSummaries.reduce((s, p) => s + p.allocated, 0),
      capacity: poolSummaries.reduce((s, p) => s + p.capacity, 0n),
    },
  };
}

/** How long a summary is trusted without a change seen by the watch, as a safety net. */
const QUIET_MAX_AGE_MS = 60_000;

/**
 * Shares one `summarize` pass between callers: a result younger than `ttlMs` — or than five
 * times the last pass took, on a store so big that a pass is slow — is reused, and callers
 * arriving while a pass runs wait for that pass. `invalidate()` (after a write made
 * through the API) makes the next call read afresh, so a client sees its own writes.
 * With `follow()` running, a watch on the store replaces the polling of an idle store: a
 * summary is reused past `ttlMs` for as long as the watch has seen no write since its pass
 * began (up to a minute), so open dashboards on a quiet cluster cost no reads at all.
 */
export class SummaryCache {
  readonly #store: Store;
  readonly #ttlMs: number;
  #value: ClusterSummary | undefined;
  #at = 0;
  #inFlight: Promise<ClusterSummary> | undefined;
  #generation = 0;
  #lastTookMs = 0;
  /** Writes the watch has seen; the count when the cached pass began. */
  #changes = 0;
  #valueChanges = -1;
  #following = false;

  constructor(store: Store, ttlMs = 1000) {
    this.#store = store;
    this.#ttlMs = ttlMs;
  }

  get(): Promise<ClusterSummary> {
    const age = Date.now() - this.#at;
    const quiet = this.#following && this.#valueChanges === this.#changes && age < QUIET_MAX_AGE_MS;
    if (this.#value && (quiet || age < Math.max(this.#ttlMs, 5 * this.#lastTookMs))) return Promise.resolve(this.#value);
    if (this.#inFlight) return this.#inFlight;
    const gen = this.#generation;
    const changes = this.#changes;
    const started = Date.now();
    const p = summarize(this.#store).then(
      (v) => {
        this.#lastTookMs = Date.now() - started;
        if (gen === this.#generation) {
          this.#value = v;
          this.#at = started;
          this.#valueChanges = changes;
        }
        this.#inFlight = undefined;
        return v;
      },
      (e: unknown) => {
        this.#inFlight = undefined;
        throw e;
      },
    );
    this.#inFlight = p;
    return p;
  }

  invalidate(): void {
    this.#generation++;
    this.#value = undefined;
    this.#inFlight = undefined;
  }

  /**
   * Watches the store (every key: pools, blocks, nodes and handles all feed the summary)
   * until the returned stop is called. A failed watch (compacted history, store down) drops
   * back to the TTL and watches again from the current revision after a pause.
   */
  follow(log: (line: string) => void = () => {}): () => Promise<void> {
    const ac = new AbortController();
    const loop = (async () => {
      while (!ac.signal.aborted) {
        try {
          const from = (await this.#store.revision()) + 1;
          this.#changes++; // whatever happened before the watch began counts as a change
          this.#following = true;
          for await (const batch of this.#store.watch('', from, { signal: ac.signal })) {
            if (batch.length > 0) this.#changes++;
          }
          break; // aborted, or the store closed
        } catch (e) {
          if (ac.signal.aborted) break;
          log(`summary watch failed, using the TTL meanwhile: ${(e as Error).message}`);
        }
        this.#following = false;
        if (!ac.signal.aborted) await new Promise((r) => setTimeout(r, 1000));
      }
      this.#following = false;
    })();
    return async () => {
      ac.abort();
      await loop;
    };
  }
}
