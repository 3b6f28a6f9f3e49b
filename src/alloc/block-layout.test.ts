import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { IpRangeSet, formatPrefix, parseAddr, parsePrefix, rangeOf } from '../ip/index.js';
import {
  DEFAULT_BLOCK_SIZE,
  blockAt,
  blockContaining,
  blockCount,
  blockProbeOrder,
  blockProbePosition,
  checkBlockSize,
  checkStoredBlockSize,
  fnv1a32,
  poolUsableCount,
  isWhollyReserved,
  reservedOrdinals,
} from './block-layout.js';

describe('checkBlockSize', () => {
  it('accepts Calico defaults and the allowed ranges', () => {
    assert.deepEqual({ ...DEFAULT_BLOCK_SIZE }, { 4: 26, 6: 122 });
    for (const s of [20, 26, 30]) checkBlockSize(parsePrefix('10.0.0.0/16'), s);
    for (const s of [116, 122, 126]) checkBlockSize(parsePrefix('fd00::/64'), s);
    checkBlockSize(parsePrefix('10.0.0.0/26'), 26);
  });

  it('refuses sizes outside the range, non-integers, and pools smaller than one block', () => {
    assert.throws(
      () => checkBlockSize(parsePrefix('10.0.0.0/16'), 19),
      /'blockSize' 19 for 10\.0\.0\.0\/16: an IPv4 block size must be an integer from 20 to 30/,
    );
    assert.throws(() => checkBlockSize(parsePrefix('10.0.0.0/16'), 33), RangeError);
    assert.throws(() => checkBlockSize(parsePrefix('10.0.0.0/16'), 26.5), RangeError);
    assert.throws(() => checkBlockSize(parsePrefix('fd00::/64'), 115), /IPv6 block size must be an integer from 116 to 126/);
    assert.throws(() => checkBlockSize(parsePrefix('10.0.0.0/27'), 26), /at least one block/);
  });

  it('refuses block sizes that leave no usable address, naming the field, and explains why', () => {
    for (const s of [31, 32]) {
      assert.throws(
        () => checkBlockSize(parsePrefix('10.0.0.0/24'), s),
        new RegExp(
          `^RangeError: Cannot use 'blockSize' ${s} for 10\\.0\\.0\\.0/24: a /${s} block leaves no usable address \\(its network, gateway and broadcast addresses are never handed out\\); an IPv4 block size must be an integer from 20 to 30$`,
        ),
      );
    }
    for (const s of [127, 128])
      assert.throws(
        () => checkBlockSize(parsePrefix('fd00::/64'), s),
        /'blockSize' 12[78] .*subnet-router anycast address and gateway are never handed out.*from 116 to 126/,
      );
  });

  it('still reads pool records with block sizes refused today (older versions wrote them)', () => {
    for (const s of [31, 32]) checkStoredBlockSize(parsePrefix('10.0.0.0/24'), s);
    for (const s of [127, 128]) checkStoredBlockSize(parsePrefix('fd00::/64'), s);
    assert.throws(() => checkStoredBlockSize(parsePrefix('10.0.0.0/24'), 33), /from 20 to 32/);
    assert.throws(() => checkStoredBlockSize(parsePrefix('10.0.0.0/24'), 19), RangeError);
  });
});

describe('blocks of a pool', () => {
  it('counts and enumerates blocks from the pool start', () => {
    const pool = parsePrefix('10.1.0.0/24');
    assert.equal(blockCount(pool, 26), 4n);
    assert.deepEqual(
      [0n, 1n, 2n, 3n].map((i) => formatPrefix(blockAt(pool, 26, i))),
      ['10.1.0.0/26', '10.1.0.64/26', '10.1.0.128/26', '10.1.0.192/26'],
    );
    assert.throws(() => blockAt(pool, 26, 4n), RangeError);
    assert.equal(blockCount(parsePrefix('fd00::/64'), 122), 1n << 58n);
  });

  it('counts the addresses a pool can hand out: blocks × usable addresses per block', () => {
    assert.equal(poolUsableCount(parsePrefix('10.1.0.0/24'), 26), 4n * 61n);
    assert.equal(poolUsableCount(parsePrefix('10.91.0.0/30'), 30), 1n);
    assert.equal(poolUsableCount(parsePrefix('10.244.0.0/16'), 26), 1024n * 61n);
    assert.equal(poolUsableCount(parsePrefix('fd00::/120'), 122), 4n * 62n);
    assert.equal(poolUsableCount(parsePrefix('fd00::/64'), 122), (1n << 58n) * 62n);
    assert.equal(poolUsableCount(parsePrefix('10.0.0.0/30'), 32), 0n, 'a pool stored with /32 blocks hands out nothing');
  });

  it('finds the block holding an address, or none outside the pool', () => {
    const pool = parsePrefix('10.1.0.0/24');
    assert.equal(formatPrefix(blockContaining(pool, 26, parseAddr('10.1.0.130'))!), '10.1.0.128/26');
    assert.equal(blockContaining(pool, 26, parseAddr('10.2.0.1')), undefined);
    assert.equal(blockContaining(pool, 26, parseAddr('fd00::1')), undefined);
  });
});

describe('blockProbeOrder', () => {
  it('visits every block exactly once, for many seeds and sizes', () => {
    for (const count of [1n, 2n, 8n, 64n, 1024n]) {
      for (const seed of ['node-a', 'node-b', 'x', '']) {
        const seen = [...blockProbeOrder(count, seed)];
        assert.equal(seen.length, Number(count));
        assert.equal(new Set(seen).size, Number(count));
        assert.ok(seen.every((i) => i >= 0n && i < count));
      }
    }
  });

  it('is stable for a seed and spreads different seeds', () => {
    const a = [...blockProbeOrder(4096n, 'node-a')].slice(0, 3);
    assert.deepEqual([...blockProbeOrder(4096n, 'node-a')].slice(0, 3), a);
    const starts = new Set(Array.from({ length: 100 }, (_, i) => blockProbeOrder(4096n, `node-${i}`).next().value));
    assert.ok(starts.size > 95, `100 nodes should mostly start at distinct blocks, got ${starts.size}`);
  });

  it('works for counts beyond 2^53 (large IPv6 pools)', () => {
    const it = blockProbeOrder(1n << 58n, 'n');
    const first = [it.next().value, it.next().value, it.next().value];
    assert.equal(new Set(first).size, 3);
    assert.ok(first.every((i) => typeof i === 'bigint' && i < 1n << 58n));
  });

  it('yields nothing for an empty pool', () => {
    assert.deepEqual([...blockProbeOrder(0n, 'n')], []);
  });

  it('started at a position, is the same order rotated: every block once', () => {
    for (const count of [1n, 8n, 1024n]) {
      const whole = [...blockProbeOrder(count, 'node-a')];
      for (const from of [0n, 1n, count / 2n, count - 1n, count + 3n]) {
        const k = Number(from % count);
        assert.deepEqual([...blockProbeOrder(count, 'node-a', from)], [...whole.slice(k), ...whole.slice(0, k)]);
      }
    }
  });

  it('blockProbePosition inverts the order, also beyond 2^53', () => {
    for (const count of [1n, 2n, 64n, 4096n]) {
      [...blockProbeOrder(count, 'node-b')].forEach((idx, n) => assert.equal(blockProbePosition(count, 'node-b', idx), BigInt(n)));
    }
    const big = 1n << 58n;
    const it = blockProbeOrder(big, 'n', 12345n);
    for (let n = 12345n; n < 12350n; n++) assert.equal(blockProbePosition(big, 'n', it.next().value as bigint), n);
  });

  it('fnv1a32 matches the reference vectors', () => {
    assert.equal(fnv1a32(''), 0x811c9dc5);
    assert.equal(fnv1a32('a'), 0xe40c292c);
    assert.equal(fnv1a32('foobar'), 0xbf9cf968);
  });
});

describe('reservations within a block', () => {
  const block = parsePrefix('10.0.0.64/26');
  it('lists the reserved ordinals of a block, clipped to it', () => {
    const set = new IpRangeSet([
      rangeOf(parseAddr('10.0.0.60'), parseAddr('10.0.0.65')),
      rangeOf(parseAddr('10.0.0.100'), parseAddr('10.0.0.100')),
      rangeOf(parseAddr('10.0.0.127'), parseAddr('10.0.1.5')),
      rangeOf(parseAddr('fd00::'), parseAddr('fd00::ff')),
    ]);
    assert.deepEqual(
      [...reservedOrdinals(block, set)].sort((a, b) => a - b),
      [0, 1, 36, 63],
    );
    assert.equal(isWhollyReserved(block, set), false);
  });

  it('detects a wholly reserved block: every usable address reserved', () => {
    assert.equal(isWhollyReserved(block, new IpRangeSet([rangeOf(parseAddr('10.0.0.0'), parseAddr('10.0.0.255'))])), true);
    assert.equal(
      isWhollyReserved(block, new IpRangeSet([rangeOf(parseAddr('10.0.0.66'), parseAddr('10.0.0.126'))])),
      true,
      '.64, .65 and .127 are never handed out anyway',
    );
    assert.equal(isWhollyReserved(block, new IpRangeSet([rangeOf(parseAddr('10.0.0.67'), parseAddr('10.0.0.255'))])), false, '.66 is free');
    assert.equal(isWhollyReserved(block, new IpRangeSet([rangeOf(parseAddr('10.0.0.64'), parseAddr('10.0.0.125'))])), false, '.126 is free');
    assert.equal(isWhollyReserved(parsePrefix('10.0.0.0/31'), new IpRangeSet()), true, 'a block with no usable address');
    assert.equal(reservedOrdinals(block, new IpRangeSet()).size, 0);
  });
});
