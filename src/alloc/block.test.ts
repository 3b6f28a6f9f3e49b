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
  isFullBlock,
  newBlock,
  ordinalOf,
  ordinalsOf,
  releaseHandle,
  releaseOrdinals,
  withAffinity,
} from './block.js';
import { mulberry32 } from '../util/mulberry32.js';

const V4 = parsePrefix('10.0.0.0/29'); // 8 ordinals, 2…6 usable (0 network, 1 gateway, 7 broadcast)
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
  it('hands out the first free usable ordinals from the cursor and moves the cursor past them', () => {
    const b0 = newBlock(V4, 'node-a');
    const { block: b1, ordinals } = allocateOrdinals(b0, 3, 'h1');
    assert.deepEqual(ordinals, [2, 3, 4], 'network (0) and gateway (1) are skipped');
    assert.equal(b1.next, 5);
    assert.equal(holderOf(b1, 3), 'h1');
    assert.equal(allocatedCount(b0), 0, 'the input block is not mutated');
    const { block: b2, ordinals: o2 } = allocateOrdinals(b1, 1, 'h2');
    assert.deepEqual(o2, [5]);
    assert.equal(b2.next, 6);
  });

  it('does not reuse a just-released ordinal until the others have been used', () => {
    let b = newBlock(V4, 'n');
    b = allocateOrdinals(b, 2, 'h1').block; // 2,3 ; next 4
    b = releaseHandle(b, 'h1').block; // 2,3 free again
    const seen: number[] = [];
    for (let i = 0; i < 8; i++) {
      const r = allocateOrdinals(b, 1, `p${i}`);
      b = r.block;
      seen.push(...r.ordinals);
    }
    assert.deepEqual(seen, [4, 5, 6, 2, 3], 'broadcast (7), network (0) and gateway (1) never come round');
  });

  it('wraps around and reuses a freed ordinal when it is the only one left', () => {
    let b = allocateOrdinals(newBlock(V4, 'n'), 8, 'h').block;
    assert.deepEqual(ordinalsOf(b, 'h'), [2, 3, 4, 5, 6]);
    assert.equal(freeCount(b), 0);
    b = releaseOrdinals(b, [5]).block;
    const r = allocateOrdinals(b, 2, 'x');
    assert.deepEqual(r.ordinals, [5]);
    assert.equal(r.block.next, 6);
  });

  it('returns fewer ordinals than asked when the block runs out, and nothing from a full block', () => {
    let b = allocateOrdinals(newBlock(V4, 'n'), 3, 'h').block;
    const r = allocateOrdinals(b, 5, 'x');
    assert.deepEqual(r.ordinals, [5, 6]);
    b = r.block;
    const none = allocateOrdinals(b, 1, 'y');
    assert.deepEqual(none.ordinals, []);
    assert.equal(none.block, b, 'an unchanged block is returned as is');
  });

  it('skips reserved ordinals and counts them as not free', () => {
    const reserved = new Set([0, 2, 6]);
    const b = newBlock(V4, 'n');
    assert.equal(freeCount(b), 5);
    assert.equal(freeCount(b, reserved), 3);
    const r = allocateOrdinals(b, 10, 'h', reserved);
    assert.deepEqual(r.ordinals, [3, 4, 5]);
    assert.equal(freeCount(r.block, reserved), 0);
    assert.equal(freeCount(r.block), 2);
  });

  it('counts a reserved ordinal that is allocated (assigned before the reservation) once', () => {
    const b = assignOrdinal(newBlock(V4, 'n'), 2, 'old');
    assert.equal(freeCount(b, new Set([2, 3])), 3);
  });

  it('keeps, counts and releases an allocation at an excluded ordinal (written by an older version)', () => {
    const legacy: Block = {
      cidr: V4,
      affinity: 'n',
      allocations: new Map([
        [0, 'old'],
        [7, 'old'],
        [3, 'new'],
      ]),
      next: 0,
    };
    assert.equal(allocatedCount(legacy), 3);
    assert.equal(freeCount(legacy), 4, 'only usable ordinals count as free or taken');
    assert.deepEqual(allocateOrdinals(legacy, 9, 'x').ordinals, [2, 4, 5, 6]);
    const r = releaseHandle(legacy, 'old');
    assert.deepEqual(r.ordinals, [0, 7]);
    assert.deepEqual([...r.block.allocations], [[3, 'new']]);
    assert.deepEqual([...releaseOrdinals(legacy, [0]).released], [[0, 'old']]);
  });

  it('hands out nothing while the gateway ordinal is held (an older version gave it to a pod), and again once it is released', () => {
    const legacy: Block = { cidr: V4, affinity: 'n', allocations: new Map([[1, 'old']]), next: 0 };
    assert.equal(freeCount(legacy), 0);
    assert.deepEqual(allocateOrdinals(legacy, 1, 'x').ordinals, []);
    const freed = releaseHandle(legacy, 'old').block;
    assert.equal(freeCount(freed), 5);
    assert.deepEqual(allocateOrdinals(freed, 1, 'x').ordinals, [2]);
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
    assert.deepEqual(r.ordinals, [2, 3, 5, 6]);
  });

  it('refuses a taken ordinal naming the holder, ordinals out of range, and excluded ordinals naming their role', () => {
    const b = assignOrdinal(newBlock(V4, 'n'), 4, 'h');
    assert.throws(() => assignOrdinal(b, 4, 'other'), /10\.0\.0\.4: it is held by handle "h"/);
    assert.throws(() => assignOrdinal(b, 8, 'other'), RangeError);
    assert.throws(() => assignOrdinal(b, 0, 'x'), /Cannot assign 10\.0\.0\.0: it is the network address of block 10\.0\.0\.0\/29/);
    assert.throws(() => assignOrdinal(b, 1, 'x'), /Cannot assign 10\.0\.0\.1: it is the gateway of block 10\.0\.0\.0\/29/);
    assert.throws(() => assignOrdinal(b, 7, 'x'), /Cannot assign 10\.0\.0\.7: it is the broadcast address of block 10\.0\.0\.0\/29/);
    assert.throws(() => assignOrdinal(newBlock(V6, 'n'), 0, 'x'), /fd00::40: it is the subnet-router anycast address of block fd00::40\/122/);
    assert.equal(holderOf(assignOrdinal(newBlock(V6, 'n'), 63, 'x'), 63), 'x', 'IPv6 has no broadcast: the last ordinal is usable');
  });

  it('records an excluded ordinal when adopting an address a pod already uses', () => {
    const b = assignOrdinal(assignOrdinal(newBlock(V4, 'n'), 0, 'imported', true), 7, 'imported', true);
    assert.deepEqual(ordinalsOf(b, 'imported'), [0, 7]);
    assert.equal(freeCount(b), 5);
  });
});

describe('release', () => {
  it('releases by ordinal, ignoring free ordinals, and reports the holders', () => {
    let b = allocateOrdinals(newBlock(V4, 'n'), 2, 'h1').block;
    b = allocateOrdinals(b, 1, 'h2').block;
    const r = releaseOrdinals(b, [3, 4, 6]);
    assert.deepEqual(
      [...r.released],
      [
        [3, 'h1'],
        [4, 'h2'],
      ],
    );
    assert.deepEqual([...r.block.allocations], [[2, 'h1']]);
    const again = releaseOrdinals(r.block, [3, 4]);
    assert.equal(again.released.size, 0);
    assert.equal(again.block, r.block);
    assert.throws(() => releaseOrdinals(b, [9]), RangeError);
  });

  it('releases by handle, leaving other handles alone, and is idempotent', () => {
    let b = allocateOrdinals(newBlock(V4, 'n'), 2, 'h1').block;
    b = allocateOrdinals(b, 1, 'h2').block;
    b = assignOrdinal(b, 6, 'h1');
    assert.deepEqual(ordinalsOf(b, 'h1'), [2, 3, 6]);
    assert.deepEqual([...handleCounts(b)].sort(), [
      ['h1', 3],
      ['h2', 1],
    ]);
    const r = releaseHandle(b, 'h1');
    assert.deepEqual(r.ordinals, [2, 3, 6]);
    assert.deepEqual([...r.block.allocations], [[4, 'h2']]);
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
 * allocate(n): walk cap positions from the cursor, take free unreserved ones other than the
 * network (0), the gateway (1) and, for IPv4, the broadcast (cap−1); cursor = last+1.
 */
class Model {
  holders: (string | undefined)[];
  next = 0;
  constructor(
    readonly cap: number,
    readonly v4: boolean,
  ) {
    this.holders = new Array<string | undefined>(cap).fill(undefined);
  }
  excluded(o: number): boolean {
    return o === 0 || o === 1 || (this.v4 && o === this.cap - 1);
  }
  allocate(n: number, h: string, reserved: Set<number>): number[] {
    const got: number[] = [];
    for (let i = 0; i < this.cap; i++) {
      if (got.length === n) break;
      const o = (this.next + i) % this.cap;
      if (this.holders[o] === undefined && !reserved.has(o) && !this.excluded(o)) got.push(o);
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
      const m = new Model(cap, cidr.family === 4);
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
          if (m.holders[o] === undefined && !m.excluded(o)) {
            b = assignOrdinal(b, o, h);
            m.holders[o] = h;
          } else {
            assert.throws(() => assignOrdinal(b, o, h));
          }
        } else if (op === 3) {
          const os = [Math.floor(rnd() * cap), Math.floor(rnd() * cap)];
          const expected = new Map<number, string>();
          for (const o of os) if (m.holders[o] !== undefined) expected.set(o, m.holders[o]);
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
        const freeUnreserved = m.holders.filter((x, o) => x === undefined && !reserved.has(o) && !m.excluded(o)).length;
        assert.equal(freeCount(b, reserved), freeUnreserved);
        assert.equal(isEmptyBlock(b), allocated === 0);
        let sum = 0;
        for (const n of handleCounts(b).values()) sum += n;
        assert.equal(sum, allocated);
      }
    });
  }

  it('isFullBlock agrees with freeCount() === 0, adopted network, gateway and broadcast ordinals included', () => {
    const rand = mulberry32(37);
    for (const cidr of [V4, V6, parsePrefix('10.0.0.0/30'), parsePrefix('fd00::/126'), parsePrefix('10.0.0.0/31')]) {
      const cap = blockCapacity(cidr);
      for (let round = 0; round < 300; round++) {
        const allocations = new Map<number, string>();
        const p = rand();
        for (let o = 0; o < cap; o++) if (rand() < p) allocations.set(o, 'h');
        const b: Block = { cidr, affinity: 'n', allocations, next: 0 };
        assert.equal(isFullBlock(b), freeCount(b) === 0, `${JSON.stringify([...allocations.keys()])} of /${cidr.len}`);
      }
    }
  });
});
