// Model-based property tests of NodeCidrAllocator: random single- and dual-stack configurations
// (cluster CIDRs in either family order, one or two per family, exclusions) and random
// sequences of node events — a node asks for what it lacks (new, or holding only some of its
// families, or carrying a CIDR of no configured family), a node is deleted, the controller
// resyncs (reset, then occupy what the nodes hold), a cluster CIDR is added, a CIDR is occupied
// or released by hand — run against the allocator and against a model that keeps, per family,
// a list of clusters with one boolean per node block and searches them in order by linear scans.
// Replay a failure: NODE_CIDR_SEED=<seed> NODE_CIDR_PATH=<path> node scripts/test.mjs node-cidr-allocator.property
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { type Family, type Prefix, familyBits, formatPrefix, prefixOf } from '../ip/index.js';
import { type NodeCidrProposal, NodeCidrAllocator } from './node-cidr-allocator.js';
import { MCluster, allocateFirst, meet } from '../../test/helpers/cidr-set-model.js';
import { propertyRuns, runProperty } from '../../test/helpers/property.js';

// ---- the model -------------------------------------------------------------------------------

class Model {
  readonly families: Family[] = [];
  readonly clusters: MCluster[] = [];
  readonly excluded: Prefix[];
  constructor(
    readonly masks: Partial<Record<Family, number>>,
    excluded: readonly Prefix[],
  ) {
    this.excluded = [...excluded];
  }
  /** `later`: by addClusterCidr, which grows a family the constructor set up but adds none. */
  add(c: Prefix, later = false): 'no mask' | 'overlap' | 'mask' | 'ok' {
    const mask = this.masks[c.family];
    if (mask === undefined || (later && !this.families.includes(c.family))) return 'no mask';
    if (this.clusters.some((x) => meet(x.cluster, c))) return 'overlap';
    if (mask < c.len) return 'mask';
    const x = new MCluster(c, mask);
    for (const ex of this.excluded) for (const k of x.touched(ex)) x.excluded.add(k);
    this.clusters.push(x);
    if (!this.families.includes(c.family)) this.families.push(c.family);
    return 'ok';
  }
  of(family: Family): MCluster[] {
    return this.clusters.filter((x) => x.cluster.family === family);
  }
  hit(c: Prefix): MCluster[] {
    return this.clusters.filter((x) => meet(x.cluster, c));
  }
  allocate(family: Family): Prefix | undefined {
    return allocateFirst(this.of(family));
  }
  mark(c: Prefix, on: boolean): void {
    for (const x of this.hit(c)) for (const k of x.touched(c)) x.marked[k] = on;
  }
  /** All or nothing; a failure gives back what it took (the cursors stay where they went). */
  propose(existing: readonly Prefix[]): NodeCidrProposal {
    const added: Prefix[] = [];
    const podCIDRs: Prefix[] = [];
    for (const family of this.families) {
      const have = existing.find((p) => p.family === family);
      if (have) {
        podCIDRs.push(have);
        continue;
      }
      const p = this.allocate(family);
      if (!p) {
        for (const a of added) this.mark(a, false);
        return { ok: false, family, clusters: this.of(family).map((x) => x.cluster) };
      }
      added.push(p);
      podCIDRs.push(p);
    }
    return { ok: true, added, podCIDRs: [...podCIDRs, ...existing.filter((p) => !podCIDRs.includes(p))] };
  }
}

// ---- configurations and events ---------------------------------------------------------------

/** Per family: node blocks of 2^bits addresses, clusters and CIDRs cut from a region of 32 blocks. */
interface Fam {
  readonly nodeLen: number;
  readonly region: bigint;
}
const famOf = (family: Family, bits: number): Fam => ({ nodeLen: familyBits(family) - bits, region: family === 4 ? 0x0a000000n : 0xfd00n << 112n });

/** `dLen` bits longer than a node block (negative: shorter), `at` quarter blocks into the region. */
interface Pick {
  readonly family: Family;
  readonly dLen: number;
  readonly at: number;
}
const cidrOf = (f: Record<Family, Fam>, p: Pick): Prefix => {
  const { nodeLen, region } = f[p.family];
  const len = Math.max(0, Math.min(familyBits(p.family), nodeLen + p.dLen));
  const quarter = (1n << BigInt(familyBits(p.family) - nodeLen)) / 4n;
  return prefixOf({ family: p.family, value: region + BigInt(p.at) * quarter }, len);
};
const pickArb = (families: readonly Family[], dLen: fc.Arbitrary<number>): fc.Arbitrary<Pick> =>
  fc.record({ family: fc.constantFrom(...families), dLen, at: fc.integer({ min: 0, max: 32 * 4 - 1 }) });

interface Config {
  readonly fams: Record<Family, Fam>;
  /** Families given a node mask; the cluster CIDRs may still name the other. */
  readonly masked: readonly Family[];
  readonly clusters: readonly Pick[];
  readonly excluded: readonly Pick[];
}
const configArb: fc.Arbitrary<Config> = fc
  .record({
    bits4: fc.constantFrom(0, 2, 8),
    bits6: fc.constantFrom(2, 64),
    masked: fc.oneof({ weight: 10, arbitrary: fc.constantFrom<Family[]>([4, 6]) }, { weight: 1, arbitrary: fc.constantFrom<Family[]>([4], [6]) }),
    order: fc.constantFrom<Family[]>([4], [6], [4, 6], [6, 4]),
  })
  .chain(({ bits4, bits6, masked, order }) =>
    fc.record({
      fams: fc.constant({ 4: famOf(4, bits4), 6: famOf(6, bits6) }),
      masked: fc.constant(masked),
      clusters: fc.array(pickArb(order, fc.integer({ min: -3, max: 0 })), { minLength: 1, maxLength: 3 }),
      excluded: fc.array(pickArb([4, 6], fc.integer({ min: -1, max: 3 })), { maxLength: 2 }),
    }),
  );

type Op =
  | { t: 'propose'; node: number; keep: number; junk: boolean }
  | { t: 'delete'; node: number }
  | { t: 'resync' }
  | { t: 'add'; c: Pick }
  | { t: 'occupy' | 'release' | 'isUsed'; c: Pick };
const NODES = 6;
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 8, arbitrary: fc.record({ t: fc.constant('propose' as const), node: fc.nat(NODES - 1), keep: fc.nat(3), junk: fc.boolean() }) },
  { weight: 4, arbitrary: fc.record({ t: fc.constant('delete' as const), node: fc.nat(NODES - 1) }) },
  { weight: 1, arbitrary: fc.constant({ t: 'resync' as const }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('add' as const), c: pickArb([4, 6], fc.integer({ min: -2, max: 0 })) }) },
  {
    weight: 2,
    arbitrary: fc.record({ t: fc.constantFrom('occupy' as const, 'release' as const, 'isUsed' as const), c: pickArb([4, 6], fc.integer({ min: -2, max: 3 })) }),
  },
);

function outcome(f: () => void): string {
  try {
    f();
    return 'ok';
  } catch (e) {
    if (e instanceof TypeError) return /overlaps/.test(e.message) ? 'overlap' : 'no mask';
    if (e instanceof RangeError) return 'mask';
    return String(e);
  }
}

function run(c: Config, ops: readonly Op[]): void {
  const masks: Partial<Record<Family, number>> = {};
  for (const f of c.masked) masks[f] = c.fams[f].nodeLen;
  const clusters = c.clusters.map((p) => cidrOf(c.fams, p));
  const excluded = c.excluded.map((p) => cidrOf(c.fams, p));
  const m = new Model(masks, excluded);
  const built = clusters.map((p) => m.add(p)).find((r) => r !== 'ok') ?? 'ok';
  let a: NodeCidrAllocator | undefined;
  assert.equal(
    outcome(() => (a = new NodeCidrAllocator({ clusterCidrs: clusters, nodeMaskSize: masks, excluded }))),
    built,
    'constructor',
  );
  if (!a) return;
  const alloc = a;
  const nodes = new Map<number, Prefix[]>();

  const check = (): void => {
    assert.deepEqual(alloc.families, m.families, 'families');
    assert.deepEqual(
      alloc.clusterCidrs(),
      m.families.flatMap((f) => m.of(f).map((x) => x.cluster)),
      'cluster CIDRs',
    );
    const usage = m.families.map((family) => {
      const xs = m.of(family);
      let used = 0;
      for (const x of xs) for (let k = 0; k < x.size; k++) if (x.used(k)) used++;
      return { family, size: BigInt(xs.reduce((n, x) => n + x.size, 0)), used: BigInt(used) };
    });
    assert.deepEqual(alloc.usage(), usage, 'usage');
    // No block held by two nodes, and every block a node holds is used.
    const seen = new Map<string, number>();
    for (const [n, ps] of nodes) {
      for (const p of ps) {
        if (m.hit(p).length === 0) continue;
        const k = `${p.family}/${p.base}/${p.len}`;
        if (seen.has(k)) assert.fail(`${formatPrefix(p)} held by nodes ${seen.get(k)} and ${n}`);
        seen.set(k, n);
        if (!alloc.isUsed(p)) assert.fail(`node ${n}'s ${formatPrefix(p)} free`);
      }
    }
  };
  check();
  for (const op of ops) {
    switch (op.t) {
      case 'propose': {
        // What the node carries already: the first `keep` of its CIDRs, maybe one of no configured family.
        const had = (nodes.get(op.node) ?? []).slice(0, op.keep);
        const existing = op.junk ? [...had, prefixOf({ family: 6, value: 0x2001n << 112n }, 64)] : had;
        for (const p of nodes.get(op.node) ?? [])
          if (!had.includes(p)) {
            alloc.release(p);
            m.mark(p, false);
          }
        const got = alloc.proposeMissing(existing);
        assert.deepEqual(got, m.propose(existing), `propose for node ${op.node} holding ${existing.map(formatPrefix).join(',')}`);
        nodes.set(op.node, got.ok ? [...got.podCIDRs] : had);
        break;
      }
      case 'delete':
        for (const p of nodes.get(op.node) ?? []) {
          alloc.release(p);
          m.mark(p, false);
        }
        nodes.delete(op.node);
        break;
      case 'resync':
        alloc.reset();
        for (const x of m.clusters) x.marked.fill(false);
        for (const ps of nodes.values()) {
          for (const p of ps) {
            assert.equal(alloc.occupy(p), m.hit(p).length > 0, `occupy ${formatPrefix(p)}`);
            m.mark(p, true);
          }
        }
        break;
      case 'add': {
        const p = cidrOf(c.fams, op.c);
        const want = m.add(p, true);
        assert.equal(
          outcome(() => alloc.addClusterCidr(p)),
          want,
          `addClusterCidr ${formatPrefix(p)}`,
        );
        break;
      }
      default: {
        const p = cidrOf(c.fams, op.c);
        if (op.t === 'isUsed') {
          const hit = m.hit(p);
          assert.equal(alloc.isUsed(p), hit.length > 0 && hit.every((x) => x.touched(p).every((k) => x.used(k))), `isUsed ${formatPrefix(p)}`);
        } else if (op.t === 'occupy') {
          // Only CIDRs no node holds, so the nodes' view stays true.
          if ([...nodes.values()].some((ps) => ps.some((q) => meet(p, q)))) break;
          assert.equal(alloc.occupy(p), m.hit(p).length > 0, `occupy ${formatPrefix(p)}`);
          m.mark(p, true);
        } else {
          if ([...nodes.values()].some((ps) => ps.some((q) => meet(p, q)))) break;
          alloc.release(p);
          m.mark(p, false);
        }
      }
    }
    check();
  }
}

// ---- the runs --------------------------------------------------------------------------------

const runs = propertyRuns('NODE_CIDR');

test(`NodeCidrAllocator agrees with its model over ${runs} random node event sequences`, (t) => {
  runProperty(
    t,
    { env: 'NODE_CIDR', file: 'node-cidr-allocator.property', runs },
    fc.property(configArb, fc.array(opArb, { maxLength: 50, size: 'max' }), run),
  );
});
