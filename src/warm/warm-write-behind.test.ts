/**
 * The write-behind's history stamp, on a real warm pool (real SQLite datastore file and resource
 * DB): each pod record delete carries its DEL's time and reason into the flush txn's stamp, a put
 * folded away by a delete of the same batch is kept there; and the resource DB of an older agent
 * (without the queue's `why` column) is migrated in place.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeStamp, stampKey } from '../cluster/records/history-stamp.js';
import { type WarmRig, startWarmRig, stopWarmRig, warmConf } from '../../test/helpers/warm-rig.js';
import { ResourceDb } from './resource-db.js';
import { decodeWarmPodRecord, warmPodRecordKey as podRecordKey } from '../model/warm-pod-record.js';

const root = mkdtempSync(join(tmpdir(), 'podipam-warm-wb-'));
after(() => rmSync(root, { recursive: true, force: true }));
let seq = 0;

const rig = (): Promise<WarmRig> =>
  startWarmRig({
    root,
    n: ++seq,
    pools: [{ name: 'v4', cidr: '10.78.0.0/16' }],
    options: { node: 'n1', minIdle: 4, maxIdle: 8, capacity: 64, cooldownMs: 30_000, stickyForMs: 0, tickMs: 3_600_000, writeDelayMs: 3_600_000 },
  });
const req = (id: string) => ({ containerId: id, ifname: 'eth0', cniArgs: new Map<string, string>(), conf: warmConf });
const recordKey = (id: string): string => podRecordKey('n1', `wnet:${id}:eth0`);

async function stamp(r: WarmRig) {
  const e = await r.admin.store.get(stampKey('n1'));
  assert.ok(e, 'the node stamped its txn');
  return { ...decodeStamp(e.key, e.value), rev: e.rev };
}

describe('warm write-behind stamps', () => {
  it("a DEL's time and reason reach the flush txn's stamp; an ADD then DEL inside one write delay keeps its put there", async () => {
    const r = await rig();
    try {
      r.clock.t = 2_000_000;
      await r.warm.add(req('a'));
      await r.warm.flushWrites();
      let s = await stamp(r);
      const rec = await r.admin.store.get(recordKey('a'));
      assert.ok(rec);
      assert.equal(JSON.parse(rec.value).since, new Date(2_000_000).toISOString(), "the record keeps the ADD's time");
      assert.equal(s.rev, rec.rev, 'the puts and the stamp: one txn');
      assert.equal(s.keys, undefined);

      r.clock.t = 2_001_000;
      await r.warm.del(req('a')); // DEL
      r.clock.t = 2_002_000;
      await r.warm.add(req('b'));
      r.clock.t = 2_003_000;
      await r.warm.del(req('b')); // ADD then DEL before the flush
      r.clock.t = 2_004_000;
      await r.warm.add(req('c'));
      r.clock.t = 2_005_000;
      await r.warm.gc(warmConf, []); // CNI GC: c is not listed
      r.clock.t = 2_010_000;
      const before = await r.admin.store.revision();
      await r.warm.flushWrites();
      assert.equal(await r.admin.store.revision(), before + 1, 'one flush txn');
      s = await stamp(r);
      assert.equal(s.rev, before + 1);
      assert.equal(s.why, undefined);
      const keys = s.keys ?? {};
      assert.deepEqual(Object.keys(keys).sort(), [recordKey('a'), recordKey('b'), recordKey('c')].sort());
      assert.deepEqual(keys[recordKey('a')], { at: 2_001_000, why: 'del' });
      const b = keys[recordKey('b')];
      assert.deepEqual([b?.at, b?.why], [2_003_000, 'del']);
      assert.ok(b?.value, 'the folded put is in the stamp');
      const bv = decodeWarmPodRecord(recordKey('b'), b.value);
      assert.deepEqual([bv.since, bv.containerId, bv.addrs.length], [2_002_000, 'b', 1]);
      const c = keys[recordKey('c')];
      assert.deepEqual([c?.at, c?.why, c?.value !== undefined], [2_005_000, 'cni-gc', true]);
      for (const id of ['a', 'b', 'c']) assert.equal(await r.admin.store.get(recordKey(id)), undefined, `${id}'s record is gone`);
    } finally {
      await stopWarmRig(r);
    }
  });
});

describe('resource DB migration', () => {
  it('an old resource DB (no `why` in the write queue) is migrated in place; its queued rows carry no reason (the flush stamps them unknown); new ones carry theirs', () => {
    const dir = join(root, 'old-db');
    mkdirSync(dir, { recursive: true });
    const Db = createRequire(import.meta.url)('better-sqlite3') as new (p: string) => {
      exec(s: string): void;
      prepare(s: string): { run(...a: unknown[]): unknown; all(...a: unknown[]): unknown[] };
      close(): void;
    };
    const old = new Db(join(dir, 'resources.db'));
    // The schema of the agents released before the column (verbatim).
    old.exec(`
      CREATE TABLE held (addr TEXT PRIMARY KEY NOT NULL, family INTEGER NOT NULL, handle TEXT NOT NULL,
        prefix_len INTEGER NOT NULL, gateway TEXT NOT NULL, free_at INTEGER NOT NULL);
      CREATE TABLE pods (key TEXT PRIMARY KEY NOT NULL, network TEXT NOT NULL, container_id TEXT NOT NULL,
        ifname TEXT NOT NULL, addrs TEXT NOT NULL, since INTEGER NOT NULL);
      CREATE TABLE writes (seq INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL, value TEXT, at INTEGER NOT NULL);
      CREATE TABLE refills (handle TEXT PRIMARY KEY NOT NULL, at INTEGER NOT NULL);
      CREATE TABLE direct (key TEXT PRIMARY KEY NOT NULL, network TEXT NOT NULL, container_id TEXT NOT NULL,
        ifname TEXT NOT NULL, ips TEXT NOT NULL, since INTEGER NOT NULL);
      CREATE TABLE quarantine (addr TEXT PRIMARY KEY NOT NULL, family INTEGER NOT NULL, handle TEXT NOT NULL,
        prefix_len INTEGER NOT NULL, gateway TEXT NOT NULL, since INTEGER NOT NULL);
    `);
    old.prepare('INSERT INTO writes (key, value, at) VALUES (?, ?, ?)').run('agent-pods/n1/x', '{"since":"s"}', 10);
    old.prepare('INSERT INTO writes (key, value, at) VALUES (?, ?, ?)').run('agent-pods/n1/x', null, 20);
    old.close();

    const db = new ResourceDb(dir);
    try {
      assert.equal(db.fresh, false);
      db.removePod('wnet:y:eth0', [], 0, 'agent-pods/n1/y', 30, 'reconcile');
      assert.deepEqual(
        db.pendingWrites(10).map(({ key, value, at, why }) => ({ key, value, at, why })),
        [
          { key: 'agent-pods/n1/x', value: '{"since":"s"}', at: 10, why: undefined },
          { key: 'agent-pods/n1/x', value: undefined, at: 20, why: undefined },
          { key: 'agent-pods/n1/y', value: undefined, at: 30, why: 'reconcile' },
        ],
      );
    } finally {
      db.close();
    }
    // Opened again: nothing left to migrate, nothing lost.
    const again = new ResourceDb(dir);
    try {
      assert.equal(again.pendingWrites(10).length, 3);
      assert.equal(again.pendingWrites(10)[2]?.why, 'reconcile');
    } finally {
      again.close();
    }
  });
});
