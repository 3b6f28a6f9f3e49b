// Model-based property tests of the host-local range allocator: random range sets (IPv4 and
// IPv6, one to three ranges, several ranges in one subnet, default and custom gateways, some at
// the top of the address space) and random sequences of allocate / release / request a specific
// address / overwrite last_reserved_ip / record a foreign file, run against the allocator and
// against a model that lists every address of the set in order (gateways included) and answers
// each question by a linear scan of that list.
// Replay a failure: RANGE_ALLOC_SEED=<seed> RANGE_ALLOC_PATH=<path> node scripts/test.mjs range-allocator.property
// (RANGE_OVERLAP_SEED / _PATH for the overlap test; RANGE_ALLOC_RUNS sets the number of runs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { type Addr, type Family, familyBits, familyMax } from '../ip/index.js';
import {
  type AllocRange,
  type AllocRangeSet,
  type Candidate,
  allocRangesOverlap,
  candidates,
  checkRequested,
  isExhausted,
  nextFree,
  rangeSetsOverlap,
} from './range-allocator.js';
import { propertyRuns, runProperty } from '../../test/helpers/property.js';

// ---- the model -------------------------------------------------------------------------------

interface Slot {
  readonly v: bigint;
  readonly range: number;
  /** The gateway of its own range: walked over, never handed out. */
  readonly gw: boolean;
}

/** Every address of every range, in set order, each range from rangeStart to rangeEnd. */
function slots(set: AllocRangeSet): Slot[] {
  const out: Slot[] = [];
  set.forEach((r, range) => {
    for (let v = r.rangeStart.value; v <= r.rangeEnd.value; v++) out.push({ v, range, gw: v === r.gateway.value });
  });
  return out;
}

const find = (L: readonly Slot[], a: Addr, family: Family): number => (a.family === family ? L.findIndex((s) => s.v === a.value) : -1);

/** host-local's walk, read off the list: from the slot after `last` (or the first slot), once round, gateways left out. */
function modelWalk(L: readonly Slot[], family: Family, last: Addr | undefined): Slot[] {
  const p = last === undefined ? -1 : find(L, last, family);
  const from = p < 0 ? 0 : p + 1;
  return [...L.slice(from), ...L.slice(0, from)].filter((s) => !s.gw);
}

function modelCheck(L: readonly Slot[], family: Family, a: Addr): ReturnType<typeof checkRequested> {
  const i = find(L, a, family);
  if (i < 0) return { ok: false, reason: 'outside' };
  if (L[i]!.gw) return { ok: false, reason: 'gateway' };
  return { ok: true, range: L[i]!.range };
}

const asSlot = (c: Candidate): { v: bigint; range: number } => ({ v: c.addr.value, range: c.range });

/** The allocator's walk, cut off (and failed) past the number of addresses in the set: it must end. */
function walk(set: AllocRangeSet, size: number, last: Addr | undefined): Candidate[] {
  const out: Candidate[] = [];
  for (const c of candidates(set, last)) {
    out.push(c);
    assert.ok(out.length <= size, `the walk from ${String(last?.value)} goes on past the ${size} addresses of the set`);
  }
  return out;
}

// ---- range sets ------------------------------------------------------------------------------

/** Ranges are cut from up to four subnets of 32 addresses (v4 /27, v6 /123) laid side by side. */
const SUBNET_BITS = 5;
const SUBNETS = 4;

interface World {
  readonly family: Family;
  readonly region: bigint;
  readonly set: AllocRangeSet;
}

const rangeArb = (family: Family, region: bigint): fc.Arbitrary<AllocRange> =>
  fc
    .record({
      subnet: fc.nat(SUBNETS - 1),
      a: fc.nat(31),
      b: fc.nat(31),
      defaults: fc.boolean(),
      gw: fc.oneof(fc.constant(1), fc.nat(31)),
    })
    .map(({ subnet, a, b, defaults, gw }) => {
      const len = familyBits(family) - SUBNET_BITS;
      const base = region + (BigInt(subnet) << BigInt(SUBNET_BITS));
      // host-local's Canonicalize defaults: network+1 to broadcast−1 (IPv4) or to all-ones (IPv6).
      const [lo, hi] = defaults ? [1, family === 4 ? 30 : 31] : a <= b ? [a, b] : [b, a];
      const at = (o: number): Addr => ({ family, value: base + BigInt(o) });
      return { subnet: { family, base, len }, rangeStart: at(lo), rangeEnd: at(hi), gateway: at(gw) };
    });

const disjoint = (set: AllocRangeSet): boolean =>
  set.every((x, i) => set.every((y, j) => i === j || x.rangeEnd.value < y.rangeStart.value || y.rangeEnd.value < x.rangeStart.value));

const worldArb: fc.Arbitrary<World> = fc
  .record({
    family: fc.constantFrom(4 as Family, 6 as Family),
    top: fc.boolean(),
  })
  .chain(({ family, top }) => {
    const span = BigInt(SUBNETS) << BigInt(SUBNET_BITS);
    // Either a private block or the very top of the address space (the walk must not overflow).
    const region = top ? familyMax(family) + 1n - span : family === 4 ? 0x0a010000n : 0xfd00n << 112n;
    return fc.record({
      family: fc.constant(family),
      region: fc.constant(region),
      set: fc.array(rangeArb(family, region), { minLength: 1, maxLength: 3 }).filter(disjoint),
    });
  });

/** Addresses worth asking about: the whole region, a little either side, and one of the other family. */
function universe(w: World): Addr[] {
  const span = BigInt(SUBNETS) << BigInt(SUBNET_BITS);
  const out: Addr[] = [];
  for (let v = w.region - 2n; v < w.region + span + 2n; v++) if (v >= 0n && v <= familyMax(w.family)) out.push({ family: w.family, value: v });
  out.push({ family: w.family === 4 ? 6 : 4, value: w.region & 0xffffffffn });
  return out;
}

// ---- operations ------------------------------------------------------------------------------

type Op =
  | { t: 'alloc' }
  | { t: 'release'; pick: number }
  | { t: 'request'; pick: number }
  | { t: 'last'; pick: number; none: boolean }
  | { t: 'foreign'; pick: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 8, arbitrary: fc.constant({ t: 'alloc' as const }) },
  { weight: 4, arbitrary: fc.record({ t: fc.constant('release' as const), pick: fc.nat(1000) }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('request' as const), pick: fc.nat(1000) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('last' as const), pick: fc.nat(1000), none: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('foreign' as const), pick: fc.nat(1000) }) },
);

/**
 * One network directory as host-local keeps it: the files present (`taken`, a list, since a
 * foreign writer may leave an address outside the set, a gateway, or the same address twice
 * for isExhausted to see) and last_reserved_ip.
 */
function run(w: World, ops: readonly Op[]): void {
  const { family, set } = w;
  const L = slots(set);
  const U = universe(w);
  let taken: Addr[] = [];
  /** The set's family's values in `taken`, for quick lookups. */
  let values = new Set<bigint>();
  const has = (v: bigint): boolean => values.has(v);
  const sync = (): void => {
    values = new Set(taken.filter((a) => a.family === family).map((a) => a.value));
  };
  let last: Addr | undefined;
  const handedOut = new Set<bigint>();

  const check = (): void => {
    // As text: one deepEqual of ~100 objects per step would be most of the run's time.
    const text = (xs: readonly { v: bigint; range: number }[]): string => xs.map((x) => `${x.v}@${x.range}`).join(' ');
    assert.equal(text(walk(set, L.length, last).map(asSlot)), text(modelWalk(L, family, last)), 'walk as host-local');
    const full = L.every((s) => s.gw || has(s.v));
    assert.equal(isExhausted(set, taken), full, `isExhausted with ${taken.length} taken`);
  };
  check();
  for (const op of ops) {
    switch (op.t) {
      case 'alloc': {
        const got = nextFree(set, last, (a) => has(a.value));
        const want = modelWalk(L, family, last).find((s) => !has(s.v));
        assert.deepEqual(got && asSlot(got), want && { v: want.v, range: want.range }, 'nextFree as the model');
        if (!got) break;
        assert.ok(!handedOut.has(got.addr.value), 'an address handed out twice');
        assert.equal(got.addr.family, family);
        handedOut.add(got.addr.value);
        taken.push(got.addr);
        sync();
        last = got.addr;
        break;
      }
      case 'release': {
        if (taken.length === 0) break;
        const a = taken[op.pick % taken.length]!;
        taken = taken.filter((b) => b.family !== a.family || b.value !== a.value);
        sync();
        handedOut.delete(a.value);
        // Released means available again: the walk reaches it and the set is not exhausted.
        if (a.family === family && modelCheck(L, family, a).ok) {
          assert.ok(
            walk(set, L.length, last).some((c) => c.addr.value === a.value),
            'a released address is walked again',
          );
          assert.ok(!isExhausted(set, taken), 'exhausted right after a release');
        }
        break;
      }
      case 'request': {
        const a = U[op.pick % U.length]!;
        const r = checkRequested(set, a);
        assert.deepEqual(r, modelCheck(L, family, a), 'checkRequested as the model');
        // host-local takes a requested address that is free and moves last_reserved_ip to it.
        if (r.ok && !has(a.value)) {
          taken.push(a);
          sync();
          handedOut.add(a.value);
          last = a;
        }
        break;
      }
      case 'last':
        // A changed config or a foreign write: any address, or the file gone.
        last = op.none ? undefined : U[op.pick % U.length];
        break;
      case 'foreign': {
        const a = U[op.pick % U.length]!;
        taken.push(a);
        sync();
        if (a.family === family) handedOut.add(a.value);
        break;
      }
    }
    check();
  }
}

// ---- the runs --------------------------------------------------------------------------------

const runs = propertyRuns('RANGE_ALLOC');
const file = 'range-allocator.property';

test(`range allocator walks, allocates, exhausts and checks requests as host-local over ${runs} random sequences`, (t) => {
  runProperty(t, { env: 'RANGE_ALLOC', file, runs }, fc.property(worldArb, fc.array(opArb, { maxLength: 60, size: 'max' }), run));
});

test(`range overlap agrees with a shared address over ${runs} random pairs of range sets`, (t) => {
  runProperty(
    t,
    { env: 'RANGE_OVERLAP', file, what: 'pairs', runs },
    fc.property(worldArb, worldArb, (a, b) => {
      const addrs = (set: AllocRangeSet): Set<string> => new Set(slots(set).map((s) => `${set[0]!.subnet.family}/${s.v}`));
      const shared = (x: Set<string>, y: Set<string>): boolean => [...x].some((k) => y.has(k));
      assert.equal(rangeSetsOverlap(a.set, b.set), shared(addrs(a.set), addrs(b.set)), 'rangeSetsOverlap');
      const [xs, ys] = [a.set.map((r) => addrs([r])), b.set.map((r) => addrs([r]))];
      a.set.forEach((r, i) => b.set.forEach((q, j) => assert.equal(allocRangesOverlap(r, q), shared(xs[i]!, ys[j]!), 'allocRangesOverlap')));
    }),
  );
});
