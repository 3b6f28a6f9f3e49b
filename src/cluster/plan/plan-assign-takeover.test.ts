import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { type Block, allocateOrdinals, holderOf, newBlock, ordinalOf } from '../../alloc/block.js';
import { formatAddr, parseAddr, parsePrefix } from '../../ip/index.js';
import type { Entry } from '../../store/index.js';
import { snapshotFromEntries } from '../views/cluster-snapshot.js';
import { DEFAULT_IPAM_CONFIG, encodeConfig } from '../records/ipam-config.js';
import { blockKey, handleKey } from '../records/keys.js';
import { delFenceKey } from '../records/del-fence-record.js';
import { type OwnBlock, OwnBlocks } from '../views/own-blocks.js';
import { encodePool, validatePoolSpec } from '../records/pool-record.js';
import type { HandleRecord } from '../records/handle-record.js';
import { type PlanInput, planAssign } from './plan-assign.js';

const V4 = validatePoolSpec({ name: 'v4', cidr: '10.0.0.0/24', blockSize: 28 });
const OTHER = validatePoolSpec({ name: 'other', cidr: '10.1.0.0/24', blockSize: 28 });
const e = (key: string, value: string, rev: number): Entry => ({ key, value, rev });
const snap = (config = DEFAULT_IPAM_CONFIG) =>
  snapshotFromEntries(e('config', encodeConfig(config), 7), [e('pools/v4', encodePool(V4), 2), e('pools/other', encodePool(OTHER), 3)]);
const known = (b: Block, rev: number): [string, OwnBlock] => [blockKey(b.cidr), { rev, block: b }];

const HOLD = 'sticky:net:db:db-0:eth0';
const NOW = '2026-01-01T00:00:00.000Z';
const LATER = '2026-01-01T00:10:00.000Z';
const EARLIER = '2025-12-31T23:59:00.000Z';

/** Block 10.0.0.16/28 of n1: 10.0.0.18 held by the hold, 10.0.0.19 by someone else. */
function heldBlock(affinity = 'n1'): Block {
  let b = allocateOrdinals(newBlock(parsePrefix('10.0.0.16/28'), affinity), 1, HOLD).block;
  b = allocateOrdinals(b, 1, 'other:c:eth0').block;
  return b;
}
const holdRecord = (until: string, node = 'n1'): HandleRecord => ({
  node,
  network: 'net',
  namespace: 'db',
  pod: 'db-0',
  stickyUntil: until,
  blocks: new Map([['10.0.0.16/28', 1]]),
});

function input(over: Partial<PlanInput> = {}): PlanInput {
  return {
    req: { node: 'n1', handle: 'net:new:eth0', auto: 'each-family', takeOver: HOLD },
    snap: snap(),
    labels: undefined,
    mine: OwnBlocks.of('n1', [known(heldBlock(), 11)]),
    others: new Map(),
    allListed: false,
    claimMisses: 0,
    delFence: 0,
    claimed: undefined,
    handle: { rev: 0, record: undefined },
    now: NOW,
    ...over,
  };
}

describe('planAssign takeOver (sticky holds)', () => {
  it('reads the hold key first when its state is not known', () => {
    assert.deepEqual(planAssign(input()), { kind: 'read', keys: [handleKey(HOLD)] });
  });

  it('takes a live hold over in one txn: ordinals change holder, the hold is deleted, handle and hold compared', () => {
    const p = planAssign(input({ hold: { rev: 40, record: holdRecord(LATER) } }));
    assert.equal(p.kind, 'txn');
    if (p.kind !== 'txn') return;
    assert.equal(p.tookOver, true);
    assert.deepEqual(
      p.assignments.map((a) => formatAddr(a.addr)),
      ['10.0.0.18'],
    );
    const b = p.blocks.get(blockKey(parsePrefix('10.0.0.16/28')))!;
    assert.equal(holderOf(b, ordinalOf(b.cidr, parseAddr('10.0.0.18'))), 'net:new:eth0');
    assert.equal(holderOf(b, ordinalOf(b.cidr, parseAddr('10.0.0.19'))), 'other:c:eth0', 'other holders untouched');
    assert.deepEqual(p.compares, [
      { key: 'config', rev: 7 },
      { key: delFenceKey('n1'), rev: 0 },
      { key: blockKey(b.cidr), rev: 11 },
      { key: handleKey('net:new:eth0'), rev: 0 },
      { key: handleKey(HOLD), rev: 40 },
    ]);
    assert.deepEqual(
      p.ops.map((o) => `${o.type} ${o.key}`),
      [`put ${blockKey(b.cidr)}`, `delete ${handleKey(HOLD)}`, `put ${handleKey('net:new:eth0')}`],
    );
    assert.deepEqual([...p.handle!.blocks], [['10.0.0.16/28', 1]]);
    assert.equal(p.handle!.stickyUntil, undefined, 'the new handle is no hold');
  });

  it('leaves an expired hold alone (GC releases it) and allocates as usual, still comparing the hold', () => {
    const p = planAssign(input({ hold: { rev: 40, record: holdRecord(EARLIER) } }));
    assert.equal(p.kind, 'txn');
    if (p.kind !== 'txn') return;
    assert.equal(p.tookOver, undefined);
    assert.notEqual(formatAddr(p.assignments[0]!.addr), '10.0.0.18');
    assert.ok(!p.ops.some((o) => o.key === handleKey(HOLD)));
    assert.deepEqual(p.compares.at(-1), { key: handleKey(HOLD), rev: 40 });
  });

  it('compares an absent hold at revision 0 (a hold written meanwhile fails the txn)', () => {
    const p = planAssign(input({ hold: { rev: 0, record: undefined } }));
    assert.equal(p.kind, 'txn');
    if (p.kind === 'txn') {
      assert.deepEqual(p.compares.at(-1), { key: handleKey(HOLD), rev: 0 });
      assert.equal(p.tookOver, undefined);
    }
  });

  it('reads the hold’s blocks when they are not known, and compares a foreign one', () => {
    const foreign = heldBlock('n2');
    assert.deepEqual(planAssign(input({ mine: OwnBlocks.of('n1'), hold: { rev: 40, record: holdRecord(LATER, 'n2') } })), {
      kind: 'read',
      keys: [blockKey(foreign.cidr)],
    });
    const p = planAssign(input({ mine: OwnBlocks.of('n1'), others: new Map([known(foreign, 12)]), hold: { rev: 40, record: holdRecord(LATER, 'n2') } }));
    assert.equal(p.kind, 'txn');
    if (p.kind === 'txn') {
      assert.equal(p.tookOver, true, 'without strictAffinity a pod moved to another node keeps its address');
      assert.ok(p.compares.some((c) => c.key === blockKey(foreign.cidr) && c.rev === 12));
    }
    const strict = planAssign(
      input({
        snap: snap({ ...DEFAULT_IPAM_CONFIG, strictAffinity: true }),
        mine: OwnBlocks.of('n1'),
        others: new Map([known(foreign, 12)]),
        hold: { rev: 40, record: holdRecord(LATER, 'n2') },
      }),
    );
    assert.equal(strict.kind === 'txn' && strict.tookOver, undefined, 'under strictAffinity a foreign block’s address is not taken');
  });

  it('does not take a hold whose address is outside the pools the request draws from', () => {
    const p = planAssign(
      input({
        req: { node: 'n1', handle: 'net:new:eth0', auto: 'each-family', pools: ['other'], takeOver: HOLD },
        hold: { rev: 40, record: holdRecord(LATER) },
      }),
    );
    assert.equal(p.kind, 'txn');
    if (p.kind === 'txn') {
      assert.equal(p.tookOver, undefined);
      assert.match(formatAddr(p.assignments[0]!.addr), /^10\.1\.0\./);
    }
  });

  it('ignores takeOver for a handle that already holds addresses (a repeated ADD) and for specific ips', () => {
    const mine = allocateOrdinals(heldBlock(), 1, 'net:new:eth0').block;
    const rec = { node: 'n1', blocks: new Map([['10.0.0.16/28', 1]]) };
    const p = planAssign(
      input({ mine: OwnBlocks.of('n1', [known(mine, 11)]), handle: { rev: 50, record: rec }, hold: { rev: 40, record: holdRecord(LATER) } }),
    );
    assert.equal(p.kind === 'txn' && p.tookOver, undefined);
    if (p.kind === 'txn') assert.deepEqual(p.ops, [], 'a repeated ADD only verifies');
    const q = planAssign(input({ req: { node: 'n1', handle: 'net:new:eth0', ips: [parseAddr('10.0.0.30')], takeOver: HOLD } }));
    assert.equal(q.kind, 'txn', 'no read of the hold for a request of specific addresses');
  });
});
