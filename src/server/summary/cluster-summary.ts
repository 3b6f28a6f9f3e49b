/**
 * Server-side aggregation of the cluster store for the dashboard, the API and the metrics:
 * per pool and per block counts, per node block and address counts — never one row per
 * address. The counts are ClusterIpam's one utilisation computation (exact, bigint; the same
 * `podipam ipam show` prints), joined here with the controller's node records and, for nodes whose agent keeps a warm pool,
 * idle vs in use (warm-usage.ts, from the agents' pod records). On a
 * 150,000-pod store that is a few thousand block records; `SummaryCache` shares one pass
 * between every caller, so many open dashboards and a Prometheus scrape cost one read.
 */
import { ClusterIpam, reuseAfterText } from '../../cluster/index.js';
import { listNodes, listNodeTombstones } from '../../controller/list-nodes.js';
import { type Prefix, formatPrefix } from '../../ip/index.js';
import { followPrefix, type Store } from '../../store/index.js';
import { silentLog, type Log } from '../../log/logger.js';
import { warmIdleTest } from '../../warm/warm-usage.js';
import { loadSnapshot } from '../../cluster/views/index.js';
import { type FamilyHeadroom, headroomByNode } from '../../cluster/views/index.js';

export interface PoolSummary {
  readonly name: string;
  readonly cidr: string;
  readonly family: 4 | 6;
  readonly blockSize: number;
  readonly nodeSelector: string;
  readonly disabled: boolean;
  /** `pool drain`: serving nothing new, holding what it holds until its pods go. */
  readonly draining: boolean;
  readonly deleting: boolean;
  /** Sizes its older blocks may still have (its block size changed); [] when it never did. */
  readonly formerBlockSizes: readonly number[];
  /** The reuse quarantine as printed ("30s"; "off" when unset). */
  readonly reuseAfter: string;
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
  /** Of `allocated`, addresses idle in a node agent's warm pool. */
  readonly idle: number;
  /** Usable addresses in the block. */
  readonly capacity: number;
  /** The pool holding the block, or null for a block no pool covers (its pool was deleted). */
  readonly pool: string | null;
}

export interface NodeSummary {
  readonly name: string;
  readonly podCIDRs: readonly string[];
  readonly labels: Readonly<Record<string, string>>;
  /** False for a node known only from block affinities (a CNI node never registered, or one whose record was deleted). */
  readonly registered: boolean;
  /**
   * For a node without a record: when its record was deleted (its tombstone), the proof on
   * which cluster GC frees its blocks. Absent for one that never had a record: GC leaves it be.
   */
  readonly deletedAt?: string;
  readonly deleting: boolean;
  readonly createdAt?: string;
  readonly blocks: number;
  /** Addresses allocated in the node's blocks. */
  readonly allocated: number;
  /** Of `allocated`, addresses idle in a node agent's warm pool (warm-usage.ts). */
  readonly idle: number;
  /** Of `allocated`, addresses held for pods: allocated − idle. */
  readonly inUse: number;
  /** Addresses the node can still hand out per family (src/cluster/views/node-headroom.ts), families with a pool for it. */
  readonly headroom: readonly FamilyHeadroom[];
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
  const isIdle = await warmIdleTest(store);
  const seen: Parameters<typeof headroomByNode>[1][number][] = [];
  const [u, records, tombstones, snap] = await Promise.all([
    new ClusterIpam(store).utilisation({ skipCorrupt: true, isIdle, onBlock: (b) => seen.push(b) }),
    listNodes(store),
    listNodeTombstones(store),
    loadSnapshot(store).catch(() => undefined), // a corrupt pool or config record: no headroom (ipam check reports it)
  ]);
  const deletedAt = new Map(tombstones.map((t) => [t.name, t.deletedAt]));
  const blocks: BlockSummary[] = u.blocks.map((b) => ({
    cidr: formatPrefix(b.cidr),
    prefix: b.cidr,
    node: b.node,
    allocated: Number(b.allocated),
    idle: Number(b.idle),
    capacity: Number(b.capacity),
    pool: b.pool,
  }));
  blocks.sort((a, b) => a.prefix.family - b.prefix.family || (a.prefix.base < b.prefix.base ? -1 : a.prefix.base > b.prefix.base ? 1 : 0));

  const nodes = new Map<
    string,
    {
      podCIDRs: readonly string[];
      labels: Readonly<Record<string, string>>;
      registered: boolean;
      deleting: boolean;
      createdAt?: string;
      deletedAt?: string;
      blocks: number;
      allocated: number;
      idle: number;
    }
  >();
  for (const { record: r } of records) {
    nodes.set(r.name, {
      podCIDRs: r.podCIDRs,
      labels: r.labels,
      registered: true,
      deleting: r.deleting === true,
      createdAt: r.createdAt,
      blocks: 0,
      allocated: 0,
      idle: 0,
    });
  }
  for (const n of u.nodes) {
    const known = nodes.get(n.node);
    const gone = deletedAt.get(n.node);
    const row = known ?? {
      podCIDRs: [],
      labels: {},
      registered: false,
      deleting: false,
      ...(gone ? { deletedAt: gone } : {}),
      blocks: 0,
      allocated: 0,
      idle: 0,
    };
    row.blocks = n.blocks;
    row.allocated = Number(n.allocated);
    row.idle = Number(n.idle);
    nodes.set(n.node, row);
  }

  const poolSummaries: PoolSummary[] = u.pools.map((p) => ({
    name: p.pool.name,
    cidr: formatPrefix(p.pool.cidr),
    family: p.pool.cidr.family,
    blockSize: p.pool.blockSize,
    nodeSelector: p.pool.nodeSelector.text,
    disabled: p.pool.disabled,
    draining: p.pool.draining,
    deleting: p.pool.deleting,
    formerBlockSizes: p.pool.formerBlockSizes,
    reuseAfter: reuseAfterText(p.pool.reuseAfterMs),
    capacity: p.capacity,
    allocated: Number(p.allocated),
    blocks: p.blocks,
    blockSlots: p.blockSlots,
    blockCapacity: Number(p.blockCapacity),
  }));
  const idle = new Map<string, Partial<Record<4 | 6, number>>>();
  for (const b of u.blocks) {
    if (b.node === null || b.idle === 0n) continue;
    const row = idle.get(b.node) ?? {};
    row[b.cidr.family] = (row[b.cidr.family] ?? 0) + Number(b.idle);
    idle.set(b.node, row);
  }
  const headroom = snap
    ? headroomByNode(
        snap,
        seen,
        [...nodes].map(([name, n]) => ({ name, labels: n.labels, ...(idle.has(name) ? { idle: idle.get(name) } : {}) })),
      )
    : new Map<string, FamilyHeadroom[]>();
  const nodeSummaries: NodeSummary[] = [...nodes]
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map(([name, n]) => ({ name, ...n, inUse: n.allocated - n.idle, headroom: headroom.get(name) ?? [] }));
  return {
    generatedAt: new Date().toISOString(),
    pools: poolSummaries,
    blocks,
    nodes: nodeSummaries,
    totals: {
      pools: poolSummaries.length,
      nodes: nodeSummaries.length,
      blocks: blocks.length,
      allocated: Number(u.totals.allocated),
      capacity: u.totals.capacity,
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

  /**
   * A change seen by another follower of the store (serve's history follower, which then
   * stands in for follow()): `following` false when that follower's watch failed (the TTL
   * rules until it follows again).
   */
  noteChange(following: boolean): void {
    this.#changes++;
    this.#following = following;
  }

  /** True while follow()'s watch (or the follower calling noteChange) is running (a quiet store's summary is then reused). */
  get following(): boolean {
    return this.#following;
  }

  invalidate(): void {
    this.#generation++;
    this.#value = undefined;
    this.#inFlight = undefined;
  }

  /**
   * Watches the store (every key: pools, blocks, nodes and handles all feed the summary)
   * until the returned stop is called. A failed watch (store down) drops back to the TTL and
   * watches again from the current revision after a pause of a second (followPrefix; a
   * compacted one at once): whatever happened before a watch began counts as a change.
   */
  follow(log: Log = silentLog): () => Promise<void> {
    const ac = new AbortController();
    let lastError = '';
    const { done } = followPrefix({
      store: this.#store,
      prefix: '',
      signal: ac.signal,
      backoff: { firstMs: 1000, maxMs: 1000 },
      list: async () => {
        const rev = await this.#store.revision();
        this.#changes++;
        this.#following = true;
        if (lastError) log.info({}, 'summary watch resumed');
        lastError = '';
        return rev;
      },
      onEvents: (batch) => {
        if (batch.length > 0) this.#changes++;
      },
      onError: (e) => {
        this.#following = false;
        const message = (e as Error).message;
        // once per distinct failure, not at every retry of an outage
        if (message !== lastError) log.warn({ err: message }, `summary watch failed, using the TTL meanwhile: ${message}`);
        lastError = message;
      },
    });
    const loop = done.finally(() => (this.#following = false));
    return async () => {
      ac.abort();
      await loop;
    };
  }
}
