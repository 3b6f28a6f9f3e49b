import { describe, it } from 'node:test';
import { nodeTombstoneKey } from '../../model/node-tombstone.js';
import assert from 'node:assert/strict';
import { type Block, allocateOrdinals, newBlock } from '../../alloc/block.js';
import { blockAt, blockProbeOrder } from '../../alloc/block-layout.js';
import { formatAddr, formatPrefix, parsePrefix } from '../../ip/index.js';
import type { Entry } from '../../store/index.js';
import { snapshotFromEntries } from '../views/cluster-snapshot.js';
import { PoolExhaustedError } from '../records/errors.js';
import { encodeConfig, DEFAULT_IPAM_CONFIG } from '../records/ipam-config.js';
import { affinityKey, blockKey, handleKey } from '../records/keys.js';
import { delFenceKey } from '../records/del-fence-record.js';
import { type OwnBlock, OwnBlocks } from '../views/own-blocks.js';
import { type PlanInput, MAX_CLAIM_MISSES, planAssign } from './plan-assign.js';
import { encodePool, validatePoolSpec } from '../records/pool-record.js';
import { encodeReservation } from '../records/reservation-record.js';

const V4 = validatePoolSpec({ name: 'v4', cidr: '10.0.0.0/24', blockSize: 28 }); // 16 blocks of 16
const V6 = validatePoolSpec({ name: 'v6', cidr: 'fd00::/120', blockSize: 124 });
const e = (key: string, value: string, rev: number): Entry => ({ key, value, rev });

function snap(extra: Entry[] = [], config = DEFAULT_IPAM_CONFIG) {
  return snapshotFromEntries(e('config', encodeConfig(config), 7), [e('pools/v4', encodePool(V4), 2), e('pools/v6', encodePool(V6), 3), ...extra]);
}

function input(over: Partial<PlanInput> = {}): PlanInput {
  return {
    req: { node: 'n1', handle: 'h', auto: 'each-family' },
    snap: snap(),
    labels: undefined,
    mine: OwnBlocks.of('n1'),
    others: new Map(),
    allListed: false,
    claimMisses: 0,
    delFence: 0,
    claimed: undefined,
    handle: { rev: 0, record: undefined },
    now: 'T',
    ...over,
  };
}

const firstProbe = (pool: typeof V4, node = 'n1') =>
  blockAt(pool.cidr, pool.blockSize, blockProbeOrder(1n << BigInt(pool.blockSize - pool.cidr.len), `${node}/${pool.name}`).next().value as bigint);
const known = (b: Block, rev: number): [string, OwnBlock] => [blockKey(b.cidr), { rev, block: b }];

describe('planAssign', () => {
  it('claims the first block of the node’s probe order per family in the same txn as the handle', () => {
    const p = planAssign(input());
    assert.equal(p.kind, 'txn');
    if (p.kind !== 'txn') return;
    const b4 = firstProbe(V4);
    const b6 = firstProbe(V6);
    assert.deepEqual(p.compares, [
      { key: 'config', rev: 7 },
      { key: delFenceKey('n1'), rev: 0 },
      { key: blockKey(b4), rev: 0 },
      { key: blockKey(b6), rev: 0 },
      { key: handleKey('h'), rev: 0 },
    ]);
    assert.deepEqual(
      p.ops.map((o) => `${o.type} ${o.key}`),
      [
        `put ${blockKey(b4)}`,
        `put ${affinityKey('n1', b4)}`,
        `put ${blockKey(b6)}`,
        `put ${affinityKey('n1', b6)}`,
        // a claim registers the node: a tombstone of an earlier deletion no longer proves it gone
        `delete ${nodeTombstoneKey('n1')}`,
        `put ${handleKey('h')}`,
      ],
    );
    assert.deepEqual(p.claims, [blockKey(b4), blockKey(b6)]);
    assert.deepEqual(
      p.assignments.map((a) => `${formatAddr(a.addr)}/${a.prefixLen} via ${formatAddr(a.gateway)} ${a.pool}`),
      [
        `${formatAddr({ family: 4, value: b4.base + 2n })}/28 via ${formatAddr({ family: 4, value: b4.base + 1n })} v4`,
        `${formatAddr({ family: 6, value: b6.base + 2n })}/124 via ${formatAddr({ family: 6, value: b6.base + 1n })} v6`,
      ],
    );
    assert.deepEqual(
      [...p.handle!.blocks].map(([c, n]) => [c, n]),
      [
        [formatPrefix(b4), 1],
        [formatPrefix(b6), 1],
      ],
    );
    assert.equal(p.writesHandle, true);
  });

  it('in the steady state writes one block per family and the handle, comparing exactly those plus config', () => {
    const a = allocateOrdinals(newBlock(parsePrefix('10.0.0.16/28'), 'n1'), 3, 'x').block;
    const b = newBlock(parsePrefix('fd00::10/124'), 'n1');
    const p = planAssign(input({ mine: OwnBlocks.of('n1', [known(a, 11), known(b, 12)]) }));
    assert.equal(p.kind, 'txn');
    if (p.kind !== 'txn') return;
    assert.deepEqual(p.compares, [
      { key: 'config', rev: 7 },
      { key: delFenceKey('n1'), rev: 0 },
      { key: blockKey(a.cidr), rev: 11 },
      { key: blockKey(b.cidr), rev: 12 },
      { key: 'handles/h', rev: 0 },
    ]);
    assert.equal(p.ops.length, 3);
    assert.deepEqual(p.claims, []);
    assert.deepEqual(
      p.assignments.map((x) => formatAddr(x.addr)),
      ['10.0.0.21', 'fd00::12'],
    );
  });

  it('asks to read the blocks of an existing handle, then only tops up the missing family', () => {
    const a = allocateOrdinals(newBlock(parsePrefix('10.0.0.16/28'), 'n1'), 1, 'h').block;
    const record = { node: 'n1', blocks: new Map([['10.0.0.16/28', 1]]) };
    assert.deepEqual(planAssign(input({ handle: { rev: 30, record } })), { kind: 'read', keys: [blockKey(a.cidr)] });
    const p = planAssign(input({ handle: { rev: 30, record }, mine: OwnBlocks.of('n1', [known(a, 29)]) }));
    assert.equal(p.kind, 'txn');
    if (p.kind !== 'txn') return;
    assert.deepEqual(
      p.assignments.map((x) => formatAddr(x.addr)),
      ['10.0.0.18', formatAddr({ family: 6, value: firstProbe(V6).base + 2n })],
    );
    assert.ok(
      p.compares.some((c) => c.key === blockKey(a.cidr) && c.rev === 29),
      'the held block is compared',
    );
    assert.deepEqual(p.compares.at(-1), { key: 'handles/h', rev: 30 });
    const done = planAssign(input({ req: { node: 'n1', handle: 'h', auto: { 4: 1 } }, handle: { rev: 30, record }, mine: OwnBlocks.of('n1', [known(a, 29)]) }));
    assert.equal(done.kind, 'txn');
    if (done.kind === 'txn') {
      assert.deepEqual(done.ops, [], 'a handle holding what it asks for only verifies');
      assert.equal(done.writesHandle, false);
    }
  });

  it('lists the claimed CIDRs after MAX_CLAIM_MISSES failed claims, then skips them', () => {
    assert.equal(planAssign(input({ claimMisses: MAX_CLAIM_MISSES })).kind, 'list-claimed');
    const b4 = firstProbe(V4);
    const p = planAssign(input({ claimMisses: MAX_CLAIM_MISSES, claimed: new Set([blockKey(b4)]) }));
    assert.equal(p.kind, 'txn');
    if (p.kind === 'txn') {
      assert.ok(!p.claims.includes(blockKey(b4)), 'a listed claimed block is skipped');
      assert.ok(p.claims.includes(blockKey(firstProbe(V6))), 'an unlisted block is claimed');
    }
    // Once every block was listed, unknown keys are known absent and the claim goes ahead.
    assert.equal(planAssign(input({ claimMisses: MAX_CLAIM_MISSES, allListed: true })).kind, 'txn');
  });

  it('skips blocks seen held by other nodes in earlier calls, without a miss or a list', () => {
    const b4 = firstProbe(V4);
    const b6 = firstProbe(V6);
    const p = planAssign(input({ claimedByOthers: new Set([blockKey(b4)]) }));
    assert.equal(p.kind, 'txn');
    if (p.kind === 'txn') {
      assert.ok(!p.claims.includes(blockKey(b4)), 'the block seen held is not claimed again');
      assert.equal(p.claims.length, 2, 'another IPv4 block is claimed instead, by guess');
      assert.ok(p.claims.includes(blockKey(b6)));
    }
  });

  it('skips blocks others hold and wholly reserved blocks when claiming', () => {
    const b4 = firstProbe(V4);
    const theirs = newBlock(b4, 'n2');
    const r = e('reservations/r', encodeReservation({ name: 'r', cidrs: [firstProbe(V6)] }), 4);
    const p = planAssign(input({ snap: snap([r]), others: new Map([known(theirs, 5)]) }));
    assert.equal(p.kind, 'txn');
    if (p.kind !== 'txn') return;
    assert.ok(!p.claims.includes(blockKey(b4)));
    assert.ok(!p.claims.includes(blockKey(firstProbe(V6))));
    assert.equal(p.claims.length, 2);
  });

  it('reads the node record when a selector needs labels, and compares it', () => {
    const zoned = validatePoolSpec({ name: 'z', cidr: '10.9.0.0/24', nodeSelector: 'zone=a' });
    const s = snapshotFromEntries(e('config', encodeConfig(DEFAULT_IPAM_CONFIG), 7), [e('pools/z', encodePool(zoned), 2)]);
    assert.deepEqual(planAssign(input({ snap: s })), { kind: 'read', keys: ['nodes/n1'] });
    const p = planAssign(input({ snap: s, labels: { rev: 44, labels: { zone: 'a' } } }));
    assert.equal(p.kind, 'txn');
    if (p.kind === 'txn') assert.deepEqual(p.compares[1], { key: 'nodes/n1', rev: 44 });
  });

  it('borrows from the blocks known so far (a page), and asks for the next page from a hashed block only when they are full', () => {
    const cfg = { ...DEFAULT_IPAM_CONFIG, maxBlocksPerHost: 1 };
    const full4 = allocateOrdinals(newBlock(parsePrefix('10.0.0.0/28'), 'n1'), 16, 'x').block;
    const own6 = newBlock(parsePrefix('fd00::/124'), 'n1');
    const mine = OwnBlocks.of('n1', [known(full4, 1), known(own6, 2)]);
    const theirs = newBlock(parsePrefix('10.0.0.32/28'), 'n2');
    const p = planAssign(input({ snap: snap([], cfg), mine, others: new Map([known(theirs, 9)]) }));
    assert.equal(p.kind, 'txn', 'a known block with room is enough: no list of every block');
    const fullTheirs = allocateOrdinals(theirs, 16, 'y').block;
    const next = planAssign(input({ snap: snap([], cfg), mine, others: new Map([known(fullTheirs, 9)]) }));
    assert.equal(next.kind, 'list-blocks');
    if (next.kind === 'list-blocks') assert.match(next.from, /^blocks\/10\.0\.0\.\d+-28$/, 'the scan starts at a block of the pool');
    const other = planAssign(
      input({ req: { node: 'n9', handle: 'h', auto: 'each-family' }, snap: snap([], cfg), mine: OwnBlocks.of('n9'), others: new Map() }),
    );
    assert.equal(other.kind, 'txn');
  });

  it('borrows only from listed blocks, and is all-or-nothing when a family runs out', () => {
    const cfg = { ...DEFAULT_IPAM_CONFIG, maxBlocksPerHost: 1 };
    const full4 = allocateOrdinals(newBlock(parsePrefix('10.0.0.0/28'), 'n1'), 16, 'x').block;
    const own6 = newBlock(parsePrefix('fd00::/124'), 'n1');
    const mine = OwnBlocks.of('n1', [known(full4, 1), known(own6, 2)]);
    assert.equal(planAssign(input({ snap: snap([], cfg), mine })).kind, 'list-blocks');
    const theirs = newBlock(parsePrefix('10.0.0.32/28'), 'n2');
    const p = planAssign(input({ snap: snap([], cfg), mine, others: new Map([known(theirs, 9)]), allListed: true }));
    assert.equal(p.kind, 'txn');
    if (p.kind === 'txn')
      assert.deepEqual(
        p.assignments.map((x) => formatAddr(x.addr)),
        ['10.0.0.34', 'fd00::2'],
      );
    assert.throws(
      () => planAssign(input({ snap: snap([], { ...cfg, strictAffinity: true }), mine })),
      (err: unknown) => err instanceof PoolExhaustedError && err.family === 4 && /per-host limit is 1/.test(err.message),
    );
  });
});
