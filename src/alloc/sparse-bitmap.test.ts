import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SparseBitmap } from './sparse-bitmap.js';
import { mulberry32 } from '../util/mulberry32.js';

function referenceNextClear(ref: boolean[], from: number): number | undefined {
  for (let i = Math.max(0, from); i < ref.length; i++) if (!ref[i]) return i;
  return undefined;
}

test('sparse bitmap matches a flat array under random range sets and clears', () => {
  for (const size of [1, 2, 31, 32, 33, 1000, 1024, 1025, 40000]) {
    const rnd = mulberry32(size);
    const bm = new SparseBitmap(BigInt(size));
    const ref = new Array<boolean>(size).fill(false);
    for (let step = 0; step < 300; step++) {
      const a = Math.floor(rnd() * size);
      const len = rnd() < 0.5 ? 1 : Math.floor(rnd() * Math.min(size, 3000));
      const b = Math.min(size - 1, a + len);
      const set = rnd() < 0.6;
      let expected = 0;
      for (let i = a; i <= b; i++)
        if (ref[i] !== set) {
          ref[i] = set;
          expected++;
        }
      const changed = set ? bm.setRange(BigInt(a), BigInt(b)) : bm.clearRange(BigInt(a), BigInt(b));
      assert.equal(changed, BigInt(expected), `size ${size} step ${step}`);
      const probe = Math.floor(rnd() * size);
      assert.equal(bm.has(BigInt(probe)), ref[probe]);
      assert.equal(bm.nextClear(BigInt(probe)), ((r) => (r === undefined ? undefined : BigInt(r)))(referenceNextClear(ref, probe)));
    }
    assert.equal(bm.count, BigInt(ref.filter(Boolean).length));
  }
});

test('sparse bitmap nextClear skips a full run in one search and stops at size', () => {
  const bm = new SparseBitmap(1n << 32n);
  assert.equal(bm.setRange(0n, (1n << 31n) - 1n), 1n << 31n);
  assert.equal(bm.nextClear(0n), 1n << 31n);
  bm.setRange(1n << 31n, (1n << 32n) - 2n);
  assert.equal(bm.nextClear(0n), (1n << 32n) - 1n);
  bm.setRange((1n << 32n) - 1n, (1n << 32n) - 1n);
  assert.equal(bm.nextClear(0n), undefined);
  assert.equal(bm.count, 1n << 32n);
  // A hole punched in the middle of a collapsed run is found again.
  assert.equal(bm.clearRange(123456789n, 123456789n), 1n);
  assert.equal(bm.nextClear(5n), 123456789n);
  assert.equal(bm.has(123456789n), false);
  assert.equal(bm.has(123456790n), true);
});

test('sparse bitmap ignores indexes outside 0 … size−1', () => {
  const bm = new SparseBitmap(40n);
  assert.equal(bm.setRange(-5n, 100n), 40n);
  assert.equal(bm.nextClear(0n), undefined);
  assert.equal(bm.has(40n), false);
  assert.equal(bm.nextClear(45n), undefined);
  bm.clear();
  assert.equal(bm.count, 0n);
  assert.equal(bm.nextClear(39n), 39n);
});

test('sparse bitmap rejects a size below one, naming the value', () => {
  assert.throws(() => new SparseBitmap(0n), /'size' must be a bigint ≥ 1: current value is 0/);
});
