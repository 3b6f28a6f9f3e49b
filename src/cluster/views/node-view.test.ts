import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { newBlock } from '../../alloc/block.js';
import { parsePrefix } from '../../ip/index.js';
import { blockKey } from '../records/keys.js';
import { MAX_CLAIMED_HINTS, NodeView } from './node-view.js';

const cidr = (i: number) => parsePrefix(`10.${(i >> 8) & 255}.${i & 255}.0/26`);

describe('NodeView.claimedByOthers', () => {
  it('remembers blocks seen held by other nodes, and forgets one seen absent or turned ours', () => {
    const v = new NodeView('n1');
    const a = cidr(1);
    const b = cidr(2);
    v.noteBlock(blockKey(a), 5, newBlock(a, 'n2'));
    v.noteBlock(blockKey(b), 6, newBlock(b, 'n3'));
    assert.deepEqual([...v.claimedByOthers], [blockKey(a), blockKey(b)]);
    assert.equal(v.blocks.size, 0, 'another node’s block is not one of ours');
    v.noteBlock(blockKey(a), 0, null);
    assert.ok(!v.claimedByOthers.has(blockKey(a)), 'a block seen absent is claimable again');
    v.noteBlock(blockKey(b), 9, newBlock(b, 'n1'));
    assert.ok(!v.claimedByOthers.has(blockKey(b)), 'a block that became ours is not another’s');
    assert.ok(v.blocks.has(blockKey(b)));
  });

  it('keeps at most MAX_CLAIMED_HINTS keys, forgetting the oldest', () => {
    const v = new NodeView('n1');
    for (let i = 0; i <= MAX_CLAIMED_HINTS; i++) v.noteBlock(blockKey(cidr(i)), 1, newBlock(cidr(i), 'n2'));
    assert.equal(v.claimedByOthers.size, MAX_CLAIMED_HINTS);
    assert.ok(!v.claimedByOthers.has(blockKey(cidr(0))));
    assert.ok(v.claimedByOthers.has(blockKey(cidr(MAX_CLAIMED_HINTS))));
  });
});
