/**
 * What an importer of another IPAM's state (Calico, Whereabouts) turns that state into before
 * anything is written: an ImportPlan. Each source has a pure parser (its exact stored format →
 * plan, src/import/<source>/); one applier (apply-import-plan.ts) checks the plan against the
 * podipam store, lists the conflicts, and writes it one transaction per block. `--dry-run`
 * prints the plan the applier would carry out, and a real run does exactly that plan.
 *
 * Texts are canonical (formatAddr / formatPrefix), so two plans of the same source compare
 * equal and a printed plan is stable.
 */

/** A pool to exist in podipam after the import (created when absent; matched by CIDR when present). */
export interface ImportedPool {
  /** podipam pool name (a resource name; derived from the source's name). */
  readonly name: string;
  readonly cidr: string;
  readonly blockSize: number;
  /** podipam selector syntax (Calico's nodeSelector is already this grammar); 'all()' when none. */
  readonly nodeSelector: string;
  readonly disabled: boolean;
  /** Where it came from, for the report: e.g. `ippools.crd.projectcalico.org default-ipv4-ippool`. */
  readonly source: string;
}

/** Who holds an imported address. */
export interface ImportedHolder {
  /** 'pod': a workload's address; 'node': a node's own (Calico's IPIP/VXLAN/WireGuard tunnel address). */
  readonly kind: 'pod' | 'node';
  /** The podipam handle: what the cluster plugin's DEL for this attachment computes (cniHandleId), or a node-owned handle for kind 'node'. */
  readonly handle: string;
  /** The node the holder runs on, when the source says (Calico: attributes' node / block affinity). */
  readonly node?: string;
  readonly network?: string;
  readonly containerId?: string;
  readonly ifname?: string;
  readonly namespace?: string;
  readonly pod?: string;
  /** The source's own handle or id (Calico's `k8s-pod-network.<id>`, Whereabouts' container id), for the report and for DEL matching. */
  readonly sourceHandle: string;
}

/** One address to be held after the import. */
export interface ImportedAddress {
  readonly ip: string;
  /** The podipam pool it falls in (one of plan.pools, or an existing pool). */
  readonly pool: string;
  /** The podipam block it lands in: a block of the pool's blockSize containing ip. */
  readonly block: string;
  readonly holder: ImportedHolder;
}

/** A podipam block the import creates or fills. */
export interface ImportedBlock {
  readonly cidr: string;
  readonly pool: string;
  /** The node the block is affine to (Calico's `host:<node>` where the sizes map), or null (an unaffine block). */
  readonly affinity: string | null;
}

export type ImportConflictKind =
  /** The address is already held in podipam by another handle. */
  | 'address-held'
  /** podipam freed the address less than its pool's reuseAfter ago: recording a holder now would hand it out within its quarantine. */
  | 'quarantined'
  /** An imported pool's CIDR overlaps a podipam pool (or another imported pool) it does not map onto. */
  | 'pool-overlap'
  /** The source's block size cannot map onto the podipam pool's (e.g. a Calico /26 block into a /27-block pool). */
  | 'block-size'
  /** The address is outside every pool, or a record of the source is malformed/inconsistent. */
  | 'invalid';

export interface ImportConflict {
  readonly kind: ImportConflictKind;
  /** What it is about: an address, a pool name, a block CIDR, a source record. */
  readonly subject: string;
  /** A sentence naming the other party (the holder, the overlapping pool, the sizes). */
  readonly detail: string;
}

export interface ImportPlan {
  readonly source: 'calico-kdd' | 'calico-etcd' | 'whereabouts';
  readonly pools: readonly ImportedPool[];
  readonly blocks: readonly ImportedBlock[];
  readonly addresses: readonly ImportedAddress[];
  /**
   * Problems found while parsing the source (kind 'invalid', 'block-size', 'pool-overlap' among imported pools). The applier adds those against the store.
   * A conflict whose `subject` is an address of the plan, a plan pool's name or a plan block's CIDR leaves that address, pool or block out of the writes
   * (with skipConflicts; without it any conflict writes nothing).
   */
  readonly conflicts: readonly ImportConflict[];
}

/** What applyImportPlan reports: the plan as checked against the store, and what it wrote. */
export interface ImportOutcome {
  /** Every conflict: the parser's and the store's. */
  readonly conflicts: readonly ImportConflict[];
  readonly poolsCreated: readonly string[];
  readonly blocksWritten: readonly string[];
  /** Addresses newly held by this run. */
  readonly adopted: number;
  /** Addresses already held by the same handle (a re-run): nothing to do. */
  readonly already: number;
  /** Addresses left out because of a conflict (with --skip-conflicts), or all of them when refused. */
  readonly skipped: number;
  /** True when nothing was written: a dry run, or conflicts without --skip-conflicts. */
  readonly wroteNothing: boolean;
}

export interface ApplyImportOptions {
  /** Check and report only; write nothing. The report equals what the real run does. */
  readonly dryRun?: boolean;
  /** Write everything that has no conflict; without it any conflict means nothing is written. */
  readonly skipConflicts?: boolean;
}

/**
 * The applier's signature (src/import/apply-import-plan.ts): checks `plan` against the store
 * (pools by CIDR, addresses held by other handles, blocks held by other nodes), then — unless a
 * dry run, or conflicts without skipConflicts — creates the missing pools and writes each block
 * with its addresses and their handle records in one transaction per block (re-runnable: an
 * address already held by the same handle is counted `already`).
 */
export type ApplyImportPlan = (store: import('../store/index.js').Store, plan: ImportPlan, options?: ApplyImportOptions) => Promise<ImportOutcome>;
