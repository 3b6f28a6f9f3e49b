/**
 * The holder view on a real warm pool (real SQLite datastore file and resource DB, a clock moved
 * by hand): it goes out in the write-behind's txn with the pod records, lists the pods served and
 * the idle and cooling addresses, never more often than the interval, in a txn of its own when
 * it changed and nothing is queued, and unchanged only at the refresh period.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentViewKey, decodeAgentView } from '../cluster/records/agent-view-record.js';
import { type WarmRig, startWarmRig, stopWarmRig, warmConf } from '../../test/helpers/warm-rig.js';
import { warmPodRecordKey as podRecordKey } from '../model/warm-pod-record.js';
import { VIEW_REFRESH_FACTOR } from './warm-view-publisher.js';

const root = mkdtempSync(join(tmpdir(), 'podipam-warm-view-'));
after(() => rmSync(root, { recursive: true, force: true }));

const req = (id: string) => ({
  containerId: id,
  ifname: 'eth0',
  cniArgs: new Map([
    ['K8S_POD_NAMESPACE', 'ns'],
    ['K8S_POD_NAME', id],
  ]),
  conf: warmConf,
});

describe('warm holder view', () => {
  it('rides with the pod records, then alone when it changed, at most every interval, unchanged at the refresh period', async () => {
    const r: WarmRig = await startWarmRig({
      root,
      n: 1,
      pools: [{ name: 'v4', cidr: '10.79.0.0/16' }],
      options: {
        node: 'n1',
        minIdle: 4,
        maxIdle: 8,
        capacity: 64,
        cooldownMs: 30_000,
        stickyForMs: 0,
        tickMs: 3_600_000,
        writeDelayMs: 3_600_000,
        viewIntervalMs: 1000,
      },
    });
    try {
      const view = async () => {
        const e = await r.admin.store.get(agentViewKey('n1'));
        assert.ok(e, 'a view was published');
        return { ...decodeAgentView(e), rev: e.rev };
      };
      const t0 = (r.clock.t = 2_000_000);
      const ip = (await r.warm.add(req('a'))).ips[0]!.address.split('/')[0]!;
      await r.warm.flushWrites();
      const rec = await r.admin.store.get(podRecordKey('n1', 'wnet:a:eth0'));
      let v = await view();
      assert.equal(v.rev, rec?.rev, 'the view and the pod record: one txn');
      assert.deepEqual(
        v.pods.map((p) => [p.key, p.containerId, p.namespace, p.name, p.addrs]),
        [['wnet:a:eth0', 'a', 'ns', 'a', [ip]]],
      );
      assert.ok(v.idle.length >= 3 && !v.idle.includes(ip), JSON.stringify(v.idle));
      assert.deepEqual([v.pending, v.cooling, v.sticky, v.at, v.refreshMs], [0, [], [], new Date(t0).toISOString(), VIEW_REFRESH_FACTOR * 1000]);

      const rev0 = await r.admin.store.revision();
      await r.warm.flushWrites();
      assert.equal(await r.admin.store.revision(), rev0, 'nothing queued, view unchanged: no txn');

      r.clock.t = t0 + 500;
      await r.warm.del(req('a'));
      await r.warm.flushWrites();
      assert.equal(await r.admin.store.revision(), rev0 + 1, 'the record delete');
      assert.equal((await view()).rev, v.rev, 'within the interval the view waits');

      r.clock.t = t0 + 1500;
      await r.warm.flushWrites();
      assert.equal(await r.admin.store.revision(), rev0 + 2, 'the changed view, alone');
      v = await view();
      assert.deepEqual([v.pods, v.cooling], [[], [ip]]);

      r.clock.t = t0 + 4000;
      await r.warm.flushWrites();
      assert.equal(await r.admin.store.revision(), rev0 + 2, 'unchanged: not before the refresh period');
      r.clock.t = t0 + 1500 + VIEW_REFRESH_FACTOR * 1000;
      await r.warm.flushWrites();
      assert.equal((await view()).rev, rev0 + 3, 'unchanged, refreshed at its period');
    } finally {
      await stopWarmRig(r);
    }
  });
});
