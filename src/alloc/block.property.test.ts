// Model-based property tests of the allocation block (block.ts): random blocks (IPv4 /26…/32,
// IPv6 /122…/128, some at the top of the address space, a cursor anywhere) and random sequences
// of allocate (with reserved ordinals) / assign (adopting or not) / release ordinals / release a
// handle / change affinity / bad arguments, run against the block and against a model that keeps
// a plain Map and finds free ordinals by a linear scan from its cursor. Every answer and the
// whole state are compared after each step, and the input block of each step must come out
// unchanged (blocks are immutable).
// Replay a failure: BLOCK_SEED=<seed> BLOCK_PATH=<path> node scripts/test.mjs block.property
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { type Family, type Prefix, familyBits, familyMax } from '../ip/index.js';
import {
  type Block,
  addrOfOrdinal,
  allocateOrdinals,
  allocatedCount,
  assignOrdinal,
  freeCount,
  handleCounts,
  holderOf,
  isEmptyBlock,
  newBlock,
  ordinalOf,
  ordinalsOf,
  releaseHandle,
  releaseOrdinals,
  withAffinity,
} from './block.js';
import { propertyRuns, runProperty } from '../../test/helpers/property.js';

// ---- the model -------------------------------------------------------------------------------

const HANDLES = ['a', 'b', 'c', 'd'];
const NODES = [null, 'node-1', 'node-2'];

/**
 * The block's rules written the plainest way. Usable ordinals: not the network address (0), not
 * the gateway (1), not the IPv4 broadcast address (the last); so none in IPv4 /31, /32 and IPv6
 * /127, /128. While the gateway is held nothing is handed out.
 */
class Model {
  alloc = new Map<number, string>();
  affinity: string | null;
  readonly size: number;
  constructor(
    readonly cidr: Prefix,
    affinity: string | null,
    public next: number,
  ) {
    this.affinity = affinity;
    this.size = 2 ** (familyBits(cidr.family) - cidr.len);
  }
  usable(o: number): boolean {
    return o >= 2 && o <= (this.cidr.family === 4 ? this.size - 2 : this.size - 1);
  }
  free(reserved: ReadonlySet<number>): number[] {
    if (this.alloc.has(1)) return [];
    const out: number[] = [];
    for (let i = 0; i < this.size; i++) {
      const o = (this.next + i) % this.size;
      if (this.usable(o) && !this.alloc.has(o) && !reserved.has(o)) out.push(o);
    }
    return out;
  }
  allocate(count: number, handle: string, reserved: ReadonlySet<number>): number[] {
    const got = this.free(reserved).slice(0, count);
    for (const o of got) this.alloc.set(o, handle);
    if (got.length > 0) this.next = (got[got.length - 1]! + 1) % this.size;
    return got;
  }
  assign(o: number, handle: string, adopt: boolean): 'excluded' | 'held' | 'ok' {
    if (!this.usable(o) && !adopt) return 'excluded';
    if (this.alloc.has(o)) return 'held';
    this.alloc.set(o, handle);
    return 'ok';
  }
  release(os: readonly number[]): Map<number, string> {
    const out = new Map<number, string>();
    for (const o of os) {
      const h = this.alloc.get(o);
      if (h !== undefined) out.set(o, h);
      this.alloc.delete(o);
    }
    return out;
  }
  of(handle: string): number[] {
    return [...this.alloc]
      .filter(([, h]) => h === handle)
      .map(([o]) => o)
      .sort((x, y) => x - y);
  }
}

/** A block's whole state as text (assert.deepEqual on objects would be most of the run's time). */
const entries = (xs: Iterable<[number, string]>): string =>
  [...xs]
    .sort(([x], [y]) => x - y)
    .map(([o, h]) => `${o}:${h}`)
    .join(' ');
const state = (b: Block): string => `${b.cidr.family}/${b.cidr.base}/${b.cidr.len} affinity ${b.affinity} next ${b.next} holds ${entries(b.allocations)}`;
const modelState = (m: Model): string => `${m.cidr.family}/${m.cidr.base}/${m.cidr.len} affinity ${m.affinity} next ${m.next} holds ${entries(m.alloc)}`;

// ---- blocks and operations -------------------------------------------------------------------

interface Start {
  readonly cidr: Prefix;
  readonly affinity: string | null;
  /** Cursor of a block read back from the store; undefined: a new block. */
  readonly next: number | undefined;
}

const startArb: fc.Arbitrary<Start> = fc
  .record({
    family: fc.constantFrom(4 as Family, 6 as Family),
    hostBits: fc.constantFrom(0, 1, 2, 3, 4, 5, 6),
    at: fc.nat(1000),
    top: fc.boolean(),
    affinity: fc.constantFrom(...NODES),
    next: fc.option(fc.nat(63), { nil: undefined }),
  })
  .map(({ family, hostBits, at, top, affinity, next }) => {
    const size = 2 ** hostBits;
    const base = top ? familyMax(family) + 1n - BigInt(size) : (family === 4 ? 0x0af40000n : 0xfd00n << 112n) + BigInt(at * size);
    return { cidr: { family, base, len: familyBits(family) - hostBits }, affinity, next: next === undefined ? undefined : next % size };
  });

type Op =
  | { t: 'allocate'; count: number; handle: number; reserved: number[] }
  | { t: 'assign'; o: number; handle: number; adopt: boolean }
  | { t: 'release'; os: number[] }
  | { t: 'releaseHandle'; handle: number }
  | { t: 'affinity'; node: number }
  | { t: 'bad'; which: number; v: number };

const handle = fc.nat(HANDLES.length - 1);
const ordinal = fc.nat(63);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      t: fc.constant('allocate' as const),
      count: fc.oneof({ weight: 4, arbitrary: fc.integer({ min: 0, max: 4 }) }, { weight: 1, arbitrary: fc.integer({ min: 0, max: 70 }) }),
      handle,
      reserved: fc.array(ordinal, { maxLength: 8 }),
    }),
  },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('assign' as const), o: ordinal, handle, adopt: fc.boolean() }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('release' as const), os: fc.array(ordinal, { maxLength: 6 }) }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('releaseHandle' as const), handle }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('affinity' as const), node: fc.nat(NODES.length - 1) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('bad' as const), which: fc.nat(4), v: fc.integer({ min: -3, max: 3 }) }) },
);

function run(s: Start, ops: readonly Op[]): void {
  let block: Block = s.next === undefined ? newBlock(s.cidr, s.affinity) : { ...newBlock(s.cidr, s.affinity), next: s.next };
  const m = new Model(s.cidr, s.affinity, s.next ?? 0);
  const cap = m.size;
  /** What the test has seen handed out and not released: ordinal → handle. */
  const held = new Map<number, string>();
  const none: ReadonlySet<number> = new Set();

  const check = (reserved: ReadonlySet<number>): void => {
    assert.equal(state(block), modelState(m), 'state as the model');
    assert.equal(entries(block.allocations), entries(held), 'held as the test saw it handed out');
    for (let o = 0; o < cap; o++) assert.equal(holderOf(block, o), m.alloc.get(o), `holder of ${o}`);
    const counts = new Map<string, number>();
    for (const h of m.alloc.values()) counts.set(h, (counts.get(h) ?? 0) + 1);
    assert.deepEqual(handleCounts(block), counts, 'handleCounts');
    for (const h of HANDLES) assert.deepEqual(ordinalsOf(block, h), m.of(h), `ordinalsOf ${h}`);
    assert.equal(allocatedCount(block), m.alloc.size);
    assert.equal(isEmptyBlock(block), m.alloc.size === 0);
    assert.equal(freeCount(block), m.free(none).length, 'freeCount');
    assert.equal(freeCount(block, reserved), m.free(reserved).length, 'freeCount with reservations');
  };
  check(none);

  for (const op of ops) {
    const before = block;
    const was = state(before);
    let reserved = none;
    switch (op.t) {
      case 'allocate': {
        const h = HANDLES[op.handle]!;
        reserved = new Set(op.reserved.filter((o) => o < cap));
        const free = freeCount(block, reserved);
        const r = allocateOrdinals(block, op.count, h, reserved);
        assert.deepEqual(r.ordinals, m.allocate(op.count, h, reserved), 'allocate as the model');
        assert.equal(r.ordinals.length, Math.min(op.count, free), 'short exactly when the block runs out');
        if (r.ordinals.length === 0) assert.equal(r.block, before, 'nothing taken: the block unchanged');
        for (const o of r.ordinals) {
          assert.ok(!held.has(o), `ordinal ${o} handed out twice`);
          assert.ok(!reserved.has(o), `reserved ordinal ${o} handed out`);
          held.set(o, h);
        }
        block = r.block;
        break;
      }
      case 'assign': {
        const o = op.o % cap;
        const h = HANDLES[op.handle]!;
        const want = m.assign(o, h, op.adopt);
        let got: string;
        try {
          block = assignOrdinal(block, o, h, op.adopt);
          got = 'ok';
        } catch (e) {
          got = e instanceof RangeError ? 'excluded' : e instanceof Error && /held by handle/.test(e.message) ? 'held' : String(e);
        }
        assert.equal(got, want, `assign ${o} adopt=${op.adopt}`);
        if (got === 'ok') held.set(o, h);
        break;
      }
      case 'release': {
        const os = op.os.map((o) => o % cap);
        const r = releaseOrdinals(block, os);
        assert.deepEqual(r.released, m.release(os), 'released as the model');
        block = r.block;
        for (const o of r.released.keys()) held.delete(o);
        // Released means available again: a request for every free ordinal gets it back.
        const all = new Set(allocateOrdinals(block, cap, 'probe').ordinals);
        for (const o of r.released.keys()) if (m.usable(o) && !m.alloc.has(1)) assert.ok(all.has(o), `released ordinal ${o} not available again`);
        break;
      }
      case 'releaseHandle': {
        const h = HANDLES[op.handle]!;
        const want = m.of(h);
        m.release(want);
        const r = releaseHandle(block, h);
        assert.deepEqual(r.ordinals, want, 'releaseHandle ordinals, ascending');
        block = r.block;
        for (const o of want) held.delete(o);
        break;
      }
      case 'affinity': {
        block = withAffinity(block, NODES[op.node]!);
        m.affinity = NODES[op.node]!;
        break;
      }
      case 'bad': {
        // Refused, and nothing changes.
        const calls: [() => unknown, ErrorConstructor][] = [
          [() => allocateOrdinals(block, op.v < 0 ? op.v : op.v + 0.5, 'a'), RangeError],
          [() => allocateOrdinals(block, 1, ''), TypeError],
          [() => assignOrdinal(block, op.v < 0 ? op.v : cap + op.v, 'a', true), RangeError],
          [() => releaseOrdinals(block, [op.v < 0 ? op.v : cap + op.v]), RangeError],
          [() => addrOfOrdinal(block.cidr, op.v < 0 ? op.v : cap + op.v), RangeError],
        ];
        const [call, type] = calls[op.which]!;
        assert.throws(call, type);
        break;
      }
    }
    assert.equal(state(before), was, `${op.t} changed its input block`);
    check(reserved);
  }
  for (let o = 0; o < cap; o++) assert.equal(ordinalOf(s.cidr, addrOfOrdinal(s.cidr, o)), o, 'ordinal ↔ address');
}

// ---- the runs --------------------------------------------------------------------------------

const runs = propertyRuns('BLOCK');

test(`block agrees with its model over ${runs} random operation sequences`, (t) => {
  runProperty(t, { env: 'BLOCK', file: 'block.property', runs }, fc.property(startArb, fc.array(opArb, { maxLength: 60, size: 'max' }), run));
});
