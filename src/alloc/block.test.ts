import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseAddr, parsePrefix } from '../ip/index.js';
import {
  type Block,
  addrOfOrdinal,
  allocateOrdinals,
  allocatedCount,
  assignOrdinal,
  blockCapacity,
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
import { mulberry32 } from '../util/mulberry32.js';

const V4 = parsePrefix('10.0.0.0/29'); // 8 ordinals
const V6 = parsePrefix('fd00::40/122'); // 64 ordinals

describe('block arithmetic', () => {
  it('capacity follows the prefix length and refuses blocks larger than 4096', () => {
    assert.equal(blockCapacity(V4), 8);
    assert.equal(blockCapacity(parsePrefix('10.0.0.0/26')), 64);
    assert.equal(blockCapacity(parsePrefix('10.0.0.0/20')), 4096);
    assert.equal(blockCapacity(parsePrefix('10.0.0.1/32')), 1);
    assert.equal(blockCapacity(V6), 64);
    assert.throws(() => blockCapacity(parsePrefix('10.0.0.0/19')), /at most 4096/);
    assert.throws(() => newBlock(parsePrefix('fd00::/100'), 'a'), /at most 4096/);
  });

  it('maps addresses to ordinals and back, and refuses addresses outside the block', () => {
    assert.equal(ordinalOf(V4, parseAddr('10.0.0.0')), 0);
    assert.equal(ordinalOf(V4, parseAddr('10.0.0.7')), 7);
    assert.equal(ordinalOf(V6, parseAddr('fd00::7f')), 63);
    assert.deepEqual(addrOfOrdinal(V6, 1), parseAddr('fd00::41'));
    for (let o = 0; o < 8; o++) assert.equal(ordinalOf(V4, addrOfOrdinal(V4, o)), o);
    assert.throws(() => ordinalOf(V4, parseAddr('10.0.0.8')), /10\.0\.0\.8 is not in block 10\.0\.0\.0\/29/);
    assert.throws(() => ordinalOf(V4, parseAddr('fd00::1')), /not in block/);
    assert.throws(() => addrOfOrdinal(V4, 8), /ordinal 8 .* from 0 to 7/);
    assert.throws(() => addrOfOrdinal(V4, -1), RangeError);
    assert.throws(() => addrOfOrdinal(V4, 1.5), RangeError);
  });
});

describe('allocateOrdinals', () => {
  it('hands out the first free ordinals from the cursor and moves the cursor past them', () => {
    const b0 = newBlock(V4, 'node-a');
    const { block: b1, ordinals } = allocateOrdinals(b0, 3, 'h1');
    assert.deepEqual(ordinals, [0, 1, 2]);
    assert.equal(b1.next, 3);
    assert.equal(holderOf(b1, 1), 'h1');
    assert.equal(allocatedCount(b0), 0, 'the input block is not mutated');
    const { block: b2, ordinals: o2 } = allocateOrdinals(b1, 1, 'h2');
    assert.deepEqual(o2, [3]);
    assert.equal(b2.next, 4);
  });

  it('does not reuse a just-released ordinal until the others have been used', () => {
    let b = newBlock(V4, 'n');
    b = allocateOrdinals(b, 2, 'h1').block; // 0,1 ; next 2
    b = releaseHandle(b, 'h1').block; // 0,1 free again
    const seen: number[] = [];
    for (let i = 0; i < 8; i++) {
      const r = allocateOrdinals(b, 1, `p${i}`);
      b = r.block;
      seen.push(...r.ordinals);
    }
    assert.deepEqual(seen, [2, 3, 4, 5, 6, 7, 0, 1]);
  });

  it('wraps around and reuses a freed ordinal when it is the only one left', () => {
    let b = allocateOrdinals(newBlock(V4, 'n'), 8, 'h').block;
    assert.equal(freeCount(b), 0);
    b = releaseOrdinals(b, [5]).block;
    const r = allocateOrdinals(b, 2, 'x');
    assert.deepEqual(r.ordinals, [5]);
    assert.equal(r.block.next, 6);
  });

  it('returns fewer ordinals than asked when the block runs out, and nothing from a full block', () => {
    let b = allocateOrdinals(newBlock(V4, 'n'), 6, 'h').block;
    const r = allocateOrdinals(b, 5, 'x');
    assert.deepEqual(r.ordinals, [6, 7]);
    b = r.block;
    const none = allocateOrdinals(b, 1, 'y');
    assert.deepEqual(none.ordinals, []);
    assert.equal(none.block, b, 'an unchanged block is returned as is');
  });

  it('skips reserved ordinals and counts them as not free', () => {
    const reserved = new Set([0, 1, 7]);
    const b = newBlock(V4, 'n');
    assert.equal(freeCount(b, reserved), 5);
    const r = allocateOrdinals(b, 10, 'h', reserved);
    assert.deepEqual(r.ordinals, [2, 3, 4, 5, 6]);
    assert.equal(freeCount(r.block, reserved), 0);
    assert.equal(freeCount(r.block), 3);
  });

  it('counts a reserved ordinal that is allocated (assigned before the reservation) once', () => {
    const b = assignOrdinal(newBlock(V4, 'n'), 0, 'old');
    assert.equal(freeCount(b, new Set([0, 1])), 6);
  });

  it('allocating zero is a no-op; bad counts and handles are refused', () => {
    const b = newBlock(V4, 'n');
    assert.equal(allocateOrdinals(b, 0, 'h').block, b);
    assert.throws(() => allocateOrdinals(b, -1, 'h'), /'count' must be a non-negative integer: current value is -1/);
    assert.throws(() => allocateOrdinals(b, 1, ''), /'handle' must be a non-empty string/);
  });
});

describe('assignOrdinal', () => {
  it('gives a specific ordinal without moving the cursor', () => {
    const b = assignOrdinal(newBlock(V4, 'n'), 4, 'h');
    assert.equal(holderOf(b, 4), 'h');
    assert.equal(b.next, 0);
    const r = allocateOrdinals(b, 8, 'x');
    assert.deepEqual(r.ordinals, [0, 1, 2, 3, 5, 6, 7]);
  });

  it('refuses a taken ordinal naming the holder, and ordinals out of range', () => {
    const b = assignOrdinal(newBlock(V4, 'n'), 4, 'h');
    assert.throws(() => assignOrdinal(b, 4, 'other'), /10\.0\.0\.4: it is held by handle "h"/);
    assert.throws(() => assignOrdinal(b, 8, 'other'), RangeError);
  });
});

describe('release', () => {
  it('releases by ordinal, ignoring free ordinals, and reports the holders', () => {
    let b = allocateOrdinals(newBlock(V4, 'n'), 2, 'h1').block;
    b = allocateOrdinals(b, 1, 'h2').block;
    const r = releaseOrdinals(b, [1, 2, 5]);
    assert.deepEqual([...r.released], [[1, 'h1'], [2, 'h2']]);
    assert.deepEqual([...r.block.allocations], [[0, 'h1']]);
    const again = releaseOrdinals(r.block, [1, 2]);
    assert.equal(again.released.size, 0);
    assert.equal(again.block, r.block);
    assert.throws(() => releaseOrdinals(b, [9]), RangeError);
  });

  it('releases by handle, leaving other handles alone, and is idempotent', () => {
    let b = allocateOrdinals(newBlock(V4, 'n'), 2, 'h1').block;
    b = allocateOrdinals(b, 1, 'h2').block;
    b = assignOrdinal(b, 6, 'h1');
    assert.deepEqual(ordinalsOf(b, 'h1'), [0, 1, 6]);
    assert.deepEqual([...handleCounts(b)].sort(), [['h1', 3], ['h2', 1]]);
    const r = releaseHandle(b, 'h1');
    assert.deepEqual(r.ordinals, [0, 1, 6]);
    assert.deepEqual([...r.block.allocations], [[2, 'h2']]);
    assert.deepEqual(releaseHandle(r.block, 'h1').ordinals, []);
    assert.equal(isEmptyBlock(r.block), false);
    assert.equal(isEmptyBlock(releaseHandle(r.block, 'h2').block), true);
  });

  it('changes affinity without touching allocations', () => {
    const b = allocateOrdinals(newBlock(V4, 'n'), 1, 'h').block;
    const o = withAffinity(b, null);
    assert.equal(o.affinity, null);
    assert.equal(o.allocations, b.allocations);
    assert.equal(b.affinity, 'n');
  });
});


/**
 * The reference model: an array of holders and a cursor, written as plainly as possible.
 * allocate(n): walk cap positions from the cursor, take free unreserved ones; cursor = last+1.
 */
class Model {
  holders: (string | undefined)[];
  next = 0;
  constructor(readonly cap: number) {
    this.holders = new Array<string | undefined>(cap).fill(undefined);
  }
  allocate(n: number, h: string, reserved: Set<number>): number[] {
    const got: number[] = [];
    for (let i = 0; i < this.cap; i++) {
      if (got.length === n) break;
      const o = (this.next + i) % this.cap;
      if (this.holders[o] === undefined && !reserved.has(o)) got.push(o);
    }
    for (const o of got) this.holders[o] = h;
    if (got.length > 0) this.next = (got[got.length - 1]! + 1) % this.cap;
    return got;
  }
}

describe('block property test against a simple model (seeded)', () => {
  for (const seed of [1, 2, 3, 42, 1234, 99991]) {
    it(`agrees with the model over 3000 random operations (seed ${seed})`, () => {
      const rnd = mulberry32(seed);
      const cidr = seed % 2 === 0 ? parsePrefix('10.9.0.0/28') : parsePrefix('fd00::/124');
      const cap = 16;
      let b: Block = newBlock(cidr, 'n');
      const m = new Model(cap);
      const reserved = new Set<number>();
      for (let i = 0; i < 3000; i++) {
        const op = Math.floor(rnd() * 6);
        const h = `h${Math.floor(rnd() * 6)}`;
        if (op <= 1) {
          const n = Math.floor(rnd() * 4);
          const r = allocateOrdinals(b, n, h, reserved);
          assert.deepEqual(r.ordinals, m.allocate(n, h, reserved), `allocate step ${i}`);
          b = r.block;
        } else if (op === 2) {
          const o = Math.floor(rnd() * cap);
          if (m.holders[o] === undefined) {
            b = assignOrdinal(b, o, h);
            m.holders[o] = h;
          } else {
            assert.throws(() => assignOrdinal(b, o, h));
          }
        } else if (op === 3) {
          const os = [Math.floor(rnd() * cap), Math.floor(rnd() * cap)];
          const expected = new Map<number, string>();
          for (const o of os) if (m.holders[o] !== undefined) expected.set(o, m.holders[o]!);
          const r = releaseOrdinals(b, os);
          assert.deepEqual(new Map(r.released), expected, `release step ${i}`);
          for (const o of os) m.holders[o] = undefined;
          b = r.block;
        } else if (op === 4) {
          const expected = m.holders.flatMap((x, o) => (x === h ? [o] : []));
          const r = releaseHandle(b, h);
          assert.deepEqual([...r.ordinals], expected);
          for (const o of expected) m.holders[o] = undefined;
          b = r.block;
        } else {
          const o = Math.floor(rnd() * cap);
          if (reserved.has(o)) reserved.delete(o);
          else if (reserved.size < 4) reserved.add(o);
        }
        // Invariants after every step: same holders, same cursor, consistent counts.
        assert.equal(b.next, m.next);
        for (let o = 0; o < cap; o++) assert.equal(holderOf(b, o), m.holders[o], `ordinal ${o} at step ${i}`);
        const allocated = m.holders.filter((x) => x !== undefined).length;
        assert.equal(allocatedCount(b), allocated);
        const freeUnreserved = m.holders.filter((x, o) => x === undefined && !reserved.has(o)).length;
        assert.equal(freeCount(b, reserved), freeUnreserved);
        assert.equal(isEmptyBlock(b), allocated === 0);
        let sum = 0;
        for (const n of handleCounts(b).values()) sum += n;
        assert.equal(sum, allocated);
      }
    });
  }
});
