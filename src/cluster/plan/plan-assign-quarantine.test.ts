import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { type Block, allocateOrdinals, newBlock, releaseOrdinals } from '../../alloc/block.js';
import { CLOCK_SKEW_MARGIN_MS, stampReleases } from '../../alloc/block-quarantine.js';
import { IpRangeSet, formatAddr, parseAddr, parsePrefix } from '../../ip/index.js';
import { parseIpSetRange, encodeIpSet } from '../records/ip-set-record.js';
import type { Entry } from '../../store/index.js';
import { snapshotFromEntries } from '../views/cluster-snapshot.js';
import { decodeBlock } from '../records/block-record.js';
import { AddressUnavailableError, PoolExhaustedError } from '../records/errors.js';
import { IpSetExhaustedError } from '../records/ip-set-errors.js';
import { DEFAULT_IPAM_CONFIG, encodeConfig } from '../records/ipam-config.js';
import { blockKey } from '../records/keys.js';
import type { KnownBlock } from '../views/node-view.js';
import { type OwnBlock, OwnBlocks } from '../views/own-blocks.js';
import { encodePool, validatePoolSpec } from '../records/pool-record.js';
import { type PlanInput, planAssign } from './plan-assign.js';
import { planReleaseAddrs } from './plan-release.js';
import { quarantineFor } from '../records/pool-quarantine.js';

// One /29 pool of one /29 block: usable ordinals 2-6 (0 network, 1 gateway, 7 broadcast).
const POOL = validatePoolSpec({ name: 'p', cidr: '10.9.0.0/29', blockSize: 29, reuseAfter: '30s' });
const CIDR = parsePrefix('10.9.0.0/29');
const T = Date.parse('2026-12-04T08:00:00.000Z');
const e = (key: string, value: string, rev: number): Entry => ({ key, value, rev });
const snapOf = (pool = POOL, extra: Entry[] = []) =>
  snapshotFromEntries(e('config', encodeConfig({ ...DEFAULT_IPAM_CONFIG, strictAffinity: false }), 7), [e('pools/p', encodePool(pool), 2), ...extra]);

/** The block affine to node "a" with ordinals 2-6 held, then `freed` released at T. */
function blockWith(freed: number[], heldBy = 'h'): Block {
  const full = allocateOrdinals(newBlock(CIDR, 'a'), 6, heldBy).block;
  return stampReleases(full, releaseOrdinals(full, freed).block, { reuseAfterMs: POOL.reuseAfterMs, now: T });
}

function input(block: Block, over: Partial<PlanInput> = {}): PlanInput {
  const kb: [string, OwnBlock] = [blockKey(block.cidr), { rev: 5, block }];
  const node = over.req?.node ?? 'a';
  const mine = block.affinity === node ? OwnBlocks.of(node, [kb]) : OwnBlocks.of(node);
  const others = mine.size === 0 ? new Map([kb]) : new Map<string, KnownBlock>();
  return {
    req: { node: 'a', handle: 'new', auto: { 4: 1 } },
    snap: snapOf(),
    labels: undefined,
    mine,
    others,
    allListed: true,
    claimMisses: 0,
    delFence: 0,
    claimed: new Set([blockKey(CIDR)]),
    handle: { rev: 0, record: undefined },
    now: new Date(T + 1000).toISOString(),
    ...over,
  };
}

const END = T + 30_000 + CLOCK_SKEW_MARGIN_MS;
const at = (ms: number) => new Date(ms).toISOString();
const txn = (p: ReturnType<typeof planAssign>) => {
  assert.equal(p.kind, 'txn');
  if (p.kind !== 'txn') throw new Error('unreachable');
  return p;
};
const given = (p: ReturnType<typeof planAssign>) => txn(p).assignments.map((a) => formatAddr(a.addr));
/** The block as the plan's txn writes it (through the codec). */
function written(p: ReturnType<typeof planAssign>): Block {
  const op = txn(p).ops.find((o) => o.key === blockKey(CIDR));
  assert.ok(op?.type === 'put');
  return decodeBlock(e(op.key, op.value, 1));
}

describe('planAssign under a reuse quarantine', () => {
  it('when the only free addresses are quarantined, fails as exhaustion naming how many and until when', () => {
    assert.throws(
      () => planAssign(input(blockWith([2, 5]), { now: at(END - 1) })),
      (err: unknown) =>
        err instanceof PoolExhaustedError &&
        err.quarantined?.count === 2 &&
        err.quarantined.until === at(END) &&
        new RegExp(`found 0; 2 free addresses are quarantined after their release \\(pool reuseAfter\\) until ${at(END).replace(/\./g, '\\.')}`).test(
          err.message,
        ),
    );
    // Without the setting, the same block hands the freed address out at once.
    assert.deepEqual(given(planAssign(input(blockWith([2, 5]), { snap: snapOf({ ...POOL, reuseAfterMs: 0 }), now: at(T + 1) }))), ['10.9.0.2']);
  });

  it('hands the address out again once its quarantine is over, and the write drops the spent entries', () => {
    const p = planAssign(input(blockWith([2, 5]), { now: at(END) }));
    assert.deepEqual(given(p), ['10.9.0.2']);
    assert.equal(written(p).released, undefined);
  });

  it('takes a free address past its quarantine over a younger one the cursor reaches first, keeping the young entry', () => {
    const b = blockWith([2, 5]);
    const mixed: Block = {
      ...b,
      released: new Map([
        [2, T],
        [5, T - 60_000],
      ]),
    };
    const p = planAssign(input(mixed, { now: at(T + 1000) }));
    assert.deepEqual(given(p), ['10.9.0.5']);
    assert.deepEqual([...written(p).released!], [[2, T]]);
  });

  it('another node borrowing from the block respects it too', () => {
    assert.throws(() => planAssign(input(blockWith([2]), { req: { node: 'b', handle: 'new', auto: { 4: 1 } }, now: at(T + 1000) })), PoolExhaustedError);
    assert.deepEqual(given(planAssign(input(blockWith([2]), { req: { node: 'b', handle: 'new', auto: { 4: 1 } }, now: at(END) }))), ['10.9.0.2']);
  });

  it('a requested address is refused while quarantined, naming until when', () => {
    assert.throws(
      () => planAssign(input(blockWith([2]), { req: { node: 'a', handle: 'new', ips: [parseAddr('10.9.0.2')] }, now: at(T + 1000) })),
      (err: unknown) => err instanceof AddressUnavailableError && err.reason === 'quarantined' && err.message.includes(`quarantined until ${at(END)}`),
    );
    assert.deepEqual(given(planAssign(input(blockWith([2]), { req: { node: 'a', handle: 'new', ips: [parseAddr('10.9.0.2')] }, now: at(END) }))), ['10.9.0.2']);
  });

  it('an ip-set skips its quarantined addresses and says so when nothing else is free', () => {
    const snap = snapOf(POOL, [e('ipsets/web', encodeIpSet({ name: 'web', pool: 'p', addrs: new IpRangeSet([parseIpSetRange('10.9.0.2-10.9.0.3')]) }), 4)]);
    assert.throws(
      () => planAssign(input(blockWith([2]), { snap, req: { node: 'a', handle: 'new', ipSet: 'web' }, now: at(T + 1000) })),
      (err: unknown) =>
        err instanceof IpSetExhaustedError &&
        /\(1 free one is quarantined after its release \(pool reuseAfter\) until 2026-12-04T08:00:31\.000Z at the earliest\)/.test(err.message),
    );
    assert.deepEqual(given(planAssign(input(blockWith([2]), { snap, req: { node: 'a', handle: 'new', ipSet: 'web' }, now: at(END) }))), ['10.9.0.2']);
  });
});

describe('planRelease under a reuse quarantine', () => {
  const handles = new Map([['h', { rev: 3, record: { node: 'a', blocks: new Map([['10.9.0.0/29', 1]]) } }]]);
  const release = (pool: typeof POOL, block: Block) => {
    const snap = snapOf(pool);
    return planReleaseAddrs(
      { state: (k) => (k === blockKey(CIDR) ? { rev: 5, block } : undefined), quarantine: (c) => quarantineFor(snap.pools, c, T) },
      snap,
      [parseAddr('10.9.0.3')],
      handles,
    );
  };
  it('records the release time in the block, in the same txn', () => {
    const full = allocateOrdinals(newBlock(CIDR, 'a'), 6, 'h').block;
    const p = release(POOL, full);
    assert.equal(p.kind, 'txn');
    if (p.kind !== 'txn') return;
    assert.deepEqual([...(p.blocks.get(blockKey(CIDR)) as Block).released!], [[3, T]]);
  });
  it('keeps an emptied orphan block while it quarantines an address; deletes it when the pool has no quarantine', () => {
    const lone = releaseOrdinals(allocateOrdinals(newBlock(CIDR, null), 3, 'h').block, [2, 4]).block; // only ordinal 3 held
    const kept = release(POOL, lone);
    assert.ok(kept.kind === 'txn' && kept.ops.some((o) => o.key === blockKey(CIDR) && o.type === 'put'));
    const gone = release({ ...POOL, reuseAfterMs: 0 }, lone);
    assert.ok(gone.kind === 'txn' && gone.ops.some((o) => o.key === blockKey(CIDR) && o.type === 'delete'));
  });
});
