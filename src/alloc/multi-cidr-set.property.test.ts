// Model-based property tests of MultiCidrSet: random sequences of add (a cluster CIDR that may
// overlap one already there, be of the other family or be shorter than a node block) /
// allocateNext / occupy / release / exclude (before or after the cluster it touches is added) /
// isUsed / overlaps / reset, run against the set and against a model that keeps a list of
// clusters with one boolean per node block, compares address intervals block by block and
// searches the clusters in order, each round robin by a linear scan.
// Replay a failure: MULTI_CIDR_SET_SEED=<seed> MULTI_CIDR_SET_PATH=<path> node scripts/test.mjs multi-cidr-set.property
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { type Family, type Prefix, familyBits, familyMax, formatPrefix, prefixOf } from '../ip/index.js';
import { MultiCidrSet } from './multi-cidr-set.js';
import { MCluster, allocateFirst, meet } from '../../test/helpers/cidr-set-model.js';
import { propertyRuns, runProperty } from '../../test/helpers/property.js';

// ---- the model -------------------------------------------------------------------------------

class Model {
  readonly sets: MCluster[] = [];
  readonly excluded: Prefix[] = [];
  constructor(
    readonly family: Family,
    readonly nodeLen: number,
  ) {}
  add(c: Prefix): 'family' | 'overlap' | 'mask' | 'ok' {
    if (c.family !== this.family) return 'family';
    if (this.sets.some((s) => meet(s.cluster, c))) return 'overlap';
    if (this.nodeLen < c.len) return 'mask';
    const s = new MCluster(c, this.nodeLen);
    for (const ex of this.excluded) for (const k of s.touched(ex)) s.excluded.add(k);
    this.sets.push(s);
    return 'ok';
  }
  allocateNext(): Prefix | undefined {
    return allocateFirst(this.sets);
  }
  hit(c: Prefix): MCluster[] {
    return this.sets.filter((s) => meet(s.cluster, c));
  }
}

// ---- operations ------------------------------------------------------------------------------

/** Node blocks of 2^blockBits addresses; clusters and CIDRs are cut from a region of 64 blocks. */
interface Start {
  readonly family: Family;
  readonly nodeLen: number;
  readonly region: bigint;
}
const startArb: fc.Arbitrary<Start> = fc
  .record({ family: fc.constantFrom(4 as Family, 6 as Family), blockBits: fc.constantFrom(0, 2, 8, 64), top: fc.boolean() })
  .map(({ family, blockBits, top }) => {
    const bits = familyBits(family);
    const b = Math.min(blockBits, bits - 6);
    const regionSize = 1n << BigInt(b + 6);
    return { family, nodeLen: bits - b, region: top ? familyMax(family) + 1n - regionSize : family === 4 ? 0x0a000000n : 0xfd00n << 112n };
  });

/** A prefix `dLen` bits longer than a node block's (negative: shorter), at `at` quarter blocks into the region. */
interface Pick {
  readonly dLen: number;
  readonly at: number;
  readonly other: boolean;
}
function cidrOf(s: Start, p: Pick): Prefix {
  const bits = familyBits(s.family);
  if (p.other) return prefixOf({ family: s.family === 4 ? 6 : 4, value: 0n }, 8);
  const len = Math.max(0, Math.min(bits, s.nodeLen + p.dLen));
  const quarter = (1n << BigInt(bits - s.nodeLen)) / 4n;
  let v = s.region + BigInt(p.at) * quarter;
  if (v < 0n) v = 0n;
  if (v > familyMax(s.family)) v = familyMax(s.family);
  return prefixOf({ family: s.family, value: v }, len);
}
const pick = (dLen: fc.Arbitrary<number>): fc.Arbitrary<Pick> =>
  fc.record({
    dLen,
    at: fc.integer({ min: -8, max: 64 * 4 + 8 }),
    other: fc.oneof({ weight: 20, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
  });
const clusterPick = pick(fc.oneof({ weight: 10, arbitrary: fc.integer({ min: -4, max: 0 }) }, { weight: 1, arbitrary: fc.constant(1) }));
const cidrPick = pick(fc.oneof(fc.integer({ min: -7, max: 3 }), fc.constant(200)));

type Op = { t: 'add'; c: Pick } | { t: 'allocate' } | { t: 'occupy' | 'release' | 'exclude' | 'isUsed' | 'overlaps'; c: Pick } | { t: 'reset' };
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 2, arbitrary: fc.record({ t: fc.constant('add' as const), c: clusterPick }) },
  { weight: 6, arbitrary: fc.constant({ t: 'allocate' as const }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('occupy' as const), c: cidrPick }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('release' as const), c: cidrPick }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('exclude' as const), c: cidrPick }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('isUsed' as const), c: cidrPick }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('overlaps' as const), c: cidrPick }) },
  { weight: 1, arbitrary: fc.constant({ t: 'reset' as const }) },
);

function run(s: Start, first: Pick | undefined, ops: readonly Op[]): void {
  const m = new Model(s.family, s.nodeLen);
  let set: MultiCidrSet;
  const c0 = first && cidrOf(s, first);
  if (c0 && m.add(c0) !== 'ok') {
    assert.throws(() => new MultiCidrSet(s.family, s.nodeLen, [c0]), `constructor with ${formatPrefix(c0)}`);
    set = new MultiCidrSet(s.family, s.nodeLen);
  } else {
    set = new MultiCidrSet(s.family, s.nodeLen, c0 ? [c0] : []);
  }
  /** Blocks allocateNext handed out that no release or reset has touched since, by base. */
  const held = new Set<bigint>();
  const check = (): void => {
    assert.deepEqual(
      set.clusters,
      m.sets.map((x) => x.cluster),
      'clusters, in order',
    );
    assert.equal(set.size, BigInt(m.sets.reduce((n, x) => n + x.size, 0)), 'size');
    let used = 0;
    for (const x of m.sets) {
      for (let k = 0; k < x.size; k++) {
        if (x.used(k)) used++;
        // Messages built only on a failure: formatting every block each step would be most of the run's time.
        const b = x.block(k);
        if (set.isUsed(b) !== x.used(k)) assert.equal(set.isUsed(b), x.used(k), `isUsed ${formatPrefix(b)}`);
        if (held.has(b.base) && !x.used(k)) assert.fail(`held block ${formatPrefix(b)} free`);
      }
    }
    assert.equal(set.used, BigInt(used), 'used');
  };
  for (const op of ops) {
    switch (op.t) {
      case 'add': {
        const c = cidrOf(s, op.c);
        const want = m.add(c);
        let got: string = 'ok';
        try {
          set.add(c);
        } catch (e) {
          got = e instanceof TypeError ? (/overlaps/.test(e.message) ? 'overlap' : 'family') : e instanceof RangeError ? 'mask' : String(e);
        }
        assert.equal(got, want, `add ${formatPrefix(c)}`);
        break;
      }
      case 'allocate': {
        const got = set.allocateNext();
        assert.deepEqual(got, m.allocateNext(), 'allocateNext as the model');
        if (got) {
          assert.ok(!held.has(got.base), `${formatPrefix(got)} handed out twice`);
          held.add(got.base);
        }
        break;
      }
      case 'reset':
        set.reset();
        for (const x of m.sets) x.marked.fill(false);
        held.clear();
        break;
      default: {
        const c = cidrOf(s, op.c);
        const hit = m.hit(c);
        const name = `${op.t} ${formatPrefix(c)}`;
        if (op.t === 'occupy') {
          assert.equal(set.occupy(c), hit.length > 0, name);
          for (const x of hit) for (const k of x.touched(c)) x.marked[k] = true;
        } else if (op.t === 'release') {
          set.release(c);
          for (const x of hit) for (const k of x.touched(c)) x.marked[k] = false;
          for (const b of held) if (meet({ family: s.family, base: b, len: s.nodeLen }, c)) held.delete(b);
        } else if (op.t === 'exclude') {
          set.exclude(c);
          if (c.family === s.family) {
            m.excluded.push(c);
            for (const x of hit) for (const k of x.touched(c)) x.excluded.add(k);
          }
        } else if (op.t === 'isUsed') {
          assert.equal(set.isUsed(c), hit.length > 0 && hit.every((x) => x.touched(c).every((k) => x.used(k))), name);
        } else {
          assert.equal(set.overlaps(c), hit.length > 0, name);
        }
      }
    }
    check();
  }
}

// ---- the runs --------------------------------------------------------------------------------

const runs = propertyRuns('MULTI_CIDR_SET');

test(`MultiCidrSet agrees with its model over ${runs} random operation sequences`, (t) => {
  runProperty(
    t,
    { env: 'MULTI_CIDR_SET', file: 'multi-cidr-set.property', runs },
    fc.property(startArb, fc.option(clusterPick, { nil: undefined }), fc.array(opArb, { maxLength: 60, size: 'max' }), run),
  );
});
