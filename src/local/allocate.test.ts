import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type Addr, formatAddr, parseAddr, parsePrefix } from '../ip/index.js';
import { allocate } from './allocate.js';
import { fileContent, type StoreFile } from './disk-store.js';
import { AllocationError, UnallocatedRequestsError } from './errors.js';
import type { LocalStore } from './local-store.js';
import type { AllocRangeSet } from './range-allocator.js';

/** The store interface in memory: what the loop needs, nothing of a disk. */
class MemoryStore implements LocalStore {
  readonly files = new Map<string, string>();
  readonly last = new Map<number, Addr>();
  reserve(id: string, ifname: string, addr: Addr, rangeSet: number): boolean {
    const name = formatAddr(addr);
    if (this.files.has(name)) return false;
    this.files.set(name, fileContent(id, ifname));
    this.last.set(rangeSet, addr);
    return true;
  }
  lastReserved(rangeSet: number): Addr | undefined {
    return this.last.get(rangeSet);
  }
  remove(name: string): boolean {
    return this.files.delete(name);
  }
  scan(): StoreFile[] {
    return [...this.files].sort(([a], [b]) => (a < b ? -1 : 1)).map(([name, content]) => ({ name, content }));
  }
}

function set(subnet: string, start: string, end: string): AllocRangeSet {
  const p = parsePrefix(subnet);
  return [{ subnet: p, rangeStart: parseAddr(start), rangeEnd: parseAddr(end), gateway: { family: p.family, value: p.base + 1n } }];
}

const v4 = set('10.0.0.0/29', '10.0.0.2', '10.0.0.4');
const v6 = set('fd00::/120', 'fd00::2', 'fd00::3');
const c1 = { containerId: 'c1', ifname: 'eth0' };

test('one address per range set, round robin after the last reserved one', () => {
  const s = new MemoryStore();
  s.last.set(0, parseAddr('10.0.0.3'));
  const got = allocate(s, { rangeSets: [v4, v6], requested: [] }, c1);
  assert.deepEqual(
    got.map((a) => formatAddr(a.addr)),
    ['10.0.0.4', 'fd00::2'],
  );
  assert.equal(got[0]!.range, v4[0]);
  assert.equal(s.files.get('10.0.0.4'), 'c1\r\neth0');
});

test("a later range set failing undoes this call's reservations only", () => {
  const s = new MemoryStore();
  s.reserve('c0', 'eth0', parseAddr('fd00::2'), 1);
  s.reserve('c0', 'eth0', parseAddr('fd00::3'), 1);
  assert.throws(
    () => allocate(s, { rangeSets: [v4, v6], requested: [] }, c1),
    (e: unknown) =>
      e instanceof AllocationError &&
      e.failure === 'exhausted' &&
      e.rangeSet === 1 &&
      e.message === 'failed to allocate for range 1: no IP addresses available in range set: fd00::2-fd00::3',
  );
  assert.deepEqual([...s.files.keys()].sort(), ['fd00::2', 'fd00::3']);
});

test('a requested address: taken, the gateway, or in no range set is address-unavailable', () => {
  const s = new MemoryStore();
  s.reserve('c0', 'eth0', parseAddr('10.0.0.2'), 0);
  const fails = (requested: Addr[], cls: typeof AllocationError | typeof UnallocatedRequestsError) =>
    assert.throws(
      () => allocate(s, { rangeSets: [v4], requested }, c1),
      (e: unknown) => e instanceof cls && (e as AllocationError).failure === 'address-unavailable',
    );
  fails([parseAddr('10.0.0.2')], AllocationError);
  fails([parseAddr('10.0.0.3'), parseAddr('192.168.0.1')], UnallocatedRequestsError);
  assert.deepEqual([...s.files.keys()], ['10.0.0.2']);
  assert.deepEqual(
    allocate(s, { rangeSets: [v4], requested: [parseAddr('10.0.0.4')] }, c1).map((a) => formatAddr(a.addr)),
    ['10.0.0.4'],
  );
});

test('an attachment holding an address of the set already: duplicate allocation refused', () => {
  const s = new MemoryStore();
  allocate(s, { rangeSets: [v4], requested: [] }, c1);
  assert.throws(() => allocate(s, { rangeSets: [v4], requested: [] }, c1), /10\.0\.0\.2 has been allocated to c1, duplicate allocation is not allowed/);
});
