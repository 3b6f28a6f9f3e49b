import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { planReconcile } from './plan-reconcile.js';
import type { HeldRow, PodRow } from './resource-db.js';

const row = (addr: string, freeAt = 0): HeldRow => ({ addr, family: 4, handle: 'podipam-warm:n:r1', prefixLen: 26, gateway: '10.0.0.1', freeAt });
const pod = (key: string, ...addrs: string[]): PodRow => ({ key, network: 'net', containerId: key, ifname: 'eth0', addrs, since: 0 });

describe('planReconcile', () => {
  it('drops what the datastore no longer holds (and the pods using it), adopts what the DB forgot after the cooldown', () => {
    const db = { held: [row('10.0.0.2'), row('10.0.0.3'), row('10.0.0.4', 5)], pods: [pod('a', '10.0.0.2'), pod('b', '10.0.0.3')] };
    const ds = new Map([row('10.0.0.2'), row('10.0.0.4'), row('10.0.0.9')].map((r) => [r.addr, r]));
    const p = planReconcile(db, ds, 1000, 30);
    assert.deepEqual(p.gone, ['10.0.0.3']);
    assert.deepEqual(p.forgotten.map((r) => [r.addr, r.freeAt]), [['10.0.0.9', 1030]]);
    assert.deepEqual(p.dropPods.map((d) => [d.pod.key, d.keep]), [['b', []]]);
    assert.deepEqual([...p.inUse], [['10.0.0.2', 'a']]);
  });

  it('a pod naming an address the DB does not hold, or one another pod holds, is dropped; its other addresses go idle', () => {
    const db = { held: [row('10.0.0.2'), row('10.0.0.3')], pods: [pod('a', '10.0.0.2'), pod('b', '10.0.0.2', '10.0.0.3'), pod('c', '10.0.0.7')] };
    const ds = new Map(db.held.map((r) => [r.addr, r]));
    const p = planReconcile(db, ds, 0, 0);
    assert.deepEqual(p.gone, []);
    assert.deepEqual(p.dropPods.map((d) => [d.pod.key, d.keep]), [['b', ['10.0.0.3']], ['c', []]]);
    assert.deepEqual([...p.inUse], [['10.0.0.2', 'a']]);
  });
});
