/** The pod store and sticky reservations on a real SQLite resource DB: kept, purged an hour after deletion, persisted. */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { POD_RETENTION_MS, PodStore, type PodStoreRow } from './pod-store.js';
import { ResourceDb } from './resource-db.js';

const root = mkdtempSync(join(tmpdir(), 'podipam-pod-store-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

const row = (key: string, o: Partial<PodStoreRow> = {}): Omit<PodStoreRow, 'deletedAt' | 'goneAt'> => ({
  key,
  network: 'net',
  namespace: 'ns',
  name: `pod-${key}`,
  uid: `uid-${key}`,
  containerId: `c-${key}`,
  ifname: 'eth0',
  ownerKind: 'StatefulSet',
  sticky: true,
  poolKey: `sticky/ns/pod-${key}/net:eth0`,
  addrs: ['10.0.0.1'],
  addedAt: 1000,
  ...o,
});

describe('pod store', () => {
  it('keeps a deleted pod an hour, then purges it', () => {
    const db = new ResourceDb(join(root, `db${++n}`));
    try {
      const s = new PodStore(db.database);
      s.seen(row('a'));
      s.seen(row('b', { namespace: undefined, name: undefined, uid: undefined, ownerKind: undefined, sticky: false, poolKey: 'b' }));
      assert.deepEqual(s.get('b'), {
        ...row('b', { namespace: undefined, name: undefined, uid: undefined, ownerKind: undefined, sticky: false, poolKey: 'b' }),
        deletedAt: undefined,
        goneAt: undefined,
      });
      assert.equal(s.holder('sticky/ns/pod-a/net:eth0')?.key, 'a');
      s.deleted('a', 5000);
      s.deleted('a', 9000); // a second DEL does not move the deletion time
      assert.equal(s.get('a')?.deletedAt, 5000);
      assert.equal(s.holder('sticky/ns/pod-a/net:eth0'), undefined, 'a deleted attachment holds nothing');
      assert.deepEqual(
        s.live().map((r) => r.key),
        ['b'],
      );
      assert.deepEqual([...s.liveNames()], [['b', { namespace: undefined, name: undefined }]], 'names of live attachments only, an unknown pod as undefined');
      s.seen(row('c'));
      assert.deepEqual(s.liveNames().get('c'), { namespace: 'ns', name: 'pod-c' });
      s.deleted('c', 5000);
      assert.equal(s.purge(5000 + POD_RETENTION_MS - 1), 0, 'kept within the hour');
      assert.equal(s.byPod('ns', 'pod-a').length, 1, 'still found by namespace/name after its DEL');
      assert.equal(s.purge(5000 + POD_RETENTION_MS), 2, 'purged after the hour');
      assert.equal(s.get('a'), undefined);
      assert.equal(s.count(), 1, 'the live one stays');
    } finally {
      db.close();
    }
  });

  it('gone and back; a new ADD of the same key makes the row live again', () => {
    const db = new ResourceDb(join(root, `db${++n}`));
    try {
      const s = new PodStore(db.database);
      s.seen(row('a'));
      s.gone('a', 10);
      s.gone('a', 20);
      assert.equal(s.get('a')?.goneAt, 10, 'the first time it was seen gone');
      s.back('a');
      assert.equal(s.get('a')?.goneAt, undefined);
      s.deleted('a', 30);
      s.seen(row('a', { addedAt: 40 }));
      assert.equal(s.get('a')?.deletedAt, undefined);
    } finally {
      db.close();
    }
  });

  it('sticky reservations survive closing and reopening the resource DB; expired ones are dropped', () => {
    const dir = join(root, `db${++n}`);
    const db = new ResourceDb(dir);
    const s = new PodStore(db.database);
    db.transaction(() => {
      s.reserve([
        { addr: '10.0.0.1', family: 4, poolKey: 'k1', expiresAt: 100, freeAt: 130 },
        { addr: 'fd00::1', family: 6, poolKey: 'k1', expiresAt: 100, freeAt: 130 },
        { addr: '10.0.0.2', family: 4, poolKey: 'k2', expiresAt: 200, freeAt: 230 },
      ]);
      s.seen(row('a'));
    });
    db.close();
    const db2 = new ResourceDb(dir);
    try {
      const s2 = new PodStore(db2.database);
      assert.deepEqual(
        s2.reservations().map((r) => [r.addr, r.family, r.poolKey, r.expiresAt, r.freeAt]),
        [
          ['10.0.0.1', 4, 'k1', 100, 130],
          ['10.0.0.2', 4, 'k2', 200, 230],
          ['fd00::1', 6, 'k1', 100, 130],
        ],
      );
      assert.equal(s2.get('a')?.poolKey, 'sticky/ns/pod-a/net:eth0', 'the pod store survived too');
      assert.equal(s2.expireReservations(100), 2);
      s2.unreserve('k2');
      assert.deepEqual(s2.reservations(), []);
    } finally {
      db2.close();
    }
  });

  it('a transaction that throws leaves neither the pod row nor the reservation', () => {
    const db = new ResourceDb(join(root, `db${++n}`));
    try {
      const s = new PodStore(db.database);
      assert.throws(() =>
        db.transaction(() => {
          s.seen(row('a'));
          s.reserve([{ addr: '10.0.0.9', family: 4, poolKey: 'k', expiresAt: 1, freeAt: 1 }]);
          throw new Error('boom');
        }),
      );
      assert.equal(s.get('a'), undefined);
      assert.deepEqual(s.reservations(), []);
    } finally {
      db.close();
    }
  });
});
