import assert from 'node:assert/strict';
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { createRequire } from 'node:module';
import { makeTempDir, type TempDir } from '../../test/helpers/tmp.js';
import type { HistoryBatch, HistoryDb, HoldStart } from './history-db.js';
import { HistoryDbError, openHistoryDb } from './sqlite-history-db.js';

const SOURCE = 'sqlite:///var/lib/podipam/store.db';
let rev = 0;
function batch(b: Partial<HistoryBatch>, at = 0): HistoryBatch {
  return { ends: b.ends ?? [], starts: b.starts ?? [], ...(b.gaps ? { gaps: b.gaps } : {}), position: b.position ?? { source: SOURCE, revision: ++rev, at } };
}
function start(address: string, handle: string, at: number, extra: Partial<HoldStart> = {}): HoldStart {
  return { address, handle, from: { at }, ...extra };
}

describe('SqliteHistoryDb', () => {
  let dir: TempDir;
  let db: HistoryDb;
  beforeEach(() => {
    dir = makeTempDir('history');
    db = openHistoryDb(join(dir.path, 'sub', 'history.db'));
  });
  afterEach(() => {
    db.close();
    dir.remove();
  });

  it('a new file: no position, no holds, owner-only mode, and a position after apply', () => {
    assert.equal(db.position(), undefined);
    assert.deepEqual(db.openHolds(), []);
    assert.equal(statSync(db.path).mode & 0o777, 0o600);
    assert.equal(statSync(join(dir.path, 'sub')).mode & 0o777, 0o700);
    db.apply(batch({}, 5));
    assert.deepEqual(db.position(), { source: SOURCE, revision: rev, at: 5 });
  });

  it('keeps a hold with every field, closes it, and answers by address, pod and instant', () => {
    const info = {
      pod: { namespace: 'ns', name: 'web-0', uid: 'u1' },
      containerId: 'c1',
      ifname: 'eth0',
      network: 'k8s',
      node: 'n1',
      pool: 'default',
      block: '10.0.0.0/26',
    };
    db.apply(batch({ starts: [start('10.0.0.1', 'h1', 100, info)] }, 100));
    assert.deepEqual(db.openHolds(), [{ address: '10.0.0.1', handle: 'h1', from: { at: 100 }, ...info }]);
    db.apply(batch({ ends: [{ address: '10.0.0.1', handle: 'h1', until: { at: 200 }, why: 'del' }] }, 200));
    db.apply(batch({ starts: [start('10.0.0.1', 'h2', 300, { pod: { namespace: 'ns', name: 'web-0', uid: 'u2' } })] }, 300));
    const first = { address: '10.0.0.1', handle: 'h1', from: { at: 100 }, until: { at: 200, why: 'del' as const }, ...info };
    assert.deepEqual(
      db.openHolds().map((h) => h.handle),
      ['h2'],
    );
    assert.deepEqual(
      db.holdsOfAddress('10.0.0.1').map((h) => h.handle),
      ['h1', 'h2'],
    );
    assert.deepEqual(db.holdsOfAddress('10.0.0.1', { until: 250 }), [first]);
    assert.deepEqual(db.holdsOfAddress('10.0.0.1', { since: 200, until: 299 }), []); // until exclusive
    assert.deepEqual(db.holdsOfAddress('10.0.0.1', { since: 199, until: 299 }), [first]);
    assert.deepEqual(
      db.holdsOfPod('ns', 'web-0').map((h) => h.pod?.uid),
      ['u1', 'u2'],
    );
    assert.deepEqual(
      db.holdsOfPod('ns', 'web-0', { since: 250 }).map((h) => h.pod?.uid),
      ['u2'],
    );
    assert.deepEqual(db.holdsOfPod('ns', 'other'), []);
    assert.deepEqual(db.holderAt('10.0.0.1', 100), { known: true, hold: first });
    assert.deepEqual(db.holderAt('10.0.0.1', 199), { known: true, hold: first });
    assert.deepEqual(db.holderAt('10.0.0.1', 200), { known: true, hold: undefined });
    assert.deepEqual(db.holderAt('10.0.0.1', 99), { known: true, hold: undefined });
    const at = db.holderAt('10.0.0.1', 1e12);
    assert.ok(at.known && at.hold?.handle === 'h2');
    assert.deepEqual(db.holderAt('10.0.0.2', 150), { known: true, hold: undefined });
  });

  it('addresses are kept and looked up in canonical form', () => {
    db.apply(batch({ starts: [start('FD00:0:0::0001', 'h', 10)] }));
    assert.equal(db.openHolds()[0]?.address, 'fd00::1');
    const at = db.holderAt('fd00:0000::1', 10);
    assert.ok(at.known && at.hold?.handle === 'h');
    assert.equal(db.holdsOfAddress('fd00::0:1').length, 1);
  });

  it('a replayed start is ignored; ends come before starts in one batch', () => {
    db.apply(batch({ starts: [start('10.0.0.1', 'h', 10)] }));
    db.apply(batch({ starts: [start('10.0.0.1', 'h', 20)] }));
    assert.deepEqual(
      db.openHolds().map((h) => h.from),
      [{ at: 10 }],
    );
    // Released and reassigned to the same handle in one batch: two holds.
    db.apply(batch({ ends: [{ address: '10.0.0.1', handle: 'h', until: { at: 30 }, why: 'release' }], starts: [start('10.0.0.1', 'h', 30)] }));
    assert.deepEqual(
      db.holdsOfAddress('10.0.0.1').map((h) => [h.from.at, h.until?.at]),
      [
        [10, 30],
        [30, undefined],
      ],
    );
    // A replayed end of the closed hold changes nothing.
    db.apply(batch({ ends: [{ address: '10.0.0.1', handle: 'h', until: { at: 30 }, why: 'release' }] }));
    assert.equal(db.stats().holds, 2);
  });

  it('an end with no open hold: a hold whose start is unknown back to the oldest gap, or 0', () => {
    db.apply(batch({ ends: [{ address: '10.0.0.1', handle: 'h', until: { at: 500 }, why: 'cni-gc' }] }));
    const [h] = db.holdsOfAddress('10.0.0.1');
    assert.deepEqual(h, { address: '10.0.0.1', handle: 'h', from: { at: 500, earliest: 0 }, until: { at: 500, why: 'cni-gc' } });
    assert.deepEqual(db.holderAt('10.0.0.1', 250), {
      known: false,
      gap: { from: 0, until: 500, cause: 'the hold of 10.0.0.1 by h began at an unknown time in this interval' },
    });
    assert.deepEqual(db.holderAt('10.0.0.1', 500), { known: true, hold: undefined });
    db.apply(
      batch({
        gaps: [
          { from: 1000, until: 2000, cause: 'compacted' },
          { from: 600, until: 700, cause: 'before history began' },
        ],
      }),
    );
    db.apply(batch({ ends: [{ address: '10.0.0.2', handle: 'h', until: { at: 3000, earliest: 1000 }, why: 'unknown' }] }));
    const [h2] = db.holdsOfAddress('10.0.0.2');
    assert.deepEqual(h2?.from, { at: 3000, earliest: 600 });
    assert.equal(db.holderAt('10.0.0.2', 650).known, false);
    assert.deepEqual(db.holderAt('10.0.0.2', 600), { known: true, hold: undefined });
  });

  it('uncertain bounds and gaps make instants unknown; a hold certainly covering an instant wins', () => {
    db.apply(
      batch({
        starts: [start('10.0.0.1', 'a', 100), { address: '10.0.0.2', handle: 'b', from: { at: 2000, earliest: 1000 } }],
        gaps: [{ from: 1000, until: 2000, cause: 'compacted revisions 5-9' }],
      }),
    );
    db.apply(batch({ ends: [{ address: '10.0.0.1', handle: 'a', until: { at: 2000, earliest: 1000 }, why: 'unknown' }] }));
    const a = db.holderAt('10.0.0.1', 1000);
    assert.ok(a.known && a.hold?.handle === 'a'); // until.earliest: certainly still held
    const u = db.holderAt('10.0.0.1', 1500);
    assert.ok(!u.known && u.gap.from === 1000 && u.gap.until === 2000 && /ended/.test(u.gap.cause));
    assert.deepEqual(db.holderAt('10.0.0.1', 2000), { known: true, hold: undefined });
    const b = db.holderAt('10.0.0.2', 1500);
    assert.ok(!b.known && /began/.test(b.gap.cause));
    assert.ok(db.holderAt('10.0.0.2', 2000).known);
    // Another address: the gap itself.
    assert.deepEqual(db.holderAt('10.0.0.3', 1500), { known: false, gap: { from: 1000, until: 2000, cause: 'compacted revisions 5-9' } });
    assert.deepEqual(db.holderAt('10.0.0.3', 1000), { known: true, hold: undefined });
    // A hold certainly covering an instant inside a gap.
    db.apply(batch({ starts: [start('10.0.0.4', 'c', 500)] }));
    const c = db.holderAt('10.0.0.4', 1500);
    assert.ok(c.known && c.hold?.handle === 'c');
    assert.deepEqual(db.gaps(), [{ from: 1000, until: 2000, cause: 'compacted revisions 5-9' }]);
    assert.deepEqual(db.gaps({ since: 2001 }), []);
    assert.deepEqual(db.gaps({ until: 999 }), []);
    assert.equal(db.gaps({ since: 2000, until: 2000 }).length, 1);
  });

  it('records: assignments, releases and gaps in time order, paged, from `since`, at most `limit`', () => {
    db.apply(batch({ starts: [start('10.0.0.1', 'a', 10, { pod: { namespace: 'ns', name: 'p' } })] }));
    db.apply(batch({ ends: [{ address: '10.0.0.1', handle: 'a', until: { at: 20 }, why: 'del' }], starts: [start('10.0.0.1', 'b', 20)] }));
    db.apply(batch({ gaps: [{ from: 25, until: 40, cause: 'compacted' }], starts: [{ address: '10.0.0.2', handle: 'c', from: { at: 40, earliest: 25 } }] }));
    const all = [...db.records(0)];
    assert.deepEqual(all, [
      { event: 'assigned', at: 10, address: '10.0.0.1', handle: 'a', pod: { namespace: 'ns', name: 'p' } },
      { event: 'released', at: 20, why: 'del', address: '10.0.0.1', handle: 'a', pod: { namespace: 'ns', name: 'p' } },
      { event: 'assigned', at: 20, address: '10.0.0.1', handle: 'b' },
      { event: 'assigned', at: 40, earliest: 25, address: '10.0.0.2', handle: 'c' },
      { event: 'gap', from: 25, until: 40, cause: 'compacted' },
    ]);
    assert.deepEqual([...db.records(20)], all.slice(1));
    assert.deepEqual([...db.records(0, 2)], all.slice(0, 2));
    assert.deepEqual([...db.records(41)], []);
    // Many at one instant: the keyset paging neither repeats nor skips.
    const starts = Array.from({ length: 4500 }, (_, i) => start(`10.1.${i >> 8}.${i & 255}`, 'x', 100));
    db.apply(batch({ starts }));
    const late = [...db.records(100)];
    assert.equal(late.length, 4500);
    assert.equal(new Set(late.map((r) => (r.event === 'gap' ? '' : r.address))).size, 4500);
  });

  it('purge drops what ended before the instant, and instants before it become unknown', () => {
    db.apply(
      batch({ starts: [start('10.0.0.1', 'a', 10), start('10.0.0.2', 'b', 10), start('10.0.0.3', 'c', 10)], gaps: [{ from: 1, until: 5, cause: 'x' }] }),
    );
    db.apply(
      batch({
        ends: [
          { address: '10.0.0.1', handle: 'a', until: { at: 20 }, why: 'del' },
          { address: '10.0.0.2', handle: 'b', until: { at: 100 }, why: 'del' },
        ],
      }),
    );
    assert.equal(db.purge(50), 1);
    assert.deepEqual(db.stats().holds, 2);
    assert.deepEqual(db.gaps(), []);
    assert.ok(!db.holderAt('10.0.0.1', 15).known);
    const b = db.holderAt('10.0.0.2', 15);
    assert.ok(b.known && b.hold?.handle === 'b');
    assert.deepEqual(db.holderAt('10.0.0.1', 50), { known: true, hold: undefined });
    assert.equal(db.purge(40), 0);
    assert.ok(!db.holderAt('10.0.0.1', 45).known); // the horizon never moves back
  });

  it('stats: counts and the file size', () => {
    db.apply(batch({ starts: [start('10.0.0.1', 'a', 10), start('10.0.0.2', 'b', 10)], gaps: [{ from: 1, until: 5, cause: 'x' }] }));
    db.apply(batch({ ends: [{ address: '10.0.0.1', handle: 'a', until: { at: 20 }, why: 'del' }] }));
    const s = db.stats();
    assert.deepEqual({ ...s, bytes: 0 }, { holds: 2, openHolds: 1, gaps: 1, bytes: 0 });
    assert.ok(s.bytes >= 4096);
  });

  it('a batch is all or nothing: one that fails midway leaves holds and position as they were', () => {
    db.apply(batch({ starts: [start('10.0.0.1', 'a', 10)] }, 10));
    const before = db.position();
    // The second start's address is not a string: refused before anything is written.
    assert.throws(
      () => db.apply(batch({ starts: [start('10.0.0.2', 'b', 20), { ...start('x', 'c', 20), address: 7 as unknown as string }] })),
      /starts\[1\]\.address/,
    );
    // A batch from another datastore fails inside the transaction, after its ends were applied.
    assert.throws(
      () =>
        db.apply({
          ends: [{ address: '10.0.0.1', handle: 'a', until: { at: 30 }, why: 'del' }],
          starts: [],
          position: { source: 'etcd://other:2379', revision: 99, at: 30 },
        }),
      (e: unknown) => e instanceof HistoryDbError && /follows datastore sqlite:.*not etcd:\/\/other:2379/.test(e.message),
    );
    assert.deepEqual(db.position(), before);
    assert.deepEqual(
      db.openHolds().map((h) => h.handle),
      ['a'],
    );
    assert.equal(db.stats().holds, 1);
  });

  it('an apply that fails midway in SQLite (after its ends, at its second start) commits nothing', () => {
    db.apply(batch({ starts: [start('10.0.0.1', 'a', 10)] }, 10));
    const bad = { ...start('10.0.0.3', 'c', 20), containerId: {} as unknown as string };
    assert.throws(() =>
      db.apply(
        batch(
          {
            ends: [{ address: '10.0.0.1', handle: 'a', until: { at: 20 }, why: 'del' }],
            starts: [start('10.0.0.2', 'b', 20), bad],
            gaps: [{ from: 1, until: 2, cause: 'x' }],
          },
          20,
        ),
      ),
    );
    assert.equal(db.position()?.at, 10);
    assert.deepEqual(
      db.openHolds().map((h) => h.handle),
      ['a'],
    );
    assert.deepEqual({ ...db.stats(), bytes: 0 }, { holds: 1, openHolds: 1, gaps: 0, bytes: 0 });
  });

  it('read-only: reads serve’s live file (WAL), sees each committed batch, cannot write', () => {
    db.apply(batch({ starts: [start('10.0.0.1', 'a', 10)] }, 10));
    const ro = openHistoryDb(db.path, { readonly: true });
    try {
      assert.equal(ro.position()?.at, 10);
      db.apply(batch({ ends: [{ address: '10.0.0.1', handle: 'a', until: { at: 20 }, why: 'del' }], starts: [start('10.0.0.1', 'b', 20)] }, 20));
      assert.equal(ro.position()?.at, 20);
      assert.deepEqual(
        ro.holdsOfAddress('10.0.0.1').map((h) => h.handle),
        ['a', 'b'],
      );
      const at = ro.holderAt('10.0.0.1', 15);
      assert.ok(at.known && at.hold?.handle === 'a');
      assert.equal(ro.stats().holds, 2);
      assert.throws(
        () => ro.apply(batch({})),
        (e: unknown) => e instanceof HistoryDbError && /read-only/.test(e.message),
      );
      assert.throws(() => ro.purge(1), /read-only/);
    } finally {
      ro.close();
    }
  });

  it('bad files: missing (read-only: never created), not SQLite, another SQLite database, a directory', () => {
    const missing = join(dir.path, 'none.db');
    assert.throws(
      () => openHistoryDb(missing, { readonly: true }),
      (e: unknown) => e instanceof HistoryDbError && e.message.includes(missing) && /does not exist/.test(e.message),
    );
    assert.throws(() => statSync(missing), /ENOENT/);
    const text = join(dir.path, 'text.db');
    writeFileSync(text, 'not a database at all, but long enough to be read as a header........................................................');
    for (const readonly of [false, true]) {
      assert.throws(
        () => openHistoryDb(text, { readonly }),
        (e: unknown) => e instanceof HistoryDbError && e.message.includes(text) && /not a podipam history file/.test(e.message),
      );
    }
    const other = join(dir.path, 'other.db');
    const Db = createRequire(import.meta.url)('better-sqlite3') as new (p: string) => { exec(s: string): void; close(): void };
    const o = new Db(other);
    o.exec('CREATE TABLE kv (key TEXT)');
    o.close();
    for (const readonly of [false, true]) {
      assert.throws(
        () => openHistoryDb(other, { readonly }),
        (e: unknown) => e instanceof HistoryDbError && e.message.includes(other) && /not a podipam history file/.test(e.message),
      );
    }
    assert.throws(
      () => openHistoryDb(dir.path),
      (e: unknown) => e instanceof HistoryDbError && /not a regular file/.test(e.message),
    );
    // An empty file (created, never written) becomes a history file.
    const empty = join(dir.path, 'empty.db');
    writeFileSync(empty, '');
    openHistoryDb(empty).close();
    openHistoryDb(empty, { readonly: true }).close();
  });

  it('reopening keeps everything; a closed store refuses calls', () => {
    db.apply(batch({ starts: [start('10.0.0.1', 'a', 10)] }, 10));
    const path = db.path;
    db.close();
    db = openHistoryDb(path);
    assert.equal(db.position()?.at, 10);
    assert.equal(db.openHolds().length, 1);
    const c = openHistoryDb(path);
    c.close();
    assert.throws(() => c.openHolds(), /closed/);
  });
});
