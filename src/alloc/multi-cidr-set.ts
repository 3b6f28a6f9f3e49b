import { formatPrefix, prefixOverlaps, type Family, type Prefix } from '../ip/index.js';
import { CidrSet } from './cidr-set.js';

/**
 * The node-CIDR allocator of one family over several cluster CIDRs, tried in order: the first
 * set hands out blocks until it is full, then the next. Adding a cluster CIDR grows a full
 * cluster without touching what is allocated. Exclusions apply to every set they touch,
 * including sets added later. Pure and synchronous.
 */
export class MultiCidrSet {
  readonly family: Family;
  readonly nodeLen: number;
  readonly #sets: CidrSet[] = [];
  readonly #excluded: Prefix[] = [];

  /** Checks each cluster CIDR as `add` does. */
  constructor(family: Family, nodeLen: number, clusters: readonly Prefix[] = []) {
    this.family = family;
    this.nodeLen = nodeLen;
    for (const c of clusters) this.add(c);
  }

  /** The cluster CIDRs, in the order they are tried. */
  get clusters(): Prefix[] {
    return this.#sets.map((s) => s.cluster);
  }

  /** Node blocks in all cluster CIDRs / in use. */
  get size(): bigint {
    return this.#sets.reduce((n, s) => n + s.size, 0n);
  }

  get used(): bigint {
    return this.#sets.reduce((n, s) => n + s.used, 0n);
  }

  /**
   * Appends a cluster CIDR. TypeError naming both CIDRs when it is of the other family or
   * overlaps one already present; RangeError when the node mask is shorter than its mask.
   */
  add(cluster: Prefix): void {
    if (cluster.family !== this.family) {
      throw new TypeError(`Cannot add cluster CIDR ${formatPrefix(cluster)} to the IPv${this.family} node-CIDR set: it is IPv${cluster.family}`);
    }
    const clash = this.#sets.find((s) => s.overlaps(cluster));
    if (clash) {
      throw new TypeError(`Cannot add cluster CIDR ${formatPrefix(cluster)}: it overlaps cluster CIDR ${formatPrefix(clash.cluster)}`);
    }
    const set = new CidrSet(cluster, this.nodeLen);
    for (const ex of this.#excluded) if (set.overlaps(ex)) set.exclude(ex);
    this.#sets.push(set);
  }

  /** The next free node block from the first cluster CIDR that has one; undefined when none has. */
  allocateNext(): Prefix | undefined {
    for (const s of this.#sets) {
      const p = s.allocateNext();
      if (p) return p;
    }
    return undefined;
  }

  /**
   * Occupies `cidr` in every cluster CIDR it touches (idempotent). Returns false, changing
   * nothing, when it touches none: a CIDR left from an older configuration that cannot clash
   * with anything this set hands out.
   */
  occupy(cidr: Prefix): boolean {
    const hit = this.#sets.filter((s) => s.overlaps(cidr));
    for (const s of hit) s.occupy(cidr);
    return hit.length > 0;
  }

  /** Releases `cidr` wherever it touches a cluster CIDR (exclusions stay); idempotent. */
  release(cidr: Prefix): void {
    for (const s of this.#sets) if (s.overlaps(cidr)) s.release(cidr);
  }

  /** Excludes `cidr` from every present and future cluster CIDR it touches. */
  exclude(cidr: Prefix): void {
    if (cidr.family !== this.family) return;
    this.#excluded.push(cidr);
    for (const s of this.#sets) if (s.overlaps(cidr)) s.exclude(cidr);
  }

  /** True when `cidr` touches a cluster CIDR and every block it touches there is used. */
  isUsed(cidr: Prefix): boolean {
    const hit = this.#sets.filter((s) => s.overlaps(cidr));
    return hit.length > 0 && hit.every((s) => s.isUsed(cidr));
  }

  /** Frees everything but exclusions in every set, keeping round-robin positions. */
  reset(): void {
    for (const s of this.#sets) s.reset();
  }

  /** True when `cidr` touches one of the cluster CIDRs. */
  overlaps(cidr: Prefix): boolean {
    return this.#sets.some((s) => prefixOverlaps(s.cluster, cidr));
  }
}
