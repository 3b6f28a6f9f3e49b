/**
 * A set of slot indexes 0 … size−1 (bigint), for bitmaps far too large to hold flat: a v6 /32
 * cluster cut into /64 node blocks has 2^32 slots, Kubernetes' `CidrSet` stops at 2^16.
 *
 * Kept as a 32-ary radix tree of 32-bit words. Each node covers 32 children; bit c of `full`
 * says child c is entirely set, `kids[c]` holds a child that is partly set, and a child that is
 * neither is entirely clear and takes no memory. At the bottom level a child is one slot. So
 * memory grows with the number of set *runs*, not with `size`: a run of contiguous slots
 * collapses into `full` bits, setting or clearing any range costs O(32 · depth), and finding
 * the next clear slot skips full subtrees with one word operation per level.
 */
const FANOUT_BITS = 5;
const FANOUT = 1 << FANOUT_BITS;
/** All 32 children (as a signed 32-bit word, what JS bit operators produce). */
const ALL = -1;

interface TreeNode {
  /** Bit c set: child c is entirely set; then kids[c] is absent. */
  full: number;
  /** Partly set children; absent entries are entirely clear. Never used at the bottom level. */
  kids?: (TreeNode | undefined)[];
  /** Set slots below this node. */
  count: bigint;
}

function emptyNode(): TreeNode {
  return { full: 0, count: 0n };
}

export class SparseBitmap {
  /** Number of slots; indexes run 0 … size−1. */
  readonly size: bigint;
  readonly #depth: number;
  /** #shift[level]: log2 of the span of one child of a node at `level` (0 = root). */
  readonly #shift: readonly bigint[];
  readonly #span: readonly bigint[];
  #root: TreeNode = emptyNode();

  /** An empty set of `size` slots; RangeError unless size ≥ 1. */
  constructor(size: bigint) {
    if (typeof size !== 'bigint' || size < 1n) {
      throw new RangeError(`Cannot create a sparse bitmap as 'size' must be a bigint ≥ 1: current value is ${String(size)}`);
    }
    this.size = size;
    const bits = (size - 1n).toString(2).length;
    this.#depth = Math.max(1, Math.ceil(bits / FANOUT_BITS));
    const shift: bigint[] = [];
    for (let level = 0; level < this.#depth; level++) shift.push(BigInt(FANOUT_BITS * (this.#depth - 1 - level)));
    this.#shift = shift;
    this.#span = shift.map((s) => 1n << s);
  }

  /** Number of set slots. */
  get count(): bigint {
    return this.#root.count;
  }

  /** True when slot `i` is set (false outside 0 … size−1). */
  has(i: bigint): boolean {
    if (i < 0n || i >= this.size) return false;
    let node: TreeNode | undefined = this.#root;
    for (let level = 0; node; level++) {
      const c = this.#digit(i, level);
      if (node.full & (1 << c)) return true;
      node = node.kids?.[c];
    }
    return false;
  }

  /** Sets slots lo … hi (inclusive, clamped to the bitmap); returns how many were newly set. */
  setRange(lo: bigint, hi: bigint): bigint {
    const [a, b] = this.#clamp(lo, hi);
    return a > b ? 0n : this.#setIn(this.#root, 0, 0n, a, b);
  }

  /** Clears slots lo … hi (inclusive, clamped); returns how many were newly cleared. */
  clearRange(lo: bigint, hi: bigint): bigint {
    const [a, b] = this.#clamp(lo, hi);
    return a > b ? 0n : this.#clearIn(this.#root, 0, 0n, a, b);
  }

  /** Clears every slot. */
  clear(): void {
    this.#root = emptyNode();
  }

  /** The first clear slot ≥ `from` (no wrap-around), or undefined when every such slot is set. */
  nextClear(from: bigint): bigint | undefined {
    const start = from < 0n ? 0n : from;
    if (start >= this.size) return undefined;
    const r = this.#nextIn(this.#root, 0, 0n, start);
    return r !== undefined && r < this.size ? r : undefined;
  }

  #clamp(lo: bigint, hi: bigint): [bigint, bigint] {
    return [lo < 0n ? 0n : lo, hi >= this.size ? this.size - 1n : hi];
  }

  #digit(i: bigint, level: number): number {
    return Number((i >> (this.#shift[level] as bigint)) & BigInt(FANOUT - 1));
  }

  /** Children of a node at `nodeLo` that [lo, hi] touches, as [first, last] child numbers. */
  #childRange(level: number, nodeLo: bigint, lo: bigint, hi: bigint): [number, number] {
    const shift = this.#shift[level] as bigint;
    const first = lo <= nodeLo ? 0 : Number((lo - nodeLo) >> shift);
    const last = Number((hi - nodeLo) >> shift);
    return [first, Math.min(last, FANOUT - 1)];
  }

  #setIn(node: TreeNode, level: number, nodeLo: bigint, lo: bigint, hi: bigint): bigint {
    const span = this.#span[level] as bigint;
    const [first, last] = this.#childRange(level, nodeLo, lo, hi);
    let added = 0n;
    for (let c = first; c <= last; c++) {
      const bit = 1 << c;
      if (node.full & bit) continue;
      const cLo = nodeLo + BigInt(c) * span;
      const kid = node.kids?.[c];
      if (lo <= cLo && cLo + span - 1n <= hi) {
        added += span - (kid?.count ?? 0n);
        node.full |= bit;
        if (kid) node.kids![c] = undefined;
        continue;
      }
      // Only partly covered, so span > 1 and this is not the bottom level.
      let k = kid;
      if (!k) (node.kids ??= new Array<TreeNode | undefined>(FANOUT))[c] = k = emptyNode();
      added += this.#setIn(k, level + 1, cLo, lo, hi);
      if (k.count === span) {
        node.full |= bit;
        node.kids![c] = undefined;
      }
    }
    node.count += added;
    return added;
  }

  #clearIn(node: TreeNode, level: number, nodeLo: bigint, lo: bigint, hi: bigint): bigint {
    const span = this.#span[level] as bigint;
    const [first, last] = this.#childRange(level, nodeLo, lo, hi);
    let removed = 0n;
    for (let c = first; c <= last; c++) {
      const bit = 1 << c;
      const isFull = (node.full & bit) !== 0;
      let k = node.kids?.[c];
      if (!isFull && !k) continue;
      const cLo = nodeLo + BigInt(c) * span;
      if (lo <= cLo && cLo + span - 1n <= hi) {
        removed += isFull ? span : (k as TreeNode).count;
        node.full &= ~bit;
        if (k) node.kids![c] = undefined;
        continue;
      }
      if (isFull) {
        // Split a full child into an explicit node whose 32 children are all full.
        k = { full: ALL, count: span };
        node.full &= ~bit;
        (node.kids ??= new Array<TreeNode | undefined>(FANOUT))[c] = k;
      }
      removed += this.#clearIn(k as TreeNode, level + 1, cLo, lo, hi);
      if ((k as TreeNode).count === 0n) node.kids![c] = undefined;
    }
    node.count -= removed;
    return removed;
  }

  #nextIn(node: TreeNode, level: number, nodeLo: bigint, from: bigint): bigint | undefined {
    const span = this.#span[level] as bigint;
    const c0 = from <= nodeLo ? 0 : Number((from - nodeLo) >> (this.#shift[level] as bigint));
    // Candidate children: not full, numbered ≥ c0. At most 32 turns; only the first candidate
    // (the child holding `from`) can come back empty, every later one has a clear slot.
    let mask = ~node.full & (ALL << c0);
    for (let turn = 0; mask !== 0 && turn < FANOUT; turn++) {
      const c = 31 - Math.clz32(mask & -mask);
      const cLo = nodeLo + BigInt(c) * span;
      const kid = node.kids?.[c];
      if (!kid) return cLo > from ? cLo : from;
      const r = this.#nextIn(kid, level + 1, cLo, cLo > from ? cLo : from);
      if (r !== undefined) return r;
      mask &= mask - 1;
    }
    return undefined;
  }
}
