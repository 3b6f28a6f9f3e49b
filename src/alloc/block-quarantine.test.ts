import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePrefix } from '../ip/index.js';
import { allocateOrdinals, assignOrdinal, newBlock, releaseOrdinals } from './block.js';
import { CLOCK_SKEW_MARGIN_MS, isDisposable, quarantineHeld, quarantinedOrdinals, stampReleases } from './block-quarantine.js';

const cidr = parsePrefix('10.0.0.0/28');
const T = 1_800_000_000_000;

test('stampReleases records every ordinal the write frees, at the writer’s clock, only when the pool quarantines', () => {
  const held = allocateOrdinals(newBlock(cidr, 'a'), 3, 'h').block; // ordinals 2, 3, 4 (0 network, 1 gateway)
  const freed = releaseOrdinals(held, [2, 4]).block;
  const on = stampReleases(held, freed, { reuseAfterMs: 30_000, now: T });
  assert.deepEqual(
    [...(on.released ?? [])],
    [
      [2, T],
      [4, T],
    ],
  );
  const off = stampReleases(held, freed, { reuseAfterMs: 0, now: T });
  assert.equal(off.released, undefined);
  // A new block (nothing before it) records nothing.
  assert.equal(stampReleases(null, held, { reuseAfterMs: 30_000, now: T }).released, undefined);
});

test('an ordinal is quarantined until release + reuseAfter + the clock margin, then dropped by the next write', () => {
  const held = allocateOrdinals(newBlock(cidr, 'a'), 1, 'h').block;
  const b = stampReleases(held, releaseOrdinals(held, [2]).block, { reuseAfterMs: 10_000, now: T });
  const end = T + 10_000 + CLOCK_SKEW_MARGIN_MS;
  assert.deepEqual([...quarantinedOrdinals(b, { reuseAfterMs: 10_000, now: T + 10_000 })], [[2, end]]);
  assert.deepEqual([...quarantinedOrdinals(b, { reuseAfterMs: 10_000, now: end - 1 })], [[2, end]]);
  assert.equal(quarantinedOrdinals(b, { reuseAfterMs: 10_000, now: end }).size, 0);
  // The pool's setting at the time of the check counts: turned off, nothing is quarantined.
  assert.equal(quarantinedOrdinals(b, { reuseAfterMs: 0, now: T }).size, 0);
  // The next write after the end drops the entry; before it, keeps it.
  assert.deepEqual([...(stampReleases(null, b, { reuseAfterMs: 10_000, now: end - 1 }).released ?? [])], [[2, T]]);
  assert.equal(stampReleases(null, b, { reuseAfterMs: 10_000, now: end }).released, undefined);
  // A release time in the future (a releaser whose clock runs ahead) is honoured as written.
  const ahead = { ...b, released: new Map([[2, T + 60_000]]) };
  assert.equal(quarantinedOrdinals(ahead, { reuseAfterMs: 10_000, now: T + 65_000 }).size, 1);
});

test('assigning an ordinal drops its release entry; allocateOrdinals skips what the caller passes as reserved', () => {
  const held = allocateOrdinals(newBlock(cidr, 'a'), 2, 'h').block; // 2, 3
  const b = stampReleases(held, releaseOrdinals(held, [2, 3]).block, { reuseAfterMs: 10_000, now: T });
  assert.deepEqual([...assignOrdinal(b, 2, 'x').released!.keys()], [3]);
  const q = { reuseAfterMs: 10_000, now: T + 1 };
  const r = allocateOrdinals({ ...b, next: 0 }, 2, 'y', new Set(quarantinedOrdinals(b, q).keys()));
  assert.deepEqual(r.ordinals, [4, 5]);
  assert.deepEqual([...r.block.released!.keys()], [2, 3]);
  // Without the reserved set, the cursor reaches the freed ones first, and their entries go.
  const plain = allocateOrdinals({ ...b, next: 0 }, 1, 'y');
  assert.deepEqual([plain.ordinals, [...plain.block.released!.keys()]], [[2], [3]]);
});

test('a block is disposable only when it holds nothing and quarantines nothing; quarantineHeld counts usable free ones', () => {
  const held = allocateOrdinals(newBlock(cidr, 'a'), 2, 'h').block;
  const b = stampReleases(held, releaseOrdinals(held, [2, 3]).block, { reuseAfterMs: 10_000, now: T });
  assert.equal(isDisposable(b, { reuseAfterMs: 10_000, now: T + 5_000 }), false);
  assert.equal(isDisposable(b, { reuseAfterMs: 10_000, now: T + 11_000 }), true);
  assert.equal(isDisposable(held, { reuseAfterMs: 10_000, now: T }), false);
  assert.deepEqual(quarantineHeld(b, { reuseAfterMs: 10_000, now: T }, new Set([3])), { count: 1, until: T + 10_000 + CLOCK_SKEW_MARGIN_MS });
});
