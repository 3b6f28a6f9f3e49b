import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { type ReconcileDb, planReconcile } from './plan-reconcile.js';
import type { HeldRow, PodRow } from './resource-db.js';

const row = (addr: string, freeAt = 0, handle = 'podipam-warm:n:r1'): HeldRow => ({ addr, family: 4, handle, prefixLen: 26, gateway: '10.0.0.1', freeAt });
const pod = (key: string, ...addrs: string[]): PodRow => ({ key, network: 'net', containerId: key, ifname: 'eth0', addrs, since: 0 });
const dbOf = (d: Partial<ReconcileDb>): ReconcileDb => ({
  held: [],
  pods: [],
  quarantined: [],
  refills: new Set(['podipam-warm:n:r1']),
  released: new Set(),
  ...d,
});
const dsOf = (held: HeldRow[], records: PodRow[] = []) => ({ held: new Map(held.map((r) => [r.addr, r])), records });

describe('planReconcile', () => {
  it('drops what the datastore no longer holds (and the pods using it), adopts what a recorded refill put there after the cooldown', () => {
    const db = dbOf({ held: [row('10.0.0.2'), row('10.0.0.3'), row('10.0.0.4', 5)], pods: [pod('a', '10.0.0.2'), pod('b', '10.0.0.3')] });
    const p = planReconcile(db, dsOf([row('10.0.0.2'), row('10.0.0.4'), row('10.0.0.9')]), 1000, 30);
    assert.deepEqual(p.gone, ['10.0.0.3']);
    assert.deepEqual(
      p.forgotten.map((r) => [r.addr, r.freeAt]),
      [['10.0.0.9', 1030]],
    );
    assert.deepEqual(p.quarantine, []);
    assert.deepEqual(
      p.dropPods.map((d) => [d.pod.key, d.keep]),
      [['b', []]],
    );
    assert.deepEqual([...p.inUse], [['10.0.0.2', 'a']]);
  });

  it('a pod naming an address the DB does not hold, or one another pod holds, is dropped; its other addresses go idle', () => {
    const held = [row('10.0.0.2'), row('10.0.0.3')];
    const db = dbOf({ held, pods: [pod('a', '10.0.0.2'), pod('b', '10.0.0.2', '10.0.0.3'), pod('c', '10.0.0.7')] });
    const p = planReconcile(db, dsOf(held), 0, 0);
    assert.deepEqual(p.gone, []);
    assert.deepEqual(
      p.dropPods.map((d) => [d.pod.key, d.keep]),
      [
        ['b', ['10.0.0.3']],
        ['c', []],
      ],
    );
    assert.deepEqual([...p.inUse], [['10.0.0.2', 'a']]);
  });

  it('a lost DB: the datastore pod records are in use (adopted), the rest of handles the DB never knew is quarantined, never idle', () => {
    const held = [row('10.0.0.2', 0, 'podipam-warm:n:old'), row('10.0.0.3', 0, 'podipam-warm:n:old'), row('10.0.0.4', 0, 'podipam-warm:n:old')];
    const p = planReconcile(dbOf({ refills: new Set() }), dsOf(held, [pod('a', '10.0.0.2'), pod('gone', '10.0.0.99')]), 1000, 30);
    assert.deepEqual(
      p.adopt.map((x) => [x.pod.key, x.pod.addrs, x.rows.map((r) => r.addr)]),
      [['a', ['10.0.0.2'], ['10.0.0.2']]],
    );
    assert.deepEqual(p.forgotten, []);
    assert.deepEqual(
      p.quarantine.map((r) => r.addr),
      ['10.0.0.3', '10.0.0.4'],
    );
    assert.deepEqual(p.dropRecords, ['gone'], 'a record of addresses the node no longer holds is deleted');
    assert.deepEqual([...p.inUse], [['10.0.0.2', 'a']]);
  });

  it("the DB knows newer: a record of a pod whose DEL it recorded is not adopted but deleted; a record of a pod it has is its own; a record naming another pod's address is a conflict", () => {
    const held = [row('10.0.0.2'), row('10.0.0.3')];
    const db = dbOf({ held, pods: [pod('a', '10.0.0.2')], released: new Set(['b']) });
    const p = planReconcile(db, dsOf(held, [pod('a', '10.0.0.2'), pod('b', '10.0.0.3'), pod('c', '10.0.0.2')]), 0, 0);
    assert.deepEqual(p.adopt, []);
    assert.deepEqual(p.dropRecords, ['b'], "the released pod's record (back from a restore) is deleted");
    assert.deepEqual(p.conflicts, [{ pod: 'c', addrs: ['10.0.0.2'] }]);
    assert.deepEqual([...p.inUse], [['10.0.0.2', 'a']]);
  });

  it('quarantined addresses stay quarantined until a record claims them, and are dropped once the datastore no longer holds them', () => {
    const q = [row('10.0.0.5', 0, 'podipam-warm:n:old'), row('10.0.0.6', 0, 'podipam-warm:n:old'), row('10.0.0.7', 0, 'podipam-warm:n:old')];
    const p = planReconcile(dbOf({ quarantined: q }), dsOf([q[0]!, q[1]!], [pod('a', '10.0.0.6')]), 0, 30);
    assert.deepEqual(p.gone, ['10.0.0.7']);
    assert.deepEqual(p.quarantine, [], 'nothing new');
    assert.deepEqual(p.forgotten, [], '10.0.0.5 is still not known to be free');
    assert.deepEqual(
      p.adopt.map((x) => [x.pod.key, x.rows.map((r) => r.addr)]),
      [['a', ['10.0.0.6']]],
    );
  });
});
