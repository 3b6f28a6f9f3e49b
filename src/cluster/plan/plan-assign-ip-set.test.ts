import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { type Block, allocateOrdinals, assignOrdinal, newBlock } from '../../alloc/block.js';
import { IpRangeSet, formatAddr, parseAddr, parsePrefix, rangeOf } from '../../ip/index.js';
import { failureOf } from '../../model/failure.js';
import { PlacementError } from '../../model/placement.js';
import type { Entry } from '../../store/index.js';
import { snapshotFromEntries } from '../views/cluster-snapshot.js';
import { AddressUnavailableError } from '../records/errors.js';
import { IpSetExhaustedError, NoIpSetError } from '../records/ip-set-errors.js';
import { encodeIpSet } from '../records/ip-set-record.js';
import { DEFAULT_IPAM_CONFIG, encodeConfig } from '../records/ipam-config.js';
import { blockKey } from '../records/keys.js';
import { type OwnBlock, OwnBlocks } from '../views/own-blocks.js';
import { encodePool, validatePoolSpec } from '../records/pool-record.js';
import { type PlanInput, planAssign } from './plan-assign.js';

const V4 = validatePoolSpec({ name: 'v4', cidr: '10.0.0.0/24', blockSize: 28 });
const V6 = validatePoolSpec({ name: 'v6', cidr: 'fd00::/120', blockSize: 124 });
const e = (key: string, value: string, rev: number): Entry => ({ key, value, rev });
const WEB = { name: 'web', pool: 'v4', addrs: new IpRangeSet([rangeOf(parseAddr('10.0.0.20'), parseAddr('10.0.0.24'))]) };
const SET_BLOCK = parsePrefix('10.0.0.16/28');

function snap(config = DEFAULT_IPAM_CONFIG) {
  return snapshotFromEntries(e('config', encodeConfig(config), 7), [
    e('pools/v4', encodePool(V4), 2),
    e('pools/v6', encodePool(V6), 3),
    e('ipsets/web', encodeIpSet(WEB), 4),
  ]);
}
const known = (b: Block, rev: number): [string, OwnBlock] => [blockKey(b.cidr), { rev, block: b }];

function input(over: Partial<PlanInput> = {}): PlanInput {
  return {
    req: { node: 'n1', handle: 'h', auto: 'each-family', ipSet: 'web' },
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

function held(...addrs: string[]): Block {
  let b = newBlock(SET_BLOCK, 'n1');
  addrs.forEach((a, i) => (b = assignOrdinal(b, Number(parseAddr(a).value - SET_BLOCK.base), `other${i}`)));
  return b;
}

describe('planAssign with an ip-set', () => {
  it('reads the blocks of the set, then takes its lowest free address; the other family comes from auto', () => {
    assert.deepEqual(planAssign(input()), { kind: 'read', keys: [blockKey(SET_BLOCK)] });
    const p = planAssign(input({ others: new Map([[blockKey(SET_BLOCK), { rev: 0, block: null }]]) }));
    assert.equal(p.kind, 'txn');
    if (p.kind !== 'txn') return;
    assert.equal(formatAddr(p.assignments[0]!.addr), '10.0.0.20');
    assert.equal(p.assignments[1]!.addr.family, 6);
    assert.equal(p.assignments.length, 2, 'one address per family: the set gives IPv4, auto only IPv6');
    assert.ok(p.claims.includes(blockKey(SET_BLOCK)), 'an absent block of the set is claimed');
    assert.ok(p.compares.some((c) => c.key === blockKey(SET_BLOCK) && c.rev === 0));
  });

  it('skips held addresses, and borrows from another node’s block unless strictAffinity', () => {
    const b = { ...held('10.0.0.20', '10.0.0.21'), affinity: 'n2' };
    const p = planAssign(input({ others: new Map([known(b, 9)]) }));
    assert.equal(p.kind, 'txn');
    if (p.kind === 'txn') assert.equal(formatAddr(p.assignments[0]!.addr), '10.0.0.22');
    assert.throws(
      () => planAssign(input({ snap: snap({ ...DEFAULT_IPAM_CONFIG, strictAffinity: true }), others: new Map([known(b, 9)]) })),
      (err: unknown) => err instanceof IpSetExhaustedError && /3 free ones are in blocks of other nodes and strictAffinity is on/.test(err.message),
    );
  });

  it('a full set is an exhausted failure (code 100) naming the set', () => {
    const b = held('10.0.0.20', '10.0.0.21', '10.0.0.22', '10.0.0.23', '10.0.0.24');
    assert.throws(
      () => planAssign(input({ mine: OwnBlocks.of('n1', [known(b, 9)]) })),
      (err: unknown) =>
        err instanceof IpSetExhaustedError &&
        err.ipSet === 'web' &&
        err.held === 5 &&
        failureOf(err) === 'exhausted' &&
        /no free address in ip-set "web": 5 of its 5 addresses are held/.test(err.message),
    );
  });

  it('never gives a set address to auto-assignment or to a specific request', () => {
    const own = newBlock(SET_BLOCK, 'n1');
    const p = planAssign(input({ req: { node: 'n1', handle: 'h', auto: { 4: 8 } }, mine: OwnBlocks.of('n1', [known(own, 3)]) }));
    assert.equal(p.kind, 'txn');
    if (p.kind === 'txn') {
      const got = p.assignments.map((a) => formatAddr(a.addr));
      assert.deepEqual(got, ['10.0.0.18', '10.0.0.19', '10.0.0.25', '10.0.0.26', '10.0.0.27', '10.0.0.28', '10.0.0.29', '10.0.0.30']);
    }
    // The block's 8 addresses outside the set are gone: a 9th is not taken from the set.
    const full = allocateOrdinals(own, 8, 'x', new Set([4, 5, 6, 7, 8])).block;
    const q = planAssign(input({ req: { node: 'n1', handle: 'h', auto: { 4: 1 } }, mine: OwnBlocks.of('n1', [known(full, 3)]), allListed: true }));
    assert.equal(q.kind, 'txn');
    if (q.kind === 'txn') assert.ok(!WEB.addrs.contains(q.assignments[0]!.addr), `${formatAddr(q.assignments[0]!.addr)} is not from the set`);
    assert.throws(
      () => planAssign(input({ req: { node: 'n1', handle: 'h', ips: [parseAddr('10.0.0.22')] }, mine: OwnBlocks.of('n1', [known(own, 3)]) })),
      (err: unknown) =>
        err instanceof AddressUnavailableError &&
        err.message === 'address 10.0.0.22 is not available: it belongs to ip-set "web"' &&
        failureOf(err) === 'address-unavailable',
    );
  });

  it('a repeated ADD of the same handle returns what it holds and writes nothing', () => {
    const b = assignOrdinal(held('10.0.0.20'), 6, 'h');
    const record = { node: 'n1', blocks: new Map([['10.0.0.16/28', 1]]) };
    const p = planAssign(
      input({ req: { node: 'n1', handle: 'h', auto: { 4: 1 }, ipSet: 'web' }, handle: { rev: 5, record }, mine: OwnBlocks.of('n1', [known(b, 9)]) }),
    );
    assert.equal(p.kind, 'txn');
    if (p.kind !== 'txn') return;
    assert.deepEqual(
      p.assignments.map((a) => formatAddr(a.addr)),
      ['10.0.0.22'],
    );
    assert.deepEqual(p.ops, []);
  });

  it('an unknown set: PlacementError naming the annotation when placed by one, else NoIpSetError (both invalid-config: code 7)', () => {
    const source = { annotation: 'podipam.io/ip-set', value: 'nope', on: 'pod default/web-1' };
    assert.throws(
      () => planAssign(input({ req: { node: 'n1', handle: 'h', auto: 'each-family', ipSet: 'nope', placedBy: { source, pod: 'default/web-1' } } })),
      (err: unknown) =>
        err instanceof PlacementError &&
        err.message === 'annotation podipam.io/ip-set="nope" on pod default/web-1: ip-set "nope" does not exist' &&
        failureOf(err) === 'invalid-config',
    );
    assert.throws(
      () => planAssign(input({ req: { node: 'n1', handle: 'h', ipSet: 'nope' } })),
      (err: unknown) =>
        err instanceof NoIpSetError && /ip-set "nope" cannot be used: ip-set "nope" does not exist/.test(err.message) && failureOf(err) === 'invalid-config',
    );
  });
});
