import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatPrefix, parsePrefix } from '../../ip/index.js';
import type { Compare, Op } from '../../store/index.js';
import { CONFIG_KEY, blockKey, poolKey } from '../records/keys.js';
import { type Pool, encodePool, validatePoolSpec } from '../records/pool-record.js';
import { GateRefusedError } from './gate-refused-error.js';
import { type SpaceView, guardedCompares, needsBlocks, shapeOf } from './gate-rules.js';

const pool = (name: string, cidr: string, blockSize: number, extra: Partial<Pool> = {}): Pool => ({ ...validatePoolSpec({ name, cidr, blockSize }), ...extra });
const bk = (cidr: string) => blockKey(parsePrefix(cidr));
const putBlock = (cidr: string): Op => ({ type: 'put', key: bk(cidr), value: '{}' });
const putPool = (p: Pool): Op => ({ type: 'put', key: poolKey(p.name), value: encodePool(p) });

function run(compares: Compare[], ops: Op[], pools: Pool[], blocks: string[] = [], configRev = 7): ReturnType<typeof guardedCompares> {
  const shape = shapeOf('test write', compares, ops);
  const view: SpaceView = { configRev, pools, blocks: blocks.map((b) => parsePrefix(b)) };
  return guardedCompares('test write', shape, compares, view, view);
}

function refused(reason: string, f: () => unknown, detail?: RegExp): void {
  assert.throws(f, (e: unknown) => {
    assert.ok(e instanceof GateRefusedError, String(e));
    assert.equal(e.reason, reason, e.message);
    if (detail) assert.match(e.detail, detail);
    return true;
  });
}

test('a block, pool or config write without a compare on its key is refused', () => {
  refused('uncompared', () => shapeOf('w', [], [putBlock('10.0.0.0/26')]));
  refused('uncompared', () => shapeOf('w', [], [{ type: 'delete', key: bk('10.0.0.0/26') }]));
  refused('uncompared', () => shapeOf('w', [], [putPool(pool('p', '10.0.0.0/24', 26))]));
  refused('uncompared', () => shapeOf('w', [], [{ type: 'put', key: CONFIG_KEY, value: '{}' }]));
  // Other keys (handles, history stamps, agent records) are the callers' own compares.
  assert.deepEqual(shapeOf('w', [], [{ type: 'put', key: 'handles/h', value: '{}' }]).newBlocks, []);
});

test('a write creating no block and changing no pool is sent as planned', () => {
  const cs = [{ key: bk('10.0.0.0/26'), rev: 3 }];
  assert.deepEqual(run(cs, [putBlock('10.0.0.0/26')], []), { compares: cs, guards: [] });
});

test('a new block: inside a pool, of a listed size, with every overlapping key of the other sizes compared absent, and config at the view', () => {
  const p = pool('p', '10.0.0.0/24', 28, { formerBlockSizes: [26] });
  const r = run([{ key: bk('10.0.0.16/28'), rev: 0 }], [putBlock('10.0.0.16/28')], [p]);
  assert.deepEqual(r.guards, [bk('10.0.0.0/26')]);
  assert.deepEqual(r.compares.slice(1), [
    { key: CONFIG_KEY, rev: 7 },
    { key: bk('10.0.0.0/26'), rev: 0 },
  ]);
  // A new block of the former, larger size guards the four /28s inside it.
  assert.deepEqual(
    run([{ key: bk('10.0.0.64/26'), rev: 0 }], [putBlock('10.0.0.64/26')], [p]).guards.map((k) => k.slice('blocks/'.length)),
    ['10.0.0.64-28', '10.0.0.80-28', '10.0.0.96-28', '10.0.0.112-28'],
  );
  refused('outside-pools', () => run([{ key: bk('10.9.0.0/28'), rev: 0 }], [putBlock('10.9.0.0/28')], [p]), /lies in no pool's cidr/);
  refused('block-size', () => run([{ key: bk('10.0.0.0/27'), rev: 0 }], [putBlock('10.0.0.0/27')], [p]), /\/28, \/26/);
  refused('deleting', () => run([{ key: bk('10.0.0.0/28'), rev: 0 }], [putBlock('10.0.0.0/28')], [{ ...p, deleting: true }]));
  // An overlapping block compared present, or created in the same write: never both.
  refused('block-overlap', () =>
    run(
      [
        { key: bk('10.0.0.0/28'), rev: 0 },
        { key: bk('10.0.0.0/26'), rev: 5 },
      ],
      [putBlock('10.0.0.0/28')],
      [p],
    ),
  );
  refused('block-overlap', () =>
    run(
      [
        { key: bk('10.0.0.0/28'), rev: 0 },
        { key: bk('10.0.0.0/26'), rev: 0 },
      ],
      [putBlock('10.0.0.0/28'), putBlock('10.0.0.0/26')],
      [p],
    ),
  );
  // A new block in the part of the space a shrink is giving up is outside the pool's cidr.
  const shrinking = pool('s', '10.1.0.0/25', 26, { shrinkingFrom: parsePrefix('10.1.0.0/24') });
  refused('outside-pools', () => run([{ key: bk('10.1.0.128/26'), rev: 0 }], [putBlock('10.1.0.128/26')], [shrinking]));
});

test('a pool write: no space overlaps another pool, what an unfinished shrink holds included', () => {
  const p = pool('p', '10.2.0.0/25', 26, { shrinkingFrom: parsePrefix('10.2.0.0/24') });
  const q = pool('q', '10.2.0.128/25', 27);
  const cfg = { key: CONFIG_KEY, rev: 7 };
  refused(
    'pool-overlap',
    () => run([cfg, { key: poolKey('q'), rev: 0 }], [putPool(q)], [p]),
    /overlaps pool "p" \(10\.2\.0\.0\/25, still holding 10\.2\.0\.0\/24 until its shrink finishes\)/,
  );
  // Finished, the space is free.
  const done = pool('p', '10.2.0.0/25', 26);
  assert.equal(run([cfg, { key: poolKey('q'), rev: 0 }], [putPool(q)], [done], ['10.2.0.0/26']).guards.length, 0);
  // A rollback (the old cidr written back) over a pool made meanwhile is refused like any resize.
  refused('pool-overlap', () => run([cfg, { key: poolKey('p'), rev: 3 }], [putPool(pool('p', '10.2.0.0/24', 26))], [done, q]), /overlaps pool "q"/);
  // Without the config compare, a pool write proves nothing about the other pools.
  refused('uncompared', () => run([{ key: poolKey('q'), rev: 0 }], [putPool(q)], [done]));
});

test('a pool write that changes its space is checked against every block', () => {
  const cfg = { key: CONFIG_KEY, rev: 7 };
  const p = pool('p', '10.3.0.0/24', 26);
  const pc = { key: poolKey('p'), rev: 3 };
  // Shrink finished while a block outside the new cidr remains: refused.
  refused(
    'outside-pools',
    () => run([cfg, pc], [putPool(pool('p', '10.3.0.0/25', 26))], [p], ['10.3.0.0/26', '10.3.0.192/26']),
    /block 10\.3\.0\.192\/26 would be left outside every pool/,
  );
  // ... unless the same write deletes it.
  assert.ok(
    run(
      [cfg, pc, { key: bk('10.3.0.192/26'), rev: 4 }],
      [putPool(pool('p', '10.3.0.0/25', 26)), { type: 'delete', key: bk('10.3.0.192/26') }],
      [p],
      ['10.3.0.0/26', '10.3.0.192/26'],
    ),
  );
  // Delete with a block left: refused.
  refused('outside-pools', () => run([cfg, pc], [{ type: 'delete', key: poolKey('p') }], [p], ['10.3.0.64/26']), /pool "p" still has it/);
  // A block-size change that forgets the size of a block it has.
  refused('block-size', () => run([cfg, pc], [putPool({ ...p, blockSize: 28, formerBlockSizes: [] })], [p], ['10.3.0.0/26']), /would list \/28/);
  assert.ok(run([cfg, pc], [putPool({ ...p, blockSize: 28, formerBlockSizes: [26] })], [p], ['10.3.0.0/26']));
  // A new pool cutting through a block left outside every pool (an orphan).
  refused(
    'block-overlap',
    () => run([cfg, { key: poolKey('o'), rev: 0 }], [putPool(pool('o', '10.4.0.0/27', 27))], [p], ['10.4.0.0/26']),
    /cuts through block 10\.4\.0\.0\/26/,
  );
});

test('needsBlocks: only a change of space or block sizes (or a create or delete) lists the blocks', () => {
  const p = pool('p', '10.5.0.0/24', 26);
  const shape = (ops: Op[]) =>
    shapeOf(
      'w',
      ops.map((o) => ({ key: o.key, rev: 1 })),
      ops,
    );
  assert.equal(needsBlocks(shape([putPool({ ...p, disabled: true })]), [p]), false);
  assert.equal(needsBlocks(shape([putPool({ ...p, cidr: parsePrefix('10.5.0.0/23') })]), [p]), true);
  assert.equal(needsBlocks(shape([putPool({ ...p, blockSize: 27, formerBlockSizes: [26] })]), [p]), true);
  assert.equal(needsBlocks(shape([putPool(pool('n', '10.6.0.0/24', 26))]), [p]), true);
  assert.equal(needsBlocks(shape([{ type: 'delete', key: poolKey('p') }]), [p]), true);
  assert.equal(formatPrefix(p.cidr), '10.5.0.0/24');
});
