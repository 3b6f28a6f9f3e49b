import { familyBits, formatPrefix, prefixLast, prefixOverlaps, subPrefix, subPrefixIndex, type Prefix } from '../ip/index.js';
import { CidrOutOfRangeError } from './cidr-out-of-range-error.js';
import { SparseBitmap } from './sparse-bitmap.js';

/**
 * The node-CIDR allocator for one cluster CIDR: Kubernetes' `CidrSet` (nodeipam) without its
 * 16-bit limit. The cluster CIDR is cut into node blocks of `nodeLen`; block k is
 * `subPrefix(cluster, nodeLen, k)`. Occupancy lives in a SparseBitmap, so a v6 /32 cluster with
 * /64 node blocks (2^32 blocks) costs memory in proportion to what is allocated.
 *
 * Pure and synchronous; the caller persists results. Allocation is round robin: the search
 * starts after the block handed out last and wraps, so a block just released is reused last
 * (a node deleted and re-created does not inherit a neighbour's CIDR while others are free).
 */
export class CidrSet {
  readonly cluster: Prefix;
  readonly nodeLen: number;
  /** Number of node blocks in the cluster CIDR (2^(nodeLen − cluster.len)). */
  readonly size: bigint;
  readonly #bits: SparseBitmap;
  readonly #excluded: Prefix[] = [];
  #next = 0n;

  /** RangeError naming the values when nodeLen is not within cluster.len … address bits. */
  constructor(cluster: Prefix, nodeLen: number) {
    const max = familyBits(cluster.family);
    if (!Number.isInteger(nodeLen) || nodeLen < cluster.len || nodeLen > max) {
      throw new RangeError(
        `Cannot cut cluster CIDR ${formatPrefix(cluster)} into node blocks as 'nodeLen' must be an integer from ${cluster.len} to ${max}: current value is ${nodeLen}`,
      );
    }
    this.cluster = cluster;
    this.nodeLen = nodeLen;
    this.size = 1n << BigInt(nodeLen - cluster.len);
    this.#bits = new SparseBitmap(this.size);
  }

  /** Node blocks in use (allocated, occupied or excluded). */
  get used(): bigint {
    return this.#bits.count;
  }

  /** Node blocks still free. */
  get free(): bigint {
    return this.size - this.#bits.count;
  }

  /** True when `cidr` shares an address with the cluster CIDR. */
  overlaps(cidr: Prefix): boolean {
    return prefixOverlaps(cidr, this.cluster);
  }

  /**
   * The next free node block, searching round robin from the one handed out last, marked used;
   * undefined when every block is used (nothing changes then).
   */
  allocateNext(): Prefix | undefined {
    const i = this.#bits.nextClear(this.#next) ?? this.#bits.nextClear(0n);
    if (i === undefined) return undefined;
    this.#bits.setRange(i, i);
    this.#next = i + 1n === this.size ? 0n : i + 1n;
    return subPrefix(this.cluster, this.nodeLen, i);
  }

  /**
   * Marks every node block `cidr` touches as used: a CIDR set on a node before this process
   * started, or another controller's. Idempotent. A CIDR smaller than a node block occupies
   * the block holding it; one larger occupies every block it covers (all, if it contains the
   * cluster). Throws CidrOutOfRangeError when `cidr` is outside the cluster CIDR.
   */
  occupy(cidr: Prefix): void {
    const [lo, hi] = this.#indexRange(cidr);
    this.#bits.setRange(lo, hi);
  }

  /**
   * Frees every node block `cidr` touches, except blocks an exclusion covers. Idempotent;
   * does not move the round-robin position. Throws CidrOutOfRangeError like occupy.
   */
  release(cidr: Prefix): void {
    const [lo, hi] = this.#indexRange(cidr);
    this.#bits.clearRange(lo, hi);
    // By node block, not by prefix: an exclusion and a released CIDR both smaller than a node
    // block share no address yet touch the same block.
    for (const ex of this.#excluded) {
      const [a, b] = this.#indexRange(ex);
      if (a <= hi && lo <= b) this.#bits.setRange(a, b);
    }
  }

  /**
   * Never hands out blocks that touch `cidr` (the service CIDR, a reservation), even after a
   * release that covers them. Throws CidrOutOfRangeError like occupy.
   */
  exclude(cidr: Prefix): void {
    this.occupy(cidr);
    this.#excluded.push(cidr);
  }

  /** True when every node block `cidr` touches is used. Throws CidrOutOfRangeError like occupy. */
  isUsed(cidr: Prefix): boolean {
    const [lo, hi] = this.#indexRange(cidr);
    const free = this.#bits.nextClear(lo);
    return free === undefined || free > hi;
  }

  /** Frees everything but the exclusions, keeping the round-robin position (a resync). */
  reset(): void {
    this.#bits.clear();
    for (const ex of this.#excluded) this.occupy(ex);
  }

  /** Inclusive node-block index range `cidr` touches (Kubernetes' getBeginningAndEndIndices). */
  #indexRange(cidr: Prefix): [bigint, bigint] {
    if (!this.overlaps(cidr)) throw new CidrOutOfRangeError(cidr, this.cluster);
    if (cidr.len <= this.cluster.len) return [0n, this.size - 1n];
    const lo = subPrefixIndex(this.cluster, this.nodeLen, { family: cidr.family, value: cidr.base });
    const hi = cidr.len >= this.nodeLen ? lo : subPrefixIndex(this.cluster, this.nodeLen, prefixLast(cidr));
    return [lo, hi];
  }
}
