/**
 * The history follower on a datastore restored from a backup or replaced at the same URL, on real
 * SQLite files and a real etcd: a logical backup restored into a new datastore, the SQLite file's
 * own image put back (same identity, lower revision), another SQLite file at the same path written
 * past the history's revision (identity alone tells), a wiped etcd restored from a backup while
 * serve was away and while it follows. Each time the history records a gap from the last instant
 * it knew the datastore to the relist, answers "unknown" for every address inside it (never
 * "none", never the holder it last saw), knows the holds on both sides, and follows on.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEtcd, type EtcdCluster } from '../../test/helpers/etcd.js';
import { ClusterIpam } from '../cluster/service/cluster-ipam.js';
import { formatAddr, parseAddr } from '../ip/index.js';
import { recordingLog } from '../log/logger.js';
import { parseBackup } from '../store/backup-file.js';
import { backupText, restoreBackup } from '../store/backup-store.js';
import { openStore, type Store } from '../store/index.js';
import { HistoryFollower } from './history-follower.js';
import { openHistoryDb } from './sqlite-history-db.js';

const T0 = Date.parse('2026-03-01T10:00:00.000Z');
const dir = mkdtempSync(join(tmpdir(), 'podipam-history-restore-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;

/** A datastore at one URL whose contents a test can replace: `replace` returns the store to use afterwards. */
interface Subject {
  readonly url: string;
  store: Store;
  /** Called once the history has seen c1 assigned: keep what the replacement needs (a backup, an image). */
  keep(): Promise<void>;
  /** Replaces the datastore at `url` (the follower may be running); returns the store to use now. */
  replace(): Promise<Store>;
  close(): Promise<void>;
}

async function logicalBackup(store: Store): Promise<ReturnType<typeof parseBackup>> {
  return parseBackup('backup.jsonl', (await backupText(store, new Date(T0))).text);
}

function rmSqlite(file: string): void {
  for (const f of [file, `${file}-wal`, `${file}-shm`]) rmSync(f, { force: true });
}

const sqliteNewFile = async (): Promise<Subject> => {
  const file = join(dir, `store-${++n}.db`);
  const url = `sqlite:${file}`;
  let backup: ReturnType<typeof parseBackup> | undefined;
  const s: Subject = {
    url,
    store: await openStore(url),
    async keep() {
      backup = await logicalBackup(s.store);
    },
    async replace() {
      await s.store.close();
      rmSqlite(file);
      s.store = await openStore(url);
      await restoreBackup(s.store, backup!);
      return s.store;
    },
    close: () => s.store.close(),
  };
  return s;
};

const sqliteImage = async (): Promise<Subject> => {
  const file = join(dir, `store-${++n}.db`);
  const url = `sqlite:${file}`;
  const image = `${file}.image`;
  const s: Subject = {
    url,
    store: await openStore(url),
    async keep() {
      await s.store.close(); // the last close checkpoints the WAL: the file is whole
      copyFileSync(file, image);
      s.store = await openStore(url);
    },
    async replace() {
      await s.store.close();
      rmSqlite(file);
      copyFileSync(image, file);
      s.store = await openStore(url);
      return s.store;
    },
    close: () => s.store.close(),
  };
  return s;
};

const sqliteOtherFileAhead = async (): Promise<Subject> => {
  const file = join(dir, `store-${++n}.db`);
  const url = `sqlite:${file}`;
  let backup: ReturnType<typeof parseBackup> | undefined;
  const s: Subject = {
    url,
    store: await openStore(url),
    async keep() {
      backup = await logicalBackup(s.store);
    },
    async replace() {
      const rev = await s.store.revision();
      await s.store.close();
      rmSqlite(file);
      s.store = await openStore(url);
      // Written past the history's revision: only the file's identity tells it is another.
      for (let i = 0; i <= rev; i++) await s.store.txn([], [{ type: 'put', key: 'filler/k', value: String(i) }]);
      await s.store.txn([], [{ type: 'delete', key: 'filler/k' }]);
      await restoreBackup(s.store, backup!, { force: true });
      assert.ok((await s.store.revision()) > rev, 'the new datastore is ahead of the history');
      return s.store;
    },
    close: () => s.store.close(),
  };
  return s;
};

let etcd: EtcdCluster | undefined;
after(() => etcd?.stop());
const etcdWiped = async (): Promise<Subject> => {
  await etcd?.stop();
  etcd = await startEtcd({ members: 1 });
  const cluster = etcd;
  let backup: ReturnType<typeof parseBackup> | undefined;
  const s: Subject = {
    url: cluster.url,
    store: await openStore(cluster.url),
    async keep() {
      backup = await logicalBackup(s.store);
    },
    async replace() {
      const m = cluster.members[0]!;
      await m.kill();
      rmSync(m.dataDir, { recursive: true, force: true });
      await m.restart();
      await restoreBackup(s.store, backup!); // the same client: it reaches the new etcd at the same URL
      return s.store;
    },
    close: async () => (await s.store.close(), await cluster.stop()),
  };
  return s;
};

const cases: { name: string; subject: () => Promise<Subject>; live: boolean }[] = [
  { name: 'sqlite: a backup restored into a new file at the same path', subject: sqliteNewFile, live: false },
  { name: "sqlite: the file's own image put back (same identity, lower revision)", subject: sqliteImage, live: false },
  { name: "sqlite: another file at the same path, written past the history's revision (identity alone)", subject: sqliteOtherFileAhead, live: false },
  { name: 'etcd: wiped and restored from a backup while serve was away', subject: etcdWiped, live: false },
  { name: 'etcd: wiped and restored from a backup while the follower follows', subject: etcdWiped, live: true },
];

describe('history follower on a restored or replaced datastore', () => {
  for (const c of cases) {
    it(`${c.name}: a gap, "unknown" inside it for every address, the holds on both sides known, following goes on`, { timeout: 120_000 }, async () => {
      const s = await c.subject();
      const clock = { now: T0 };
      const path = join(dir, `history-${++n}.db`);
      const log = recordingLog();
      let db = openHistoryDb(path);
      let follower: HistoryFollower | undefined;
      const ipamOf = (store: Store): ClusterIpam => new ClusterIpam(store, { writer: 'n1', now: () => new Date(clock.now) });
      const follow = async (store: Store): Promise<void> => {
        follower = new HistoryFollower({ store, db, log, now: () => clock.now, retryMs: 50, checkIntervalMs: 100 });
        await follower.start();
      };
      try {
        let ipam = ipamOf(s.store);
        await ipam.createPool({ name: 'v4', cidr: '10.0.0.0/24', blockSize: 28 });
        await follow(s.store);
        clock.now = T0 + 1000;
        const [a1] = await ipam.assign({ node: 'n1', handle: 'net:c1:eth0', auto: { 4: 1 } });
        const a = formatAddr(a1!.addr);
        const free = formatAddr(parseAddr('10.0.0.200')); // never held by anyone
        await follower!.caughtUp(await s.store.revision());
        await follower!.stop();
        await s.keep(); // the backup: c1 holds a
        ipam = ipamOf(s.store);
        await follow(s.store);

        clock.now = T0 + 2000;
        await ipam.releaseHandle('net:c1:eth0');
        clock.now = T0 + 3000;
        await ipam.assign({ node: 'n1', handle: 'net:c2:eth0', ips: [a1!.addr] });
        await follower!.caughtUp(await s.store.revision());
        assert.equal(db.gaps().length, 1, 'before the restore: only "before history began"');

        clock.now = T0 + 10_000;
        let store: Store;
        if (c.live) {
          store = await s.replace();
          await waitFor(
            () => db.gaps().length === 2,
            () => `no gap after the restore; log: ${JSON.stringify(log.records.map((r) => r.msg))}`,
          );
          await follower!.caughtUp(await store.revision()); // the restore may have been found before it was complete
        } else {
          await follower!.stop();
          db.close();
          store = await s.replace();
          db = openHistoryDb(path);
          await follow(store);
        }
        ipam = ipamOf(store);

        const gaps = db.gaps();
        assert.equal(gaps.length, 2, JSON.stringify(gaps));
        const gap = gaps[1]!;
        assert.match(gap.cause, /restored or replaced|replaced or restored/);
        assert.equal(gap.until, T0 + 10_000);
        assert.ok(gap.from >= T0 + 3000 && gap.from <= T0 + 10_000, `the gap starts when the history last knew the datastore: ${gap.from}`);
        assert.ok(
          log.records.some((r) => /history: gap recorded \(the datastore was (restored|replaced)/.test(r.msg)),
          'logged',
        );

        // Inside the gap: unknown, for the address the history last saw held and for one it saw free.
        for (const addr of [a, free]) {
          const inside = db.holderAt(addr, (gap.from + gap.until) / 2);
          assert.equal(inside.known, false, `${addr} inside the gap: ${JSON.stringify(inside)}`);
        }
        // Before it: what the history saw.
        const before = db.holderAt(a, T0 + 2500);
        assert.ok(before.known && before.hold === undefined, 'between c1 and c2, before the gap: nobody');
        const c2 = db.holderAt(a, T0 + 3000);
        assert.ok(c2.known && c2.hold?.handle === 'net:c2:eth0', 'c2 at its exact start');
        // After it: what the restored datastore says (the backup's c1).
        const restored = db.holderAt(a, T0 + 10_000);
        assert.ok(restored.known && restored.hold?.handle === 'net:c1:eth0', `after the gap: the backup's holder, ${JSON.stringify(restored)}`);
        assert.deepEqual(
          db.openHolds().map((h) => h.handle),
          ['net:c1:eth0'],
        );
        assert.equal(db.position()?.identity, await store.identity(), 're-baselined on the datastore found');
        assert.equal(db.position()?.revision, await store.revision());

        // Following goes on from the new baseline, exact again.
        clock.now = T0 + 11_000;
        await ipam.releaseHandle('net:c1:eth0');
        await follower!.caughtUp(await store.revision());
        const last = db.holdsOfAddress(a).at(-1);
        assert.deepEqual([last?.handle, last?.until], ['net:c1:eth0', { at: T0 + 11_000, why: 'del' }]);
        assert.equal(db.gaps().length, 2, 'no further gap');
      } finally {
        await follower?.stop();
        db.close();
        await s.close();
      }
    });
  }
});

async function waitFor(cond: () => boolean, what: () => string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(what());
    await new Promise((r) => setTimeout(r, 50));
  }
}
