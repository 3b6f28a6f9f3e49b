import { formatPrefix, type Family, type Prefix } from '../ip/index.js';
import { MultiCidrSet } from './multi-cidr-set.js';

/** What a NodeCidrAllocator is built from (validated at the edge: see parseControllerConfig). */
export interface NodeCidrAllocatorConfig {
  /** Cluster CIDRs, in the order they are used; a family's first one fixes its podCIDRs slot. */
  readonly clusterCidrs: readonly Prefix[];
  /** Node block prefix length per family present in clusterCidrs. */
  readonly nodeMaskSize: Readonly<Partial<Record<Family, number>>>;
  /** CIDRs never handed out (service CIDRs, reservations). */
  readonly excluded?: readonly Prefix[];
}

/** The outcome of proposeMissing. */
export type NodeCidrProposal =
  | {
      readonly ok: true;
      /** Blocks newly taken for this node (now marked used); empty when nothing was missing. */
      readonly added: readonly Prefix[];
      /** The node's full list: one per configured family in family order, then any others it had. */
      readonly podCIDRs: readonly Prefix[];
    }
  | {
      readonly ok: false;
      /** The first family with no free block; nothing was taken. */
      readonly family: Family;
      readonly clusters: readonly Prefix[];
    };

/**
 * Node-CIDR allocation for a (possibly dual-stack) cluster: one MultiCidrSet per family, in the
 * order the families first appear among the cluster CIDRs — so podCIDRs come out in
 * `--cluster-cidr` order, as Kubernetes writes them. Pure and synchronous.
 */
export class NodeCidrAllocator {
  readonly families: readonly Family[];
  readonly #sets = new Map<Family, MultiCidrSet>();

  /**
   * TypeError/RangeError naming the value for no cluster CIDR, a missing or too short node
   * mask, or overlapping cluster CIDRs (see MultiCidrSet.add).
   */
  constructor(config: NodeCidrAllocatorConfig) {
    if (config.clusterCidrs.length === 0) throw new TypeError('Cannot allocate node CIDRs without a cluster CIDR');
    const families: Family[] = [];
    for (const c of config.clusterCidrs) {
      let set = this.#sets.get(c.family);
      if (!set) {
        const mask = config.nodeMaskSize[c.family];
        if (mask === undefined) throw new TypeError(`Cannot allocate node CIDRs from ${formatPrefix(c)}: no IPv${c.family} node mask size`);
        set = new MultiCidrSet(c.family, mask);
        this.#sets.set(c.family, set);
        families.push(c.family);
      }
      set.add(c);
    }
    this.families = families;
    for (const ex of config.excluded ?? []) this.#sets.get(ex.family)?.exclude(ex);
  }

  /** The cluster CIDRs of `family`, or of every family in order. */
  clusterCidrs(family?: Family): Prefix[] {
    if (family !== undefined) return this.#sets.get(family)?.clusters ?? [];
    return this.families.flatMap((f) => this.#sets.get(f)?.clusters ?? []);
  }

  /** The node block prefix length of `family`, if configured. */
  nodeMaskSize(family: Family): number | undefined {
    return this.#sets.get(family)?.nodeLen;
  }

  /** Grows the cluster by one CIDR of a configured family (see MultiCidrSet.add). */
  addClusterCidr(cidr: Prefix): void {
    const set = this.#sets.get(cidr.family);
    if (!set) throw new TypeError(`Cannot add cluster CIDR ${formatPrefix(cidr)}: no IPv${cidr.family} node mask size is configured`);
    set.add(cidr);
  }

  /**
   * Takes one block for each configured family `existing` lacks — all or nothing: when a
   * family has no free block, the blocks taken for earlier families are released again.
   */
  proposeMissing(existing: readonly Prefix[]): NodeCidrProposal {
    const added: Prefix[] = [];
    const podCIDRs: Prefix[] = [];
    for (const family of this.families) {
      const have = existing.find((p) => p.family === family);
      if (have) {
        podCIDRs.push(have);
        continue;
      }
      const set = this.#sets.get(family) as MultiCidrSet;
      const p = set.allocateNext();
      if (!p) {
        for (const a of added) this.release(a);
        return { ok: false, family, clusters: set.clusters };
      }
      added.push(p);
      podCIDRs.push(p);
    }
    for (const p of existing) if (!podCIDRs.includes(p)) podCIDRs.push(p);
    return { ok: true, added, podCIDRs };
  }

  /** Marks `cidr` used (idempotent); false when it touches no configured cluster CIDR. */
  occupy(cidr: Prefix): boolean {
    return this.#sets.get(cidr.family)?.occupy(cidr) ?? false;
  }

  /** Frees `cidr` (idempotent; exclusions stay used; CIDRs outside every cluster CIDR are ignored). */
  release(cidr: Prefix): void {
    this.#sets.get(cidr.family)?.release(cidr);
  }

  /** True when `cidr` lies in a cluster CIDR and is wholly used. */
  isUsed(cidr: Prefix): boolean {
    return this.#sets.get(cidr.family)?.isUsed(cidr) ?? false;
  }

  /** Frees everything but exclusions, keeping round-robin positions (before a rebuild). */
  reset(): void {
    for (const s of this.#sets.values()) s.reset();
  }

  /** Per family: node blocks in total and in use. */
  usage(): { family: Family; size: bigint; used: bigint }[] {
    return this.families.map((family) => {
      const s = this.#sets.get(family) as MultiCidrSet;
      return { family, size: s.size, used: s.used };
    });
  }
}
