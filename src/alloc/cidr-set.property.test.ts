// Model-based property tests of CidrSet: random cluster CIDRs (IPv4 and IPv6, 1 to 64 node
// blocks, some at the top of the address space) and random sequences of allocateNext / occupy /
// release / exclude / isUsed / reset with CIDRs larger than the cluster, inside it, smaller than
// a node block, outside it or of the other family, run against the set and against a model
// that keeps one boolean per node block, finds the blocks a CIDR touches by comparing address
// intervals one block at a time, and searches round robin by a linear scan.
// Replay a failure: CIDR_SET_SEED=<seed> CIDR_SET_PATH=<path> node scripts/test.mjs alloc/cidr-set.property
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { type Family, type Prefix, familyBits, familyMax, formatPrefix, prefixOf } from '../ip/index.js';
import { CidrOutOfRangeError } from './cidr-out-of-range-error.js';
import { CidrSet } from './cidr-set.js';
import { MCluster, span } from '../../test/helpers/cidr-set-model.js';
import { propertyRuns, runProperty } from '../../test/helpers/property.js';

// ---- clusters and operations -----------------------------------------------------------------

interface Start {
  readonly cluster: Prefix;
  readonly nodeLen: number;
}

const startArb: fc.Arbitrary<Start> = fc
  .record({
    family: fc.constantFrom(4 as Family, 6 as Family),
    depth: fc.integer({ min: 0, max: 6 }),
    blockHostBits: fc.constantFrom(0, 1, 2, 8, 64),
    at: fc.nat(255),
    top: fc.boolean(),
  })
  .map(({ family, depth, blockHostBits, at, top }) => {
    const bits = familyBits(family);
    const hostBits = Math.min(bits, Math.min(blockHostBits, bits - depth) + depth);
    const nodeLen = bits - Math.min(blockHostBits, bits - depth);
    const size = 1n << BigInt(hostBits);
    const raw = ((family === 4 ? 0x0a000000n : 0xfd00n << 112n) + BigInt(at) * size) & familyMax(family);
    const base = top ? familyMax(family) + 1n - size : raw - (raw % size);
    return { cluster: { family, base, len: bits - hostBits }, nodeLen };
  });

type Op = { t: 'allocate' } | { t: 'occupy' | 'release' | 'exclude' | 'isUsed'; c: Pick } | { t: 'reset' };
/** A CIDR for the op, read relative to the cluster: prefix length offset, address offset, other family. */
interface Pick {
  readonly dLen: number;
  readonly at: number;
  readonly other: boolean;
}
const pickArb: fc.Arbitrary<Pick> = fc.record({
  dLen: fc.integer({ min: -2, max: 9 }),
  at: fc.integer({ min: -200, max: 1200 }),
  other: fc.oneof({ weight: 20, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
});
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.constant({ t: 'allocate' as const }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('occupy' as const), c: pickArb }) },
  { weight: 4, arbitrary: fc.record({ t: fc.constant('release' as const), c: pickArb }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('exclude' as const), c: pickArb }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('isUsed' as const), c: pickArb }) },
  { weight: 1, arbitrary: fc.constant({ t: 'reset' as const }) },
);

/**
 * The CIDR a Pick names: length from two bits shorter than the cluster's to three bits longer
 * than a node block's, or a single address; address from a fifth of the cluster's size before
 * it to a fifth after it.
 */
function cidrOf(s: Start, p: Pick): Prefix {
  const family: Family = p.other ? (s.cluster.family === 4 ? 6 : 4) : s.cluster.family;
  const bits = familyBits(family);
  const depth = s.nodeLen - s.cluster.len;
  const len = p.other ? 24 : p.dLen === 9 ? bits : Math.max(0, Math.min(bits, s.cluster.len - 2 + ((p.dLen + 2) % (depth + 6))));
  const size = span(s.cluster)[1] - span(s.cluster)[0] + 1n;
  const q = size * BigInt(p.at);
  let v = s.cluster.base + (q >= 0n ? q / 1000n : -((-q + 999n) / 1000n));
  if (v < 0n) v = 0n;
  if (v > familyMax(family)) v = familyMax(family);
  return prefixOf({ family, value: v }, len);
}

function run(s: Start, ops: readonly Op[]): void {
  const set = new CidrSet(s.cluster, s.nodeLen);
  /** The model: one boolean per node block, blocks some exclusion touches apart. */
  const m = new MCluster(s.cluster, s.nodeLen);
  /** Blocks allocateNext handed out and no release has touched since. */
  const held = new Set<number>();
  const check = (): void => {
    const used = m.marked.map((_, k) => m.used(k));
    assert.equal(set.used, BigInt(used.filter(Boolean).length), 'used');
    assert.equal(set.free, BigInt(used.filter((u) => !u).length), 'free');
    // Messages built only on a failure: formatting every block each step would be most of the run's time.
    for (let k = 0; k < m.size; k++) {
      const got = set.isUsed(m.block(k));
      if (got !== used[k]) assert.equal(got, used[k], `isUsed ${formatPrefix(m.block(k))}`);
    }
    for (const k of held) if (!used[k]) assert.fail(`held block ${formatPrefix(m.block(k))} free`);
  };
  assert.equal(set.size, BigInt(m.size));
  for (const op of ops) {
    switch (op.t) {
      case 'allocate': {
        const want = m.allocateNext();
        const got = set.allocateNext();
        assert.deepEqual(got, want, 'allocateNext as the model');
        if (got) {
          const k = Number((got.base - s.cluster.base) >> BigInt(familyBits(got.family) - s.nodeLen));
          assert.ok(!held.has(k), `${formatPrefix(got)} handed out twice`);
          held.add(k);
        }
        break;
      }
      case 'reset':
        set.reset();
        m.marked.fill(false);
        held.clear();
        break;
      default: {
        const c = cidrOf(s, op.c);
        const touching = m.touched(c);
        const touched = touching.length > 0 ? touching : undefined;
        let got: unknown;
        try {
          got = op.t === 'isUsed' ? set.isUsed(c) : set[op.t](c);
        } catch (e) {
          assert.ok(e instanceof CidrOutOfRangeError, `${op.t} ${formatPrefix(c)}: ${String(e)}`);
          got = 'out of range';
        }
        if (!touched) {
          assert.equal(got, 'out of range', `${op.t} ${formatPrefix(c)} outside ${formatPrefix(s.cluster)}`);
          break;
        }
        assert.notEqual(got, 'out of range', `${op.t} ${formatPrefix(c)} refused inside ${formatPrefix(s.cluster)}`);
        if (op.t === 'isUsed')
          assert.equal(
            got,
            touched.every((k) => m.used(k)),
            `isUsed ${formatPrefix(c)}`,
          );
        if (op.t === 'occupy') for (const k of touched) m.marked[k] = true;
        if (op.t === 'release') {
          for (const k of touched) {
            m.marked[k] = false;
            held.delete(k);
          }
        }
        if (op.t === 'exclude') for (const k of touched) m.excluded.add(k);
        break;
      }
    }
    check();
  }
}

// ---- the runs --------------------------------------------------------------------------------

const runs = propertyRuns('CIDR_SET');

test(`CidrSet agrees with its model over ${runs} random operation sequences`, (t) => {
  runProperty(t, { env: 'CIDR_SET', file: 'alloc/cidr-set.property', runs }, fc.property(startArb, fc.array(opArb, { maxLength: 60, size: 'max' }), run));
});
