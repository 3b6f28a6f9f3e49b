import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_BLOCK_SIZE_SPREAD, checkBlockSizeSpread, overlappingBlocks } from './overlapping-blocks.js';
import { formatPrefix, parsePrefix, prefixOverlaps, subPrefix } from '../ip/index.js';

const texts = (ps: ReturnType<typeof overlappingBlocks>): string[] => ps.map(formatPrefix);

test('overlappingBlocks: the containing block of each larger size, every contained block of each smaller size', () => {
  assert.deepEqual(texts(overlappingBlocks(parsePrefix('10.0.0.64/26'), [26, 25, 27, 24])), ['10.0.0.0/24', '10.0.0.0/25', '10.0.0.64/27', '10.0.0.96/27']);
  assert.deepEqual(texts(overlappingBlocks(parsePrefix('10.0.0.0/25'), [28])).length, 8);
  assert.deepEqual(texts(overlappingBlocks(parsePrefix('fd00::40/122'), [121])), ['fd00::/121']);
  assert.deepEqual(overlappingBlocks(parsePrefix('10.0.0.0/26'), [26]), [], 'its own size: only its own key (compared anyway)');
});

test('overlappingBlocks equals, by brute force, every block of the other sizes in a /20 that overlaps the block', () => {
  const space = parsePrefix('10.8.0.0/20');
  for (const len of [24, 26, 28]) {
    for (const sizes of [
      [len - 2, len - 1],
      [len + 1, len + 3],
      [len - 4, len + 4],
      [len - 1, len + 2, len + 4],
    ]) {
      for (const idx of [0n, 1n, 5n, (1n << BigInt(len - 20)) - 1n]) {
        const block = subPrefix(space, len, idx);
        const want: string[] = [];
        for (const s of [...sizes].sort((a, b) => a - b)) {
          for (let i = 0n; i < 1n << BigInt(s - 20); i++) {
            const other = subPrefix(space, s, i);
            if (prefixOverlaps(other, block)) want.push(formatPrefix(other));
          }
        }
        assert.deepEqual(texts(overlappingBlocks(block, sizes)), want, `${formatPrefix(block)} with /${sizes.join(', /')}`);
      }
    }
  }
});

test('overlappingBlocks refuses a size more than the spread away; within the spread a claim adds at most 30 compares', () => {
  assert.throws(() => overlappingBlocks(parsePrefix('10.0.0.0/26'), [21]), /block size \/21 is more than 4 bits from block 10\.0\.0\.0\/26/);
  assert.throws(() => overlappingBlocks(parsePrefix('10.0.0.0/26'), [31]), RangeError);
  let most = 0;
  for (let lo = 20; lo + MAX_BLOCK_SIZE_SPREAD <= 30; lo++) {
    const sizes = [lo, lo + 1, lo + 2, lo + 3, lo + 4];
    for (const n of sizes) most = Math.max(most, overlappingBlocks(subPrefix(parsePrefix('10.0.0.0/16'), n, 3n), sizes).length);
  }
  assert.equal(most, 30);
});

test('checkBlockSizeSpread names the pool, the size and the sizes it may choose', () => {
  checkBlockSizeSpread('p', 24, [26, 28]);
  assert.throws(() => checkBlockSizeSpread('p', 23, [26, 28]), /Cannot use 'blockSize' 23 for pool "p": it still has \/28 blocks.*choose a size from 24 to 30/);
  assert.throws(() => checkBlockSizeSpread('p', 30, [25]), /it still has \/25 blocks/);
});
