import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type Addr, formatAddr, parseAddr, parsePrefix } from '../ip/index.js';
import {
  type AllocRange,
  type AllocRangeSet,
  candidates,
  checkRequested,
  formatRangeSet,
  isExhausted,
  nextFree,
  rangeIndexOf,
  rangeSetsOverlap,
} from './range-allocator.js';

function range(subnet: string, start?: string, end?: string, gw?: string): AllocRange {
  const p = parsePrefix(subnet);
  const first: Addr = { family: p.family, value: p.base + 1n };
  const last = p.base + (1n << BigInt((p.family === 4 ? 32 : 128) - p.len)) - 1n;
  return {
    subnet: p,
    rangeStart: start ? parseAddr(start) : first,
    rangeEnd: end ? parseAddr(end) : { family: p.family, value: p.family === 4 ? last - 1n : last },
    gateway: gw ? parseAddr(gw) : first,
  };
}

const walk = (set: AllocRangeSet, last?: string) => [...candidates(set, last ? parseAddr(last) : undefined)].map((c) => formatAddr(c.addr));

test('candidates walk the whole set once from rangeStart, skipping the gateway', () => {
  assert.deepEqual(walk([range('10.9.0.0/29')]), ['10.9.0.2', '10.9.0.3', '10.9.0.4', '10.9.0.5', '10.9.0.6']);
  assert.deepEqual(walk([range('fd00::/126')]), ['fd00::2', 'fd00::3']); // IPv6 ends at all-ones
  assert.deepEqual(walk([range('10.20.0.0/29', undefined, undefined, '10.20.0.6')]), ['10.20.0.1', '10.20.0.2', '10.20.0.3', '10.20.0.4', '10.20.0.5']);
});

test('candidates start after the last reserved address and wrap around', () => {
  const set = [range('10.9.0.0/29')];
  assert.deepEqual(walk(set, '10.9.0.4'), ['10.9.0.5', '10.9.0.6', '10.9.0.2', '10.9.0.3', '10.9.0.4']);
  assert.deepEqual(walk(set, '10.9.0.6'), ['10.9.0.2', '10.9.0.3', '10.9.0.4', '10.9.0.5', '10.9.0.6']);
  // A last address outside the set is ignored (config changed): start at rangeStart.
  assert.deepEqual(walk(set, '10.8.0.1'), walk(set));
  // The gateway as last address (host-local: it is inside the range, so walk from it).
  assert.deepEqual(walk(set, '10.9.0.1'), ['10.9.0.2', '10.9.0.3', '10.9.0.4', '10.9.0.5', '10.9.0.6']);
});

test('candidates move from range to range in set order (reference case 26)', () => {
  const set = [range('10.30.0.0/24', '10.30.0.10', '10.30.0.11'), range('10.31.0.0/24', '10.31.0.10', '10.31.0.10', '10.31.0.254')];
  assert.deepEqual(walk(set), ['10.30.0.10', '10.30.0.11', '10.31.0.10']);
  assert.deepEqual(walk(set, '10.31.0.10'), ['10.30.0.10', '10.30.0.11', '10.31.0.10']);
  assert.deepEqual(walk(set, '10.30.0.10'), ['10.30.0.11', '10.31.0.10', '10.30.0.10']);
  assert.equal(formatRangeSet(set), '10.30.0.10-10.30.0.11,10.31.0.10-10.31.0.10');
});

test('a range that is only its gateway yields nothing and terminates', () => {
  assert.deepEqual(walk([range('10.0.0.0/24', '10.0.0.1', '10.0.0.1')]), []);
});

test('every candidate walk is a permutation of the allocatable addresses (small ranges, every start)', () => {
  for (const set of [
    [range('10.0.0.0/28', '10.0.0.3', '10.0.0.9', '10.0.0.5')],
    [range('10.0.0.0/28'), range('10.0.1.0/29', undefined, undefined, '10.0.1.7')],
    [range('fd00::/125'), range('fd00:1::/126', 'fd00:1::1', 'fd00:1::3', 'fd00:1::3')],
  ]) {
    const all = walk(set);
    assert.equal(new Set(all).size, all.length);
    for (const last of [undefined, ...all]) {
      const w = walk(set, last);
      assert.deepEqual([...w].sort(), [...all].sort(), `from ${last}`);
      if (last) assert.equal(w[w.length - 1], last); // the last reserved comes round last
    }
  }
});

test('nextFree skips taken addresses; undefined when exhausted', () => {
  const set = [range('192.168.5.0/24', '192.168.5.10', '192.168.5.12')];
  const taken = new Set<string>();
  const isTaken = (a: Addr) => taken.has(formatAddr(a));
  const got: string[] = [];
  let last: Addr | undefined;
  for (let i = 0; i < 3; i++) {
    const c = nextFree(set, last, isTaken)!;
    got.push(formatAddr(c.addr));
    taken.add(formatAddr(c.addr));
    last = c.addr;
  }
  assert.deepEqual(got, ['192.168.5.10', '192.168.5.11', '192.168.5.12']);
  assert.equal(nextFree(set, last, isTaken), undefined);
  assert.ok(isExhausted(set, [...taken].map(parseAddr)));
  taken.delete('192.168.5.10');
  assert.equal(formatAddr(nextFree(set, last, isTaken)!.addr), '192.168.5.10');
  assert.ok(!isExhausted(set, [...taken].map(parseAddr)));
});

test('round robin: a released address is not reused before the rest (reference case 15)', () => {
  const set = [range('192.168.5.0/24', '192.168.5.10', '192.168.5.14')];
  const a = nextFree(set, undefined, () => false)!;
  const b = nextFree(set, a.addr, () => false)!; // a released, b starts after a
  assert.equal(formatAddr(b.addr), '192.168.5.11');
});

test('isExhausted counts per range, ignoring the gateway and addresses outside the set', () => {
  const set = [range('10.9.0.0/30')]; // only 10.9.0.2
  assert.ok(!isExhausted(set, []));
  assert.ok(!isExhausted(set, [parseAddr('10.9.0.1'), parseAddr('10.9.0.3'), parseAddr('10.8.0.2')]));
  assert.ok(isExhausted(set, [parseAddr('10.9.0.2'), parseAddr('10.9.0.2')]));
  const v6 = [range('fd00::/64')];
  assert.ok(!isExhausted(v6, [parseAddr('fd00::2')]));
});

test('checkRequested: inside a range, not the gateway', () => {
  const set = [range('10.244.1.0/24'), range('10.245.0.0/24', '10.245.0.10', '10.245.0.20')];
  assert.deepEqual(checkRequested(set, parseAddr('10.245.0.15')), { ok: true, range: 1 });
  assert.deepEqual(checkRequested(set, parseAddr('10.244.1.1')), { ok: false, reason: 'gateway' });
  assert.deepEqual(checkRequested(set, parseAddr('10.245.0.9')), { ok: false, reason: 'outside' });
  assert.deepEqual(checkRequested(set, parseAddr('10.244.1.255')), { ok: false, reason: 'outside' }); // broadcast
  assert.equal(rangeIndexOf(set, parseAddr('fd00::1')), -1);
});

test('rangeSetsOverlap compares the allocatable spans', () => {
  assert.ok(rangeSetsOverlap([range('10.0.0.0/24')], [range('10.0.0.0/25')]));
  assert.ok(!rangeSetsOverlap([range('10.0.0.0/24', '10.0.0.1', '10.0.0.100')], [range('10.0.0.0/24', '10.0.0.101', '10.0.0.200')]));
  assert.ok(!rangeSetsOverlap([range('10.0.0.0/24')], [range('fd00::/64')]));
});
