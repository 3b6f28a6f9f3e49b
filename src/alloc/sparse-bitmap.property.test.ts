// Model-based property tests of SparseBitmap: random sequences of setRange / clearRange / clear
// with bounds that may be reversed or fall outside the bitmap, each followed by has, nextClear
// and count questions, run against the bitmap and against a model.
// - Small bitmaps (1 … ~1100 slots, sizes around 32 and 1024 among them): the model is a plain
//   array of booleans, compared slot by slot at the end.
// - Huge bitmaps (2^15+1 … 2^128 slots): the model keeps the list of ranges applied so far; a
//   slot's state is that of the last range covering it, and counts and next-clear searches go
//   segment by segment between the ranges' ends. Ranges start at and end near run boundaries
//   (multiples of 32^k), the ends of the bitmap, or anywhere, and may span almost all of it.
// Replay a failure: SPARSE_BITMAP_SEED=<seed> SPARSE_BITMAP_PATH=<path> node scripts/test.mjs sparse-bitmap.property
// (SPARSE_BITMAP_HUGE_SEED / _PATH for the huge bitmaps; SPARSE_BITMAP_RUNS sets the number of runs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { SparseBitmap } from './sparse-bitmap.js';
import { propertyRuns, runProperty } from '../../test/helpers/property.js';

type Op = { t: 'set' | 'clear'; lo: bigint; hi: bigint } | { t: 'reset' };
type Ask = readonly bigint[];

// ---- small bitmaps, flat model ---------------------------------------------------------------

function runSmall(size: number, ops: readonly { op: Op; ask: Ask }[]): void {
  const b = new SparseBitmap(BigInt(size));
  const m = new Array<boolean>(size).fill(false);
  const has = (i: bigint): boolean => i >= 0n && i < BigInt(size) && m[Number(i)]!;
  const nextClear = (from: bigint): bigint | undefined => {
    for (let i = from < 0n ? 0 : Number(from); i < size; i++) if (!m[i]) return BigInt(i);
    return undefined;
  };
  for (const { op, ask } of ops) {
    if (op.t === 'reset') {
      b.clear();
      m.fill(false);
    } else {
      let changed = 0;
      for (let i = Math.max(0, Number(op.lo)); i <= Math.min(size - 1, Number(op.hi)); i++) {
        if (m[i] !== (op.t === 'set')) changed++;
        m[i] = op.t === 'set';
      }
      const got = op.t === 'set' ? b.setRange(op.lo, op.hi) : b.clearRange(op.lo, op.hi);
      assert.equal(got, BigInt(changed), `${op.t}Range(${op.lo}, ${op.hi}) changed`);
    }
    assert.equal(b.count, BigInt(m.filter(Boolean).length), 'count');
    for (const i of ask) {
      assert.equal(b.has(i), has(i), `has(${i})`);
      assert.equal(b.nextClear(i), nextClear(i), `nextClear(${i})`);
    }
  }
  for (let i = -1; i <= size; i++) {
    assert.equal(b.has(BigInt(i)), has(BigInt(i)), `has(${i}) at the end`);
    assert.equal(b.nextClear(BigInt(i)), nextClear(BigInt(i)), `nextClear(${i}) at the end`);
  }
}

const smallSizeArb = fc.oneof(fc.constantFrom(1, 2, 5, 31, 32, 33, 63, 64, 65, 1000, 1023, 1024, 1025), fc.integer({ min: 1, max: 1100 }));
const smallArb = smallSizeArb.chain((size) => {
  const at = fc.oneof(fc.integer({ min: -3, max: size + 3 }), fc.constantFrom(0, size - 1, 31, 32, 1023, 1024)).map(BigInt);
  const op: fc.Arbitrary<Op> = fc.oneof(
    { weight: 10, arbitrary: fc.record({ t: fc.constantFrom('set' as const, 'clear' as const), lo: at, hi: at }) },
    // short runs, the common case (node blocks one by one)
    {
      weight: 10,
      arbitrary: fc
        .record({ t: fc.constantFrom('set' as const, 'clear' as const), lo: at, n: fc.integer({ min: 0, max: 40 }) })
        .map(({ t, lo, n }) => ({ t, lo, hi: lo + BigInt(n) })),
    },
    { weight: 1, arbitrary: fc.constant({ t: 'reset' as const }) },
  );
  return fc.tuple(fc.constant(size), fc.array(fc.record({ op, ask: fc.array(at, { maxLength: 4 }) }), { maxLength: 40, size: 'max' }));
});

// ---- huge bitmaps, history model -------------------------------------------------------------

class History {
  readonly ranges: { lo: bigint; hi: bigint; set: boolean }[] = [];
  #segments: [bigint, bigint, boolean][] | undefined;
  constructor(readonly size: bigint) {}
  apply(lo: bigint, hi: bigint, set: boolean): void {
    const a = lo < 0n ? 0n : lo;
    const b = hi >= this.size ? this.size - 1n : hi;
    if (a <= b) this.ranges.push({ lo: a, hi: b, set });
    this.#segments = undefined;
  }
  has(i: bigint): boolean {
    if (i < 0n || i >= this.size) return false;
    for (let j = this.ranges.length - 1; j >= 0; j--) {
      const r = this.ranges[j]!;
      if (r.lo <= i && i <= r.hi) return r.set;
    }
    return false;
  }
  /** [start, end) pieces on which every slot has one state, with that state. */
  segments(): [bigint, bigint, boolean][] {
    if (this.#segments) return this.#segments;
    const cuts = [...new Set([0n, this.size, ...this.ranges.flatMap((r) => [r.lo, r.hi + 1n])])].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
    return (this.#segments = cuts.slice(1).map((end, k) => [cuts[k]!, end, this.has(cuts[k]!)]));
  }
  count(): bigint {
    return this.segments().reduce((n, [a, b, set]) => (set ? n + (b - a) : n), 0n);
  }
  nextClear(from: bigint): bigint | undefined {
    const start = from < 0n ? 0n : from;
    for (const [a, b, set] of this.segments()) if (b > start && !set) return a > start ? a : start;
    return undefined;
  }
}

function runHuge(size: bigint, ops: readonly { op: Op; ask: Ask }[]): void {
  const b = new SparseBitmap(size);
  let m = new History(size);
  for (const { op, ask } of ops) {
    if (op.t === 'reset') {
      b.clear();
      m = new History(size);
    } else {
      const before = m.count();
      m.apply(op.lo, op.hi, op.t === 'set');
      const after = m.count();
      const got = op.t === 'set' ? b.setRange(op.lo, op.hi) : b.clearRange(op.lo, op.hi);
      assert.equal(got, op.t === 'set' ? after - before : before - after, `${op.t}Range(${op.lo}, ${op.hi}) changed`);
    }
    assert.equal(b.count, m.count(), 'count');
    for (const i of ask) {
      assert.equal(b.has(i), m.has(i), `has(${i})`);
      assert.equal(b.nextClear(i), m.nextClear(i), `nextClear(${i})`);
    }
  }
  // Every segment's first and last slot, and either side of it.
  for (const [a, e] of m.segments()) {
    for (const i of [a - 1n, a, e - 1n, e]) {
      assert.equal(b.has(i), m.has(i), `has(${i}) at the end`);
      assert.equal(b.nextClear(i), m.nextClear(i), `nextClear(${i}) at the end`);
    }
  }
}

const hugeSizeArb = fc.constantFrom(32n ** 3n + 1n, 2n ** 32n, 2n ** 32n + 7n, 10n ** 12n, 2n ** 64n - 1n, 2n ** 64n, 2n ** 128n);
const hugeArb = hugeSizeArb.chain((size) => {
  const depth = Math.max(1, Math.ceil((size - 1n).toString(2).length / 5));
  // A run boundary (a multiple of 32^k), an end of the bitmap, or anywhere; then a few slots either way.
  const anchor = fc.oneof(
    fc
      .record({ k: fc.integer({ min: 1, max: depth }), x: fc.bigInt({ min: 0n, max: size - 1n }) })
      .map(({ k, x }) => (x / 32n ** BigInt(k)) * 32n ** BigInt(k)),
    fc.constantFrom(0n, size - 1n, size),
    fc.bigInt({ min: 0n, max: size - 1n }),
  );
  const at = fc.tuple(anchor, fc.integer({ min: -40, max: 40 })).map(([p, d]) => p + BigInt(d));
  const op: fc.Arbitrary<Op> = fc.oneof(
    { weight: 6, arbitrary: fc.record({ t: fc.constantFrom('set' as const, 'clear' as const), lo: at, hi: at }) },
    {
      weight: 6,
      arbitrary: fc
        .record({ t: fc.constantFrom('set' as const, 'clear' as const), lo: at, n: fc.integer({ min: 0, max: 70 }) })
        .map(({ t, lo, n }) => ({ t, lo, hi: lo + BigInt(n) })),
    },
    { weight: 1, arbitrary: fc.constant({ t: 'reset' as const }) },
  );
  return fc.tuple(fc.constant(size), fc.array(fc.record({ op, ask: fc.array(at, { maxLength: 4 }) }), { maxLength: 30, size: 'max' }));
});

// ---- the runs --------------------------------------------------------------------------------

const runs = propertyRuns('SPARSE_BITMAP');
const file = 'sparse-bitmap.property';

test(`sparse bitmap agrees with a flat array over ${runs} random sequences on small bitmaps`, (t) => {
  runProperty(
    t,
    { env: 'SPARSE_BITMAP', file, runs },
    fc.property(smallArb, ([size, ops]) => runSmall(size, ops)),
  );
});

test(`sparse bitmap agrees with its range history over ${runs} random sequences on bitmaps of 2^15 to 2^128 slots`, (t) => {
  runProperty(
    t,
    { env: 'SPARSE_BITMAP_HUGE', file, runs },
    fc.property(hugeArb, ([size, ops]) => runHuge(size, ops)),
  );
});
