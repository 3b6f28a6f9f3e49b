/**
 * The model of one cluster CIDR cut into node blocks, shared by the property tests of CidrSet,
 * MultiCidrSet and NodeCidrAllocator: one boolean per block, blocks some exclusion touches
 * apart, address intervals compared block by block, round robin by a linear scan.
 */
import { type Prefix, familyBits } from '../../src/ip/index.js';

/** First and last address of `p`. */
export const span = (p: Prefix): [bigint, bigint] => [p.base, p.base + (1n << BigInt(familyBits(p.family) - p.len)) - 1n];
/** Whether `x` and `y` share an address (never across families). */
export const meet = (x: Prefix, y: Prefix): boolean => x.family === y.family && span(x)[0] <= span(y)[1] && span(y)[0] <= span(x)[1];

/** One cluster's blocks: marks per block; an excluded block is used whatever its mark. */
export class MCluster {
  readonly size: number;
  readonly marked: boolean[];
  /** Blocks some exclusion touches. */
  readonly excluded = new Set<number>();
  next = 0;
  constructor(
    readonly cluster: Prefix,
    readonly nodeLen: number,
  ) {
    this.size = 2 ** (nodeLen - cluster.len);
    this.marked = new Array<boolean>(this.size).fill(false);
  }
  block(k: number): Prefix {
    return { family: this.cluster.family, base: this.cluster.base + (BigInt(k) << BigInt(familyBits(this.cluster.family) - this.nodeLen)), len: this.nodeLen };
  }
  /** Blocks sharing an address with `c` (none when `c` is of the other family). */
  touched(c: Prefix): number[] {
    const out: number[] = [];
    for (let k = 0; k < this.size; k++) if (meet(this.block(k), c)) out.push(k);
    return out;
  }
  used(k: number): boolean {
    return this.marked[k]! || this.excluded.has(k);
  }
  /** The first free block from the cursor on, round robin, marked; the cursor moves past it. */
  allocateNext(): Prefix | undefined {
    for (let i = 0; i < this.size; i++) {
      const k = (this.next + i) % this.size;
      if (this.used(k)) continue;
      this.marked[k] = true;
      this.next = (k + 1) % this.size;
      return this.block(k);
    }
    return undefined;
  }
}

/** The first block any of `clusters` hands out, searched in order. */
export function allocateFirst(clusters: readonly MCluster[]): Prefix | undefined {
  for (const x of clusters) {
    const p = x.allocateNext();
    if (p) return p;
  }
  return undefined;
}
