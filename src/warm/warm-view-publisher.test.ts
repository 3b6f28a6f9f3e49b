/**
 * The holder view on a real warm pool (real SQLite datastore file and resource DB, a clock moved
 * by hand): it goes out in the write-behind's txn with the pod records, lists the pods served and
 * the idle and cooling addresses, never more often than the interval, in a txn of its own when
 * it changed and nothing is queued; unchanged, only its heartbeat (`agent-beats/<node>`, naming
 * the view's revision) goes out at the refresh period, never the view again; after a txn whose
 * answer was lost the next publish is the whole view.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentViewKey, decodeAgentView } from '../cluster/records/agent-view-record.js';
import { CONFIG_KEY } from '../cluster/records/index.js';
import { agentBeatKey, decodeAgentBeat } from '../cluster/records/agent-beat-record.js';
import { openStore } from '../store/index.js';
import { type LostAnswerStore, lostAnswerStore } from '../../test/helpers/lost-answer-store.js';
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
  it('rides with the pod records, then alone when it changed, at most every interval; unchanged, a heartbeat at the refresh period; after a lost answer the whole view', async () => {
    let wrapped: LostAnswerStore | undefined;
    const r: WarmRig = await startWarmRig(
      {
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
      },
      {},
      undefined,
      { openStore: async (url) => (wrapped = lostAnswerStore(await openStore(url))) },
    );
    try {
      const beat = async () => {
        const e = await r.admin.store.get(agentBeatKey('n1'));
        return e && { ...decodeAgentBeat(e), rev: e.rev };
      };
      const view = async () => {
        const e = await r.admin.store.get(agentViewKey('n1'));
        assert.ok(e, 'a view was published');
        return { ...decodeAgentView(e), rev: e.rev };
      };
      // First the view that answers the config the agent applied at start (its watch's first read):
      // it goes out whatever the interval.
      for (let i = 0; ; i++) {
        await r.warm.flushWrites();
        const e = await r.admin.store.get(agentViewKey('n1'));
        if (e && decodeAgentView(e).configRev !== undefined) break;
        assert.ok(i < 500, 'no view naming the applied config within 5 s');
        await new Promise((res) => setTimeout(res, 10));
      }
      const configRev = (await r.admin.store.get(CONFIG_KEY))?.rev;
      assert.equal((await view()).configRev, configRev, "the view names the config record's revision");
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
      assert.equal(await beat(), undefined, 'no heartbeat yet');
      const t1 = t0 + 1500 + VIEW_REFRESH_FACTOR * 1000;
      r.clock.t = t1;
      await r.warm.flushWrites();
      assert.equal(await r.admin.store.revision(), rev0 + 3, 'one txn at the refresh period');
      assert.equal((await view()).rev, v.rev, 'unchanged: the view is not written again');
      assert.deepEqual(await beat(), { viewRev: v.rev, at: new Date(t1).toISOString(), rev: rev0 + 3 }, 'its heartbeat names the view');
      r.clock.t = t1 + 4000;
      await r.warm.flushWrites();
      assert.equal(await r.admin.store.revision(), rev0 + 3, 'the heartbeat too waits for the refresh period');
      r.clock.t = t1 + VIEW_REFRESH_FACTOR * 1000;
      await r.warm.flushWrites();
      assert.deepEqual([(await view()).rev, (await beat())?.rev, (await beat())?.viewRev], [v.rev, rev0 + 4, v.rev], 'beat again, not the view');

      // A changed view goes out whole (and later heartbeats name it).
      const t2 = (r.clock.t = t1 + VIEW_REFRESH_FACTOR * 1000 + 1000);
      await r.warm.add(req('b'));
      await r.warm.flushWrites();
      v = await view();
      assert.deepEqual([v.at, v.pods.map((p) => p.containerId)], [new Date(t2).toISOString(), ['b']], 'the changed view, whole');
      assert.equal((await beat())?.rev, rev0 + 4, 'no heartbeat with it');

      // A heartbeat txn whose answer is lost (it committed; the agent cannot know): the next publish is the whole view.
      const t3 = (r.clock.t = t2 + VIEW_REFRESH_FACTOR * 1000);
      const lost = wrapped!.loseNext((ops) => ops.some((o) => o.key === agentBeatKey('n1')));
      await r.warm.flushWrites();
      await lost;
      assert.deepEqual(await beat(), { viewRev: v.rev, at: new Date(t3).toISOString(), rev: await r.admin.store.revision() }, 'the lost txn landed');
      const before = v.rev;
      r.clock.t = t3 + 100;
      await r.warm.flushWrites();
      v = await view();
      assert.ok(v.rev > before, 'unchanged, yet written whole after the lost answer');
      assert.equal(v.at, new Date(t3 + 100).toISOString());
      const bAfter = await beat();
      assert.equal(bAfter?.viewRev, before, 'the lost heartbeat no longer vouches (it names the old revision)');
      r.clock.t = t3 + 100 + VIEW_REFRESH_FACTOR * 1000;
      await r.warm.flushWrites();
      assert.deepEqual([(await view()).rev, (await beat())?.viewRev], [v.rev, v.rev], 'then heartbeats name the new view');

      // A config change (a reservation) the agent applied: its view goes out on the next flush, within the interval,
      // naming the new config generation (what `ipam reserve` waits for).
      r.clock.t += 100;
      await r.admin.putReservation('r1', ['10.78.0.1/32']);
      const newRev = (await r.admin.store.get(CONFIG_KEY))!.rev;
      for (let i = 0; (await view()).configRev !== newRev; i++) {
        assert.ok(i < 500, 'the view never named the new config generation');
        await new Promise((res) => setTimeout(res, 10));
        await r.warm.flushWrites();
      }
      assert.ok((await view()).rev > v.rev);
    } finally {
      await stopWarmRig(r);
    }
  });
});
