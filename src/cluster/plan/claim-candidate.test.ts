import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { blockAt, blockCount, blockProbeOrder } from '../../alloc/block-layout.js';
import { IpRangeSet, type Prefix } from '../../ip/index.js';
import { blockKey } from '../records/keys.js';
import { validatePoolSpec } from '../records/pool-record.js';
import { claimPosition, findClaimableBlock } from './claim-candidate.js';

const POOL = validatePoolSpec({ name: 'p', cidr: '10.0.0.0/16', blockSize: 26 }); // 1,024 blocks
const COUNT = blockCount(POOL.cidr, POOL.blockSize);
const order = (node: string): Prefix[] => [...blockProbeOrder(COUNT, `${node}/p`)].map((i) => blockAt(POOL.cidr, POOL.blockSize, i));

/** findClaimableBlock for node n1 owning `own`, everything in `taken` held; the claim and how many keys it probed. */
function claim(own: readonly Prefix[], taken: ReadonlySet<string>) {
  let probes = 0;
  const c = findClaimableBlock(
    [POOL],
    new IpRangeSet([]),
    'n1',
    (key) => {
      probes++;
      return taken.has(key);
    },
    true,
    (pool) => own.map(claimPosition(pool, 'n1')).reduce((a, b) => (a > b ? a : b), -1n) + 1n,
  );
  return { c: c === 'unknown' || c === undefined ? c : c.key, probes };
}

describe('findClaimableBlock', () => {
  it('a node owning many blocks claims the next one in a probe or two, not one probe per block it owns', () => {
    const seq = order('n1');
    for (const k of [1, 50, 500]) {
      const own = seq.slice(0, k);
      const { c, probes } = claim(own, new Set(own.map(blockKey)));
      assert.equal(c, blockKey(seq[k]!), `owning ${k}`);
      assert.ok(probes <= 2, `owning ${k} blocks, the claim probed ${probes} keys`);
    }
  });

  it('resumes past its furthest block and wraps round to the free positions before it', () => {
    const seq = order('n1');
    // Owns only the block at position 10; every later position is held by others.
    const taken = new Set(seq.slice(10).map(blockKey));
    assert.equal(claim([seq[10]!], taken).c, blockKey(seq[0]!));
    // Every block held: nothing to claim, each visited once.
    const all = claim([seq[10]!], new Set(seq.map(blockKey)));
    assert.equal(all.c, undefined);
    assert.equal(all.probes, Number(COUNT));
  });

  it('a node with no block (or only blocks of another size) starts at its first position', () => {
    const seq = order('n1');
    assert.equal(claim([], new Set()).c, blockKey(seq[0]!));
    const other = { family: 4, base: seq[5]!.base, len: 27 } as const;
    assert.equal(claim([other], new Set()).c, blockKey(seq[0]!));
  });
});
