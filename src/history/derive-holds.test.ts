/**
 * derive-holds driven by real records: a ClusterIpam on a memory store assigns, releases, holds
 * sticky and keeps a warm pool; the store's own change stream is captured and fed revision by
 * revision, and the holds derived are compared with what the test did.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ClusterIpam } from '../cluster/service/cluster-ipam.js';
import { encodeStamp, stampKey } from '../cluster/records/history-stamp.js';
import { stickyHoldHandle } from '../cluster/records/sticky-hold-id.js';
import { formatAddr, formatPrefix, parseAddr } from '../ip/index.js';
import type { Hold } from '../model/history.js';
import { openStore, type Store, type WatchEvent } from '../store/index.js';
import { listAll } from '../store/list-all.js';
import { type DerivedChanges, HoldState, revisionsOf } from './derive-holds.js';

const T0 = Date.parse('2026-03-01T10:00:00.000Z');

async function rig() {
  const store = await openStore('memory:');
  const clock = { now: T0 };
  const ipam = new ClusterIpam(store, { now: () => new Date(clock.now), writer: 'n1' });
  await ipam.createPool({ name: 'v4', cidr: '10.0.0.0/24', blockSize: 28 });
  return { store, ipam, clock, from: (await store.revision()) + 1 };
}

/** Every change from `from` to the store's current revision, in batches as the watch gave them. */
async function changes(store: Store, from: number): Promise<WatchEvent[]> {
  const last = await store.revision();
  const out: WatchEvent[] = [];
  if (last < from) return out;
  const ac = new AbortController();
  for await (const b of store.watch('', from, { signal: ac.signal })) {
    out.push(...b);
    if (b.length > 0 && b[b.length - 1]!.modRevision >= last) break;
  }
  ac.abort();
  return out;
}

/** The history a store following these changes would hold: the DB's semantics (ends, then starts; pairs start first). */
class Fold {
  readonly holds: Hold[] = [];
  add(d: DerivedChanges): void {
    for (const p of d.pairs) {
      this.holds.push({ ...p.start });
      this.#end(p.end);
    }
    for (const e of d.ends) this.#end(e);
    for (const s of d.starts) this.holds.push({ ...s });
  }
  #end(e: { address: string; handle: string; until: Hold['from']; why: NonNullable<Hold['until']>['why'] }): void {
    const i = this.holds.findIndex((h) => h.address === e.address && h.handle === e.handle && h.until === undefined);
    assert.ok(i >= 0, `an end with an open hold: ${e.address} ${e.handle}`);
    this.holds[i] = { ...this.holds[i]!, until: { ...e.until, why: e.why } };
  }
}

/** Feeds `events` to `state` revision by revision (seen at `seenAt`), returning the fold and the last time. */
function feed(state: HoldState, events: readonly WatchEvent[], fold = new Fold(), seenAt = T0 + 999_000, earliest = 0): { fold: Fold; at: number } {
  let at = earliest;
  for (const [, evs] of revisionsOf(events)) {
    const d = state.applyRevision(evs, seenAt, at);
    assert.deepEqual(d.problems, []);
    fold.add(d);
    at = Math.max(at, d.after);
  }
  return { fold, at };
}

const brief = (h: Hold) => ({ address: h.address, handle: h.handle, from: h.from, ...(h.until ? { until: h.until } : {}) });

test('an assignment starts a hold with the pod, node, network, block and pool of its handle record; its release ends it', async () => {
  const { store, ipam, clock, from } = await rig();
  const [a] = await ipam.assign({
    node: 'n1',
    handle: 'net:c1:eth0',
    auto: { 4: 1 },
    attrs: { network: 'net', containerId: 'c1', ifname: 'eth0', namespace: 'web', pod: 'web-0', podUid: 'u1' },
  });
  clock.now = T0 + 5000;
  await ipam.releaseHandle('net:c1:eth0');
  const state = new HoldState([], await listAll(store, 'pools/'));
  const { fold } = feed(state, await changes(store, from));
  const addr = formatAddr(a!.addr);
  assert.deepEqual(fold.holds, [
    {
      address: addr,
      handle: 'net:c1:eth0',
      pod: { namespace: 'web', name: 'web-0', uid: 'u1' },
      containerId: 'c1',
      ifname: 'eth0',
      network: 'net',
      node: 'n1',
      pool: 'v4',
      block: formatPrefix(a!.block),
      from: { at: T0 },
      until: { at: T0 + 5000, why: 'del' },
    },
  ]);
  assert.equal(state.size, 0);
});

test('an address released and given to another pod: two holds in order; a release for a reason carries it', async () => {
  const { store, ipam, clock, from } = await rig();
  const [a] = await ipam.assign({ node: 'n1', handle: 'net:c1:eth0', auto: { 4: 1 } });
  clock.now = T0 + 1000;
  await ipam.withReason('cni-gc').releaseHandle('net:c1:eth0');
  clock.now = T0 + 2000;
  await ipam.assign({ node: 'n1', handle: 'net:c2:eth0', ips: [a!.addr] });
  const { fold } = feed(new HoldState(), await changes(store, from));
  const addr = formatAddr(a!.addr);
  assert.deepEqual(fold.holds.map(brief), [
    { address: addr, handle: 'net:c1:eth0', from: { at: T0 }, until: { at: T0 + 1000, why: 'cni-gc' } },
    { address: addr, handle: 'net:c2:eth0', from: { at: T0 + 2000 } },
  ]);
});

test("a sticky DEL ends the pod's hold (the sticky hold is nobody's); the next incarnation taking it over starts a new one", async () => {
  const { store, ipam, clock, from } = await rig();
  const hold = stickyHoldHandle('net', { namespace: 'db', name: 'db-0' }, 'eth0')!;
  const [a] = await ipam.assign({ node: 'n1', handle: 'net:c1:eth0', auto: { 4: 1 }, attrs: { network: 'net', namespace: 'db', pod: 'db-0' } });
  clock.now = T0 + 1000;
  await ipam.holdSticky(
    'net:c1:eth0',
    hold,
    { node: 'n1', network: 'net', ifname: 'eth0', namespace: 'db', pod: 'db-0', stickyUntil: new Date(T0 + 600_000).toISOString() },
    'n1',
  );
  clock.now = T0 + 3000;
  const [b] = await ipam.assign({ node: 'n1', handle: 'net:c2:eth0', auto: { 4: 1 }, takeOver: hold, attrs: { network: 'net', namespace: 'db', pod: 'db-0' } });
  assert.equal(formatAddr(b!.addr), formatAddr(a!.addr));
  const { fold } = feed(new HoldState(), await changes(store, from));
  const addr = formatAddr(a!.addr);
  assert.deepEqual(fold.holds.map(brief), [
    { address: addr, handle: 'net:c1:eth0', from: { at: T0 }, until: { at: T0 + 1000, why: 'del' } },
    { address: addr, handle: 'net:c2:eth0', from: { at: T0 + 3000 } },
  ]);
});

test("warm pool: idle addresses are nobody's; a pod holds what its record names from its `since`; the record's delete and a freed warm address end holds", async () => {
  const { store, ipam, clock, from } = await rig();
  const warm = 'podipam-warm:n1:r1';
  const got = await ipam.assign({ node: 'n1', handle: warm, auto: { 4: 3 } });
  const [x, y] = got.map((g) => formatAddr(g.addr));
  const rec = (addrs: string[], since: number, uid: string) =>
    JSON.stringify({
      network: 'net',
      containerId: `c-${uid}`,
      ifname: 'eth0',
      addrs,
      since: new Date(since).toISOString(),
      namespace: 'web',
      name: `web-${uid}`,
      uid,
    });
  clock.now = T0 + 2000; // the write-behind, a second after the ADDs
  await ipam.writeWarmRecords([
    { key: 'agent-pods/n1/net:c-1:eth0', value: rec([x!], T0 + 900, '1') },
    { key: 'agent-pods/n1/net:c-2:eth0', value: rec([y!], T0 + 950, '2') },
  ]);
  clock.now = T0 + 4000;
  await ipam.writeWarmRecords([{ key: 'agent-pods/n1/net:c-1:eth0', value: undefined }]);
  clock.now = T0 + 6000;
  await ipam.withReason('warm-gc').releaseAddresses([parseAddr(y!)]); // the warm handle gives y back while pod 2's record still names it
  const state = new HoldState([], await listAll(store, 'pools/'));
  const { fold } = feed(state, await changes(store, from), new Fold(), T0 + 4500);
  assert.equal(fold.holds.length, 2);
  assert.deepEqual(fold.holds[0], {
    address: x,
    handle: 'net:c-1:eth0',
    pod: { namespace: 'web', name: 'web-1', uid: '1' },
    containerId: 'c-1',
    ifname: 'eth0',
    network: 'net',
    node: 'n1',
    pool: 'v4',
    block: formatPrefix(got[0]!.block),
    from: { at: T0 + 900 },
    until: { at: T0 + 4000, why: 'del' }, // the record's delete, at the stamp's keys[key].at
  });
  assert.deepEqual(brief(fold.holds[1]!), { address: y, handle: 'net:c-2:eth0', from: { at: T0 + 950 }, until: { at: T0 + 6000, why: 'warm-gc' } });
  assert.equal(state.size, 0);
});

test("a pod record folded away by the write-behind (the stamp's keys[key].value) is a hold that began and ended; a deleted key takes its time from keys[key]", async () => {
  const { store, ipam, from } = await rig();
  const got = await ipam.assign({ node: 'n1', handle: 'podipam-warm:n1:r1', auto: { 4: 2 } });
  const [x, y] = got.map((g) => formatAddr(g.addr));
  const k1 = 'agent-pods/n1/net:a:eth0';
  const k2 = 'agent-pods/n1/net:b:eth0';
  await store.txn(
    [],
    [
      { type: 'put', key: k2, value: JSON.stringify({ addrs: [y], since: new Date(T0 + 10).toISOString(), namespace: 'ns', name: 'b' }) },
      { type: 'put', key: stampKey('n1'), value: encodeStamp({ at: T0 + 20 }) },
    ],
  );
  const folded = JSON.stringify({ addrs: [x], since: new Date(T0 + 100).toISOString(), namespace: 'ns', name: 'a', uid: 'ua' });
  await store.txn(
    [],
    [
      { type: 'delete', key: k2 },
      {
        type: 'put',
        key: stampKey('n1'),
        value: encodeStamp({ at: T0 + 900, keys: { [k1]: { at: T0 + 300, why: 'del', value: folded }, [k2]: { at: T0 + 400, why: 'cni-gc' } } }),
      },
    ],
  );
  const { fold } = feed(new HoldState(), await changes(store, from));
  assert.deepEqual(fold.holds.map(brief), [
    { address: y, handle: 'net:b:eth0', from: { at: T0 + 10 }, until: { at: T0 + 400, why: 'cni-gc' } },
    { address: x, handle: 'net:a:eth0', from: { at: T0 + 100 }, until: { at: T0 + 300, why: 'del' } },
  ]);
});

test("a revision without a stamp: the follower's seen time, after the previous position's time, reason unknown; a deleted block ends its holds", async () => {
  const { store, ipam, from } = await rig();
  const [a] = await ipam.assign({ node: 'n1', handle: 'net:c1:eth0', auto: { 4: 1 } });
  const state = new HoldState();
  const first = feed(state, await changes(store, from));
  const from2 = (await store.revision()) + 1;
  const blockKey = (await store.list('blocks/'))[0]!.key;
  await store.txn([], [{ type: 'delete', key: blockKey }]); // a tool, no stamp
  const { fold } = feed(state, await changes(store, from2), first.fold, T0 + 7000, first.at);
  assert.deepEqual(fold.holds.map(brief), [
    { address: formatAddr(a!.addr), handle: 'net:c1:eth0', from: fold.holds[0]!.from, until: { at: T0 + 7000, earliest: first.at, why: 'unknown' } },
  ]);
});

test("relist: the differences between a listing and the open holds, timed inside the gap; a warm pod's start keeps its record's since", async () => {
  const { store, ipam, clock, from } = await rig();
  const [a] = await ipam.assign({ node: 'n1', handle: 'net:c1:eth0', auto: { 4: 1 } });
  const [b] = await ipam.assign({ node: 'n1', handle: 'net:c2:eth0', auto: { 4: 1 } });
  const state = new HoldState();
  feed(state, await changes(store, from));
  // While nobody follows: c1 goes, c3 comes, a warm pod starts.
  clock.now = T0 + 10_000;
  await ipam.releaseHandle('net:c1:eth0');
  const [c] = await ipam.assign({ node: 'n1', handle: 'net:c3:eth0', auto: { 4: 1 } });
  const [w] = await ipam.assign({ node: 'n1', handle: 'podipam-warm:n1:r', auto: { 4: 1 } });
  await ipam.writeWarmRecords([
    {
      key: 'agent-pods/n1/net:w:eth0',
      value: JSON.stringify({ addrs: [formatAddr(w!.addr)], since: new Date(T0 + 12_000).toISOString(), namespace: 'ns', name: 'w' }),
    },
  ]);
  const gap = { at: T0 + 20_000, earliest: T0 + 1 };
  const d = state.relist(await listAll(store, ''), gap);
  assert.deepEqual(d.ends, [{ address: formatAddr(a!.addr), handle: 'net:c1:eth0', until: gap, why: 'unknown' }]);
  assert.deepEqual(
    d.starts.map((s) => [s.address, s.handle, s.from]),
    [
      [formatAddr(c!.addr), 'net:c3:eth0', gap],
      [formatAddr(w!.addr), 'net:w:eth0', { at: T0 + 12_000 }],
    ].sort((p, q) => (p[0]! < q[0]! ? -1 : 1)),
  );
  assert.deepEqual(
    state
      .openHolds()
      .map((h) => h.handle)
      .sort(),
    ['net:c2:eth0', 'net:c3:eth0', 'net:w:eth0'],
  );
  assert.equal(formatAddr(b!.addr), state.openHolds().find((h) => h.handle === 'net:c2:eth0')?.address);
});

test('a restarted state (open holds from the history store) ends what its records end and replays nothing twice', async () => {
  const { store, ipam, clock, from } = await rig();
  await ipam.assign({ node: 'n1', handle: 'net:c1:eth0', auto: { 4: 1 }, attrs: { namespace: 'a', pod: 'p' } });
  const first = new HoldState();
  const events = await changes(store, from);
  feed(first, events);
  const restarted = new HoldState(first.openHolds(), await listAll(store, 'pools/'));
  // The same revisions again (a crash before the position was saved): nothing new.
  const replay = feed(restarted, events);
  assert.deepEqual(replay.fold.holds, []);
  const from2 = (await store.revision()) + 1;
  clock.now = T0 + 8000;
  await ipam.releaseHandle('net:c1:eth0');
  const d = restarted.applyRevision(await changes(store, from2), T0 + 9000, T0);
  assert.deepEqual(
    d.ends.map((e) => [e.handle, e.until, e.why]),
    [['net:c1:eth0', { at: T0 + 8000 }, 'del']],
  );
});

test('the write-behind through ClusterIpam: an ADD and DEL folded into one batch, and a record deleted and put again, keep every hold', async () => {
  const { store, ipam, clock, from } = await rig();
  const got = await ipam.assign({ node: 'n1', handle: 'podipam-warm:n1:r1', auto: { 4: 2 } });
  const [x, y] = got.map((g) => formatAddr(g.addr));
  const rec = (addr: string, since: number) => JSON.stringify({ addrs: [addr], since: new Date(since).toISOString(), namespace: 'ns', name: 'p' });
  clock.now = T0 + 1000;
  await ipam.writeWarmRecords([{ key: 'agent-pods/n1/net:b:eth0', value: rec(y!, T0 + 500) }]);
  clock.now = T0 + 5000;
  await ipam.writeWarmRecords([
    { key: 'agent-pods/n1/net:a:eth0', value: rec(x!, T0 + 2000) },
    { key: 'agent-pods/n1/net:a:eth0', value: undefined, at: T0 + 3000, why: 'del' },
    { key: 'agent-pods/n1/net:b:eth0', value: undefined, at: T0 + 3500, why: 'warm-gc' },
    { key: 'agent-pods/n1/net:b:eth0', value: rec(y!, T0 + 4000) },
  ]);
  const { fold } = feed(new HoldState(), await changes(store, from));
  assert.deepEqual(fold.holds.map(brief), [
    { address: y, handle: 'net:b:eth0', from: { at: T0 + 500 }, until: { at: T0 + 3500, why: 'warm-gc' } },
    { address: x, handle: 'net:a:eth0', from: { at: T0 + 2000 }, until: { at: T0 + 3000, why: 'del' } },
    { address: y, handle: 'net:b:eth0', from: { at: T0 + 4000 } },
  ]);
});
