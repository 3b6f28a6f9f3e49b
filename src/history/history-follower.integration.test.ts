/**
 * The history follower on real datastores (SQLite files, a real etcd) and a real history file:
 * it follows live, is stopped while pods come and go and recovers every hold with the writers'
 * exact times on restart; revisions the datastore no longer keeps (an etcd compaction, SQLite's
 * change log overrun) become a gap with its bounds, inside which holderAt answers "unknown".
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { etcdPost, startEtcd, type EtcdCluster, type EtcdMember } from '../../test/helpers/etcd.js';
import { ClusterIpam } from '../cluster/service/cluster-ipam.js';
import { formatAddr } from '../ip/index.js';
import { recordingLog } from '../log/logger.js';
import { SQLITE_LOG_REVISIONS } from '../store/sqlite/sqlite-store.js';
import { openStore, type Store } from '../store/index.js';
import { HistoryFollower, HistorySourceMismatchError } from './history-follower.js';
import type { HistoryDb } from './history-db.js';
import { openHistoryDb } from './sqlite-history-db.js';

const T0 = Date.parse('2026-03-01T10:00:00.000Z');

interface Backend {
  readonly name: string;
  /** A new, empty datastore: its URL and how to get rid of it. */
  open(): Promise<{ url: string; stop(): Promise<void> }>;
  /** Makes the datastore forget every revision before its current one. */
  forget(store: Store): Promise<void>;
}

const dir = mkdtempSync(join(tmpdir(), 'podipam-history-follower-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

let etcd: EtcdCluster | undefined; // the current test's

const backends: Backend[] = [
  {
    name: 'sqlite',
    open: () => Promise.resolve({ url: `sqlite:${join(dir, `store-${++n}.db`)}`, stop: () => Promise.resolve() }),
    async forget(store) {
      // More revisions than SQLite's change log keeps.
      for (let i = 0; i <= SQLITE_LOG_REVISIONS; i++) await store.txn([], [{ type: 'put', key: 'filler/k', value: String(i) }]);
    },
  },
  {
    name: 'etcd',
    async open() {
      const cluster = await startEtcd({ members: 1 });
      etcd = cluster;
      return { url: cluster.url, stop: () => cluster.stop() };
    },
    async forget(store) {
      await etcdPost(etcd!.members[0] as EtcdMember, 'kv/compaction', { revision: String(await store.revision()) });
    },
  },
];

async function rig(b: Backend) {
  const backend = await b.open();
  const store = await openStore(backend.url);
  const clock = { now: T0 };
  const ipam = new ClusterIpam(store, { writer: 'n1', now: () => new Date(clock.now) });
  await ipam.createPool({ name: 'v4', cidr: '10.0.0.0/24', blockSize: 28 });
  const path = join(dir, `history-${++n}.db`);
  const log = recordingLog();
  let db: HistoryDb | undefined;
  let follower: HistoryFollower | undefined;
  const follow = {
    async start(): Promise<HistoryDb> {
      db = openHistoryDb(path);
      follower = new HistoryFollower({ store, db, log, now: () => clock.now, retryMs: 50 });
      await follower.start();
      return db;
    },
    async caughtUp(): Promise<void> {
      await follower!.caughtUp(await store.revision());
    },
    async stop(): Promise<void> {
      await follower?.stop();
      db?.close();
      follower = undefined;
      db = undefined;
    },
  };
  return { store, ipam, clock, path, log, follow, close: async () => (await follow.stop(), await store.close(), await backend.stop()) };
}

for (const b of backends) {
  describe(`history follower on ${b.name}`, () => {
    it("follows live, is stopped while pods come and go, and recovers every hold with the stamps' exact times on restart", async () => {
      const r = await rig(b);
      try {
        const { ipam, clock } = r;
        let db = await r.follow.start();
        assert.deepEqual(
          db.gaps().map((g) => [g.from, g.until, g.cause]),
          [[0, T0, 'before history began']],
        );
        clock.now = T0 + 1000;
        const [a] = await ipam.assign({
          node: 'n1',
          handle: 'net:c1:eth0',
          auto: { 4: 1 },
          attrs: { network: 'net', containerId: 'c1', ifname: 'eth0', namespace: 'web', pod: 'web-0', podUid: 'u1' },
        });
        await r.follow.caughtUp();
        const addr = formatAddr(a!.addr);
        assert.deepEqual(
          db.holdsOfAddress(addr).map((h) => [h.handle, h.from, h.until]),
          [['net:c1:eth0', { at: T0 + 1000 }, undefined]],
          'followed live',
        );
        await r.follow.stop();

        // serve is away: pods come and go.
        clock.now = T0 + 2000;
        await ipam.releaseHandle('net:c1:eth0');
        clock.now = T0 + 3000;
        await ipam.assign({ node: 'n1', handle: 'net:c2:eth0', ips: [a!.addr], attrs: { namespace: 'web', pod: 'web-1' } });
        clock.now = T0 + 4000;
        const [c] = await ipam.assign({ node: 'n1', handle: 'net:c3:eth0', auto: { 4: 1 } });
        clock.now = T0 + 5000;
        await ipam.withReason('cni-gc').releaseHandle('net:c3:eth0');
        const [w] = await ipam.assign({ node: 'n1', handle: 'podipam-warm:n1:r1', auto: { 4: 1 } });
        clock.now = T0 + 7500; // the write-behind: the pod got the address at 6000, its DEL came at 7000, one batch at 7500
        await ipam.writeWarmRecords([
          {
            key: 'agent-pods/n1/net:w1:eth0',
            value: JSON.stringify({ addrs: [formatAddr(w!.addr)], since: new Date(T0 + 6000).toISOString(), namespace: 'web', name: 'warm-0', uid: 'uw' }),
          },
          { key: 'agent-pods/n1/net:w1:eth0', value: undefined, at: T0 + 7000, why: 'del' },
        ]);

        clock.now = T0 + 60_000;
        db = await r.follow.start();
        await r.follow.caughtUp();
        assert.deepEqual(
          db.holdsOfAddress(addr).map((h) => [h.handle, h.pod?.name, h.from, h.until]),
          [
            ['net:c1:eth0', 'web-0', { at: T0 + 1000 }, { at: T0 + 2000, why: 'del' }],
            ['net:c2:eth0', 'web-1', { at: T0 + 3000 }, undefined],
          ],
        );
        assert.deepEqual(
          db.holdsOfAddress(formatAddr(c!.addr)).map((h) => [h.handle, h.from, h.until]),
          [['net:c3:eth0', { at: T0 + 4000 }, { at: T0 + 5000, why: 'cni-gc' }]],
        );
        assert.deepEqual(
          db.holdsOfAddress(formatAddr(w!.addr)).map((h) => [h.handle, h.pod, h.from, h.until]),
          [['net:w1:eth0', { namespace: 'web', name: 'warm-0', uid: 'uw' }, { at: T0 + 6000 }, { at: T0 + 7000, why: 'del' }]],
        );
        assert.equal(db.gaps().length, 1, 'no gap: every revision was still there');
        const at1500 = db.holderAt(addr, T0 + 1500);
        assert.ok(at1500.known && at1500.hold?.handle === 'net:c1:eth0');
        const at2500 = db.holderAt(addr, T0 + 2500);
        assert.ok(at2500.known && at2500.hold === undefined, 'between the two holds: nobody');
        assert.equal(db.openHolds().length, 1);
      } finally {
        await r.close();
      }
    });

    it('revisions the datastore no longer keeps: a gap with its bounds; holds changed in it are known only to the gap; holderAt inside is unknown', async () => {
      const r = await rig(b);
      try {
        const { ipam, clock, store } = r;
        await r.follow.start();
        clock.now = T0 + 1000;
        const [a] = await ipam.assign({ node: 'n1', handle: 'net:c1:eth0', auto: { 4: 1 } });
        await r.follow.caughtUp();
        await r.follow.stop();

        clock.now = T0 + 2000;
        await ipam.releaseHandle('net:c1:eth0');
        clock.now = T0 + 3000;
        const [c] = await ipam.assign({ node: 'n1', handle: 'net:c2:eth0', auto: { 4: 1 } });
        await b.forget(store);

        clock.now = T0 + 10_000;
        const db = await r.follow.start();
        await r.follow.caughtUp();
        const gaps = db.gaps();
        assert.equal(gaps.length, 2);
        assert.deepEqual([gaps[1]!.from, gaps[1]!.until], [T0 + 1000, T0 + 10_000]);
        assert.match(gaps[1]!.cause, /no longer had revisions \d+-\d+ \(compacted\)/);
        assert.deepEqual(
          db.holdsOfAddress(formatAddr(a!.addr)).map((h) => [h.handle, h.from, h.until]),
          [['net:c1:eth0', { at: T0 + 1000 }, { at: T0 + 10_000, earliest: T0 + 1000, why: 'unknown' }]],
        );
        assert.deepEqual(
          db.holdsOfAddress(formatAddr(c!.addr)).map((h) => [h.handle, h.from]),
          [['net:c2:eth0', { at: T0 + 10_000, earliest: T0 + 1000 }]],
        );
        const inside = db.holderAt(formatAddr(a!.addr), T0 + 5000);
        assert.equal(inside.known, false, 'an instant inside the gap: unknown');
        const beforeGap = db.holderAt(formatAddr(a!.addr), T0 - 500);
        assert.equal(beforeGap.known, false, 'before history began: unknown');
        const free = db.holderAt(formatAddr(a!.addr), T0 + 500);
        assert.ok(free.known && free.hold === undefined, 'after history began, before the assignment: nobody');
        const held = db.holderAt(formatAddr(a!.addr), T0 + 1000);
        assert.ok(held.known && held.hold?.handle === 'net:c1:eth0', "at the gap's start the hold is known");
        assert.ok(
          r.log.records.some((l) => /history: gap recorded/.test(l.msg)),
          'the gap is logged',
        );
        // Following goes on after the relist.
        clock.now = T0 + 11_000;
        await ipam.releaseHandle('net:c2:eth0');
        await r.follow.caughtUp();
        assert.deepEqual(
          db.holdsOfAddress(formatAddr(c!.addr)).map((h) => h.until),
          [{ at: T0 + 11_000, why: 'del' }],
        );
      } finally {
        await r.close();
      }
    });
  });
}

it('a history file that follows another datastore is refused, naming both', async () => {
  const path = join(dir, 'mismatch.db');
  const one = await openStore(`sqlite:${join(dir, 'one.db')}`);
  const two = await openStore(`sqlite:${join(dir, 'two.db')}`);
  try {
    let db = openHistoryDb(path);
    const f = new HistoryFollower({ store: one, db, log: recordingLog() });
    await f.start();
    await f.stop();
    db.close();
    db = openHistoryDb(path);
    try {
      await assert.rejects(new HistoryFollower({ store: two, db, log: recordingLog() }).start(), (e: unknown) => {
        assert.ok(e instanceof HistorySourceMismatchError);
        assert.match(e.message, /one\.db/);
        assert.match(e.message, /two\.db/);
        return true;
      });
    } finally {
      db.close();
    }
  } finally {
    await one.close();
    await two.close();
  }
});
