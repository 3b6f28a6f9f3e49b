// The history store at a small scale of the bench (bench/history.ts: 1,000,000 events): 50,000
// events of 7,500 addresses reused by several pods, applied in time order; then 2,000 point
// queries of each kind, every answer checked against the generated holds. The timings are
// printed, not timed: the p99 bound asserted is loose (the machine may be loaded).
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { makeTempDir } from '../../test/helpers/tmp.js';
import { openHistoryDb } from './sqlite-history-db.js';
import { fillHistory, generateWorkload, queryHistory } from './sqlite-history-db-workload.js';

test('50,000 events: every point answer right, p99 well under a second', { timeout: 300_000 }, (t) => {
  const dir = makeTempDir('history-scale');
  try {
    const path = join(dir.path, 'history.db');
    const w = generateWorkload({ events: 50_000, pods: 7_500, seed: 5 });
    assert.equal(w.events, 50_000);
    const db = openHistoryDb(path);
    const fill = fillHistory(db, w, 20_000);
    const stats = db.stats();
    assert.deepEqual({ holds: stats.holds, openHolds: stats.openHolds }, { holds: w.holds.length, openHolds: 7_500 });
    assert.equal(db.position()?.revision, fill.transactions);
    const ro = openHistoryDb(path, { readonly: true });
    try {
      const r = queryHistory(ro, w, 2_000, 11);
      t.diagnostic(
        `fill ${Math.round(fill.events / (fill.ms / 1000))} events/s in ${fill.transactions} transactions; ${Math.round(stats.bytes / fill.events)} bytes per event`,
      );
      for (const k of ['holderAt', 'holdsOfAddress', 'holdsOfPod'] as const)
        t.diagnostic(`${k}: p50 ${r[k].p50.toFixed(2)} ms, p99 ${r[k].p99.toFixed(2)} ms, max ${r[k].max.toFixed(2)} ms`);
      assert.equal(r.wrong, 0, r.examples.join('\n'));
      for (const k of ['holderAt', 'holdsOfAddress', 'holdsOfPod'] as const) assert.ok(r[k].p99 < 500, `${k} p99 ${r[k].p99} ms`);
      // The export walks every event once, in time order.
      let n = 0;
      let prev = -Infinity;
      for (const rec of ro.records(0)) {
        const at = rec.event === 'gap' ? rec.until : rec.at;
        assert.ok(at >= prev);
        prev = at;
        n++;
      }
      assert.equal(n, 50_000);
    } finally {
      ro.close();
      db.close();
    }
  } finally {
    dir.remove();
  }
});
