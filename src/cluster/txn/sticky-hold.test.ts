import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatAddr } from '../../ip/index.js';
import { openStore } from '../../store/index.js';
import { ClusterIpam } from '../service/cluster-ipam.js';
import { decodeHandle } from '../records/handle-record.js';
import { handleKey } from '../records/keys.js';
import { stickyHoldHandle } from '../records/sticky-hold-id.js';
import { MAX_HANDLE_LENGTH } from '../../model/handle-id.js';

const HOLD = stickyHoldHandle('net', { namespace: 'db', name: 'db-0' }, 'eth0')!;
const attrs = (until: string) => ({ node: 'n1', network: 'net', ifname: 'eth0', namespace: 'db', pod: 'db-0', stickyUntil: until });

async function setup(now = new Date('2026-01-01T00:00:00Z')) {
  const store = await openStore('memory:');
  const clock = { now };
  const ipam = new ClusterIpam(store, { now: () => clock.now });
  await ipam.createPool({ name: 'v4', cidr: '10.0.0.0/24', blockSize: 28 });
  await ipam.createPool({ name: 'v6', cidr: 'fd00::/120', blockSize: 124 });
  return { store, ipam, clock };
}

test('the hold handle: sticky:<network>:<namespace>:<name>:<ifname>, escaped; undefined when too long', () => {
  assert.equal(HOLD, 'sticky:net:db:db-0:eth0');
  assert.equal(stickyHoldHandle('n:x', { namespace: 'a', name: 'b' }, 'e 0'), 'sticky:n%3Ax:a:b:e%200');
  assert.equal(stickyHoldHandle('n'.repeat(MAX_HANDLE_LENGTH), { namespace: 'a', name: 'b' }, 'eth0'), undefined);
});

test('a sticky DEL moves every family to the hold in one txn; repeated, it changes nothing; the next incarnation takes it over', async () => {
  const { store, ipam } = await setup();
  const got = await ipam.assign({ node: 'n1', handle: 'net:c1:eth0', auto: 'each-family' });
  const before = store.roundTrips;
  const r = await ipam.holdSticky('net:c1:eth0', HOLD, attrs('2026-01-01T00:10:00.000Z'), 'n1');
  assert.deepEqual(
    r?.kept.map(formatAddr),
    got.map((a) => formatAddr(a.addr)),
  );
  assert.equal(store.roundTrips - before, 2, 'one read (the hold, the attachment is a hint) and one txn');
  assert.equal(await store.get(handleKey('net:c1:eth0')), undefined);
  const rec = decodeHandle((await store.get(handleKey(HOLD)))!);
  assert.deepEqual([rec.namespace, rec.pod, rec.stickyUntil, rec.containerId], ['db', 'db-0', '2026-01-01T00:10:00.000Z', undefined]);
  assert.deepEqual(
    (await ipam.addressesOf(HOLD))?.map((a) => formatAddr(a.addr)),
    got.map((a) => formatAddr(a.addr)),
  );
  assert.equal(await ipam.holdSticky('net:c1:eth0', HOLD, attrs('2026-01-01T00:11:00.000Z'), 'n1'), undefined, 'a repeated DEL: nothing to keep');
  assert.equal(decodeHandle((await store.get(handleKey(HOLD)))!).stickyUntil, '2026-01-01T00:10:00.000Z');
  assert.deepEqual(await ipam.check(), {
    leaks: [],
    problems: [],
    stickyHolds: [
      {
        handle: HOLD,
        rev: (await store.get(handleKey(HOLD)))!.rev,
        node: 'n1',
        namespace: 'db',
        pod: 'db-0',
        network: 'net',
        stickyUntil: '2026-01-01T00:10:00.000Z',
        expired: false,
        addresses: got.map((a) => formatAddr(a.addr)),
      },
    ],
  });
  // Another pod does not get the held addresses.
  const other = await ipam.assign({ node: 'n1', handle: 'net:c2:eth0', auto: 'each-family' });
  assert.ok(!other.some((a) => got.some((g) => formatAddr(g.addr) === formatAddr(a.addr))));
  // The next incarnation takes them over (a fresh process: reads the hold).
  const again = await new ClusterIpam(store, { now: () => new Date('2026-01-01T00:05:00Z') }).assign({
    node: 'n1',
    handle: 'net:c3:eth0',
    auto: 'each-family',
    takeOver: HOLD,
  });
  assert.deepEqual(
    again.map((a) => formatAddr(a.addr)),
    got.map((a) => formatAddr(a.addr)),
  );
  assert.equal(await store.get(handleKey(HOLD)), undefined);
  assert.deepEqual(await ipam.check(), { leaks: [], problems: [] });
});

test('an expired hold is not taken over; a later DEL replaces it (freeing its addresses); serve-style release is guarded by the record’s revision', async () => {
  const { ipam, clock } = await setup();
  const [a] = await ipam.assign({ node: 'n1', handle: 'net:c1:eth0', auto: { 4: 1 } });
  await ipam.holdSticky('net:c1:eth0', HOLD, attrs('2026-01-01T00:00:01.000Z'), 'n1');
  clock.now = new Date('2026-01-01T00:00:02Z');
  const [b] = await ipam.assign({ node: 'n1', handle: 'net:c2:eth0', auto: { 4: 1 }, takeOver: HOLD });
  assert.notEqual(formatAddr(b!.addr), formatAddr(a!.addr), 'expired: not taken over');
  const [expired] = (await ipam.check()).stickyHolds!;
  assert.equal(expired!.expired, true);
  // The pod's DEL again: the old hold is replaced, its address freed, the new one kept.
  const r = await ipam.holdSticky('net:c2:eth0', HOLD, attrs('2026-01-01T00:10:00.000Z'), 'n1');
  assert.deepEqual([r!.kept.map(formatAddr), r!.freed.map(formatAddr)], [[formatAddr(b!.addr)], [formatAddr(a!.addr)]]);
  assert.equal(await ipam.releaseStickyHold(expired!), undefined, 'the hold changed since the check: kept');
  const [live] = (await ipam.check()).stickyHolds!;
  assert.deepEqual(
    (await ipam.releaseStickyHold(live!))?.map((x) => formatAddr(x.addr)),
    [formatAddr(b!.addr)],
  );
  assert.deepEqual(await ipam.check(), { leaks: [], problems: [] });
});

test('CNI GC never releases a hold; release by handle does', async () => {
  const { store, ipam } = await setup();
  await ipam.assign({ node: 'n1', handle: 'net:c1:eth0', auto: { 4: 1 } });
  await ipam.holdSticky('net:c1:eth0', HOLD, attrs('2026-01-01T00:10:00.000Z'), 'n1');
  const gc = await ipam.gcNode('n1', 'net', new Set());
  assert.deepEqual([gc.released, gc.failed], [[], []]);
  assert.ok(await store.get(handleKey(HOLD)));
  assert.equal((await ipam.releaseHandle(HOLD)).length, 1);
  assert.deepEqual(await ipam.check(), { leaks: [], problems: [] });
});
