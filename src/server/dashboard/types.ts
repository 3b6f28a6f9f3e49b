/**
 * The JSON the dashboard reads from the API (src/server/api/routes-read.ts, routes-static.ts), as the
 * browser sees it. Counts beyond 2^53 − 1 arrive as decimal strings (exact JSON, util/exact-json.ts).
 */

/** A count: a number, or a decimal string when it exceeds 2^53 − 1. */
export type Count = number | string;

export interface PoolRow {
  readonly name: string;
  readonly cidr: string;
  readonly family: 4 | 6;
  readonly blockSize: number;
  readonly disabled: boolean;
  /** Absent from servers older than `pool drain`. */
  readonly draining?: boolean;
  readonly formerBlockSizes?: readonly number[];
  readonly capacity: Count;
  readonly allocated: number;
  readonly blocks: number;
  readonly blockSlots: Count | null;
  readonly blockCapacity: number;
}

export interface Overview {
  readonly datastore?: string;
  readonly totals: { readonly pools: number; readonly nodes: number; readonly blocks: number; readonly allocated: number };
  readonly pools: readonly PoolRow[];
}

/** A claimed block `[cidr, nodeIndex (-1: none), allocated]`, or a run of unclaimed slots. */
export type MapCell = number | readonly [string, number, number];

export interface BlockMap {
  readonly pool: string;
  readonly cidr: string;
  readonly blockCapacity: number;
  readonly slots: number | null;
  readonly claimed: number;
  readonly nodes: readonly string[];
  readonly cells: readonly MapCell[];
}

export interface BlockDetail {
  readonly cidr: string;
  readonly node: string | null;
  readonly capacity: number;
  readonly allocated: number;
  readonly allocations: readonly { readonly ip: string; readonly handle?: string; readonly pod?: string | null }[];
}

export interface NodeRow {
  readonly name: string;
  readonly podCIDRs: readonly string[];
  readonly registered: boolean;
  readonly deleting: boolean;
  /** For a node without a record: when its record was deleted (cluster GC frees its blocks); absent if it never had one. */
  readonly deletedAt?: string;
  readonly blocks: number;
  readonly allocated: number;
  /** Addresses held idle by the node agent's warm pool. */
  readonly idle: number;
  /** Addresses held for pods: allocated − idle. */
  readonly inUse: number;
  /** Per family with a pool for the node: what it can still hand out (free + idle + claimable). */
  readonly headroom?: readonly {
    readonly family: 4 | 6;
    readonly headroom: number;
    readonly free: number;
    readonly idle: number;
    readonly claimable: number;
    readonly claimableBlocks: number;
  }[];
}

export interface NodesPage {
  readonly items: readonly NodeRow[];
  readonly total: number;
  readonly next?: string;
}

export interface Finding {
  readonly kind?: string;
  readonly message?: string;
  readonly key?: string;
  readonly ip?: string;
  readonly handle?: string;
  readonly block?: string;
  readonly node?: string;
  readonly pool?: string;
}

export interface CheckReport {
  readonly checkedAt: string;
  readonly leaks: readonly Finding[];
  readonly problems: readonly Finding[];
}

export type Role = 'none' | 'read' | 'admin';

export interface Whoami {
  readonly role: Role;
  readonly authRequired: boolean;
}

/** A handle of a pod, or an address's holder (GET /api/v1/pods/NS/NAME, /pods?name=, /addresses/IP). */
export interface PodHandleRow {
  readonly handle: string;
  readonly pod: string | null;
  readonly node: string;
  readonly network: string | null;
  readonly addresses: readonly { readonly ip: string; readonly block: string; readonly pool: string }[];
}

/** A pool's usage over time and its trend (GET /api/v1/pools/NAME/forecast). */
export interface PoolForecast {
  readonly pool: string;
  readonly capacity: Count;
  readonly allocated: number;
  readonly trend: {
    readonly state: 'filling' | 'not-filling' | 'full' | 'unknown';
    readonly ratePerHour: number;
    readonly secondsToFull: number | null;
    readonly fullAt: string | null;
  };
  readonly method: {
    readonly window: string;
    readonly since: string;
    readonly until: string;
    readonly samples: number;
    readonly step: string;
    readonly text: string;
  };
  readonly series: readonly { readonly at: string; readonly used: number }[];
}
