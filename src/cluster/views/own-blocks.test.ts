import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { type Block, allocateOrdinals, isFullBlock, newBlock, releaseOrdinals } from '../../alloc/block.js';
import { type Prefix, formatPrefix, parsePrefix, prefixContainsPrefix } from '../../ip/index.js';
import { blockKey } from '../records/keys.js';
import { OwnBlocks } from './own-blocks.js';

/** Block i: a /30 of 10.0.0.0/24 (i < 64) or a /126 of fd00::/120 (i ≥ 64). */
const cidrOf = (i: number): Prefix => (i < 64 ? parsePrefix(`10.0.0.${i * 4}/30`) : parsePrefix(`fd00::${((i - 64) * 4).toString(16)}/126`));
const V4 = parsePrefix('10.0.0.0/24');
const LOW = parsePrefix('10.0.0.0/26');
const V6 = parsePrefix('fd00::/120');
const full = (b: Block): Block => allocateOrdinals(b, 4, 'h').block;
const count = (space: Prefix) => (acc: number, c: Prefix) => (prefixContainsPrefix(space, c) ? acc + 1 : acc);

describe('OwnBlocks', () => {
  it('lists the blocks with room inside a space in address order, whatever order they came in', () => {
    const o = new OwnBlocks('n1');
    for (const i of [9, 70, 2, 65, 5]) o.set(blockKey(cidrOf(i)), { rev: i, block: newBlock(cidrOf(i), 'n1') });
    o.set(blockKey(cidrOf(5)), { rev: 50, block: full(newBlock(cidrOf(5), 'n1')) });
    const keys = (space: Prefix) => [...o.withRoomIn(space)].map(([, kb]) => formatPrefix(kb.block.cidr));
    assert.deepEqual(keys(V4), ['10.0.0.8/30', '10.0.0.36/30'], 'the full block is left out');
    assert.deepEqual(keys(LOW), ['10.0.0.8/30', '10.0.0.36/30']);
    assert.deepEqual(keys(parsePrefix('10.0.0.16/28')), []);
    assert.deepEqual(keys(V6), ['fd00::4/126', 'fd00::18/126']);
    // A freed address brings the block back; a deleted block goes.
    o.set(blockKey(cidrOf(5)), {
      rev: 51,
      block: releaseOrdinals(o.get(blockKey(cidrOf(5)))!.block, [...o.get(blockKey(cidrOf(5)))!.block.allocations.keys()]).block,
    });
    o.delete(blockKey(cidrOf(9)));
    assert.deepEqual(keys(V4), ['10.0.0.8/30', '10.0.0.20/30']);
    assert.equal(o.get(blockKey(cidrOf(5)))!.rev, 51);
  });

  it('keeps a fold up to date as blocks arrive and recomputes it after one leaves', () => {
    const o = OwnBlocks.of(
      'n1',
      [1, 2].map((i) => [blockKey(cidrOf(i)), { rev: 1, block: newBlock(cidrOf(i), 'n1') }]),
    );
    let steps = 0;
    const step = (acc: number, c: Prefix) => (steps++, count(V4)(acc, c));
    assert.equal(o.fold('v4', 0, step), 2);
    assert.equal(o.fold('v4', 0, step), 2);
    assert.equal(steps, 2, 'a second read is the cached value');
    o.set(blockKey(cidrOf(3)), { rev: 2, block: newBlock(cidrOf(3), 'n1') });
    o.set(blockKey(cidrOf(3)), { rev: 3, block: full(newBlock(cidrOf(3), 'n1')) });
    o.set(blockKey(cidrOf(66)), { rev: 2, block: newBlock(cidrOf(66), 'n1') });
    assert.equal(o.fold('v4', 0, step), 3);
    assert.equal(steps, 4, 'a new block is one step; a changed one none');
    o.delete(blockKey(cidrOf(1)));
    assert.equal(o.fold('v4', 0, step), 2);
    assert.equal(steps, 7, 'after a block left the fold walks them all again');
  });

  it("refuses another node's block, and keeps blocks that share a base apart", () => {
    const o = new OwnBlocks('n1');
    assert.throws(() => o.set(blockKey(cidrOf(1)), { rev: 1, block: newBlock(cidrOf(1), 'n2') }), /affinity is "n2"/);
    assert.throws(() => o.set(blockKey(cidrOf(1)), { rev: 1, block: newBlock(cidrOf(1), null) }), /affinity is null/);
    assert.equal(o.size, 0);
    // Blocks of one node never overlap; a corrupt store could still hold two at one base.
    const wide = parsePrefix('10.0.0.0/29');
    o.set(blockKey(cidrOf(0)), { rev: 1, block: newBlock(cidrOf(0), 'n1') });
    o.set(blockKey(wide), { rev: 1, block: newBlock(wide, 'n1') });
    o.set(blockKey(cidrOf(0)), { rev: 2, block: full(newBlock(cidrOf(0), 'n1')) });
    assert.deepEqual(
      [...o.withRoomIn(V4)].map(([k]) => k),
      [blockKey(wide)],
    );
    o.set(blockKey(wide), { rev: 2, block: allocateOrdinals(newBlock(wide, 'n1'), 8, 'h').block });
    assert.deepEqual([...o.withRoomIn(V4)], []);
  });

  it('a copy changes apart from the original', () => {
    const o = OwnBlocks.of('n1', [[blockKey(cidrOf(1)), { rev: 1, block: newBlock(cidrOf(1), 'n1') }]]);
    assert.equal(o.fold('v4', 0, count(V4)), 1);
    const c = o.copy();
    c.set(blockKey(cidrOf(2)), { rev: 1, block: newBlock(cidrOf(2), 'n1') });
    c.set(blockKey(cidrOf(1)), { rev: 2, block: full(newBlock(cidrOf(1), 'n1')) });
    assert.equal(c.fold('v4', 0, count(V4)), 2);
    assert.equal(o.fold('v4', 0, count(V4)), 1);
    assert.deepEqual(
      [...c.withRoomIn(V4)].map(([k]) => k),
      [blockKey(cidrOf(2))],
    );
    assert.deepEqual(
      [...o.withRoomIn(V4)].map(([k]) => k),
      [blockKey(cidrOf(1))],
    );
  });

  it('agrees with a walk of every block after any sequence of changes (property)', () => {
    const op = fc.record({ i: fc.integer({ min: 0, max: 79 }), kind: fc.constantFrom('empty', 'full', 'one', 'delete', 'copy') });
    fc.assert(
      fc.property(fc.array(op, { maxLength: 120 }), (ops) => {
        let o = new OwnBlocks('n1');
        const spaces = [V4, LOW, V6, parsePrefix('10.0.0.128/25')];
        for (const { i, kind } of ops) {
          const key = blockKey(cidrOf(i));
          if (kind === 'delete') o.delete(key);
          else if (kind === 'copy') o = o.copy();
          else {
            const b = newBlock(cidrOf(i), 'n1');
            o.set(key, { rev: 1, block: kind === 'empty' ? b : kind === 'full' ? full(b) : allocateOrdinals(b, 1, 'h').block });
          }
          // Read the folds now and then, so some are cached across later changes.
          if (i % 3 === 0) for (const s of spaces) o.fold(formatPrefix(s), 0, count(s));
        }
        for (const s of spaces) {
          const walk = [...o.values()].filter((kb) => prefixContainsPrefix(s, kb.block.cidr));
          const room = walk.filter((kb) => !isFullBlock(kb.block)).sort((a, b) => (a.block.cidr.base < b.block.cidr.base ? -1 : 1));
          assert.deepEqual(
            [...o.withRoomIn(s)].map(([, kb]) => formatPrefix(kb.block.cidr)),
            room.map((kb) => formatPrefix(kb.block.cidr)),
          );
          assert.equal(o.fold(formatPrefix(s), 0, count(s)), walk.length);
        }
      }),
      { seed: 4242, numRuns: 300 },
    );
  });
});
