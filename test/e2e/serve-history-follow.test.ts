/**
 * `podipam serve` keeps the allocation history: DATA_DIR/history.db by default, fed by the
 * follower while the built plugin ADDs and DELs a pod (exact times, from the plugin's stamps),
 * counted on /metrics and shown in /healthz; `--no-history` keeps none; a bad
 * `--history-retention` is a usage error naming the flag.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { PODIPAM_BIN, runPlugin } from '../helpers/plugin.js';
import { openHistoryDb } from '../../src/history/sqlite-history-db.js';
import { makeTempDir } from '../helpers/tmp.js';
import { api, runCli, startServe, waitFor } from './serve-harness.js';

const metric = (body: string, event: string): number =>
  Number(new RegExp(`^podipam_history_events_total\\{event="${event}"\\} (\\d+)`, 'm').exec(body)?.[1] ?? NaN);

test(
  "serve history: the plugin's ADD and DEL become holds with exact times in DATA_DIR/history.db; metrics and /healthz show the follower",
  { timeout: 90_000 },
  async () => {
    const home = makeTempDir('serve-history');
    const s = await startServe({ dataDir: home.path });
    const file = join(s.dataDir, 'history.db');
    const t: number[] = [];
    try {
      assert.match(s.stdout(), new RegExp(`history on \\(${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}, retention 90d\\)`));
      assert.ok(existsSync(file), 'the history file next to the SQLite datastore');
      const config = { cniVersion: '1.0.0', name: 'net', type: 'bridge', ipam: { type: 'podipam', datastore: s.datastore, nodeName: 'node-1' } };
      const call = { containerId: 'hist1', ifname: 'eth0', args: 'IgnoreUnknown=1;K8S_POD_NAMESPACE=web;K8S_POD_NAME=web-0;K8S_POD_UID=u1', config };
      t.push(Date.now());
      const add = await runPlugin(PODIPAM_BIN, { command: 'ADD', ...call });
      t.push(Date.now());
      assert.equal(add.code, 0, add.stdout + add.stderr);
      await waitFor('two assignments on /metrics', 10_000, async () =>
        metric((await api(s.url, 'GET', '/metrics')).body as string, 'assigned') === 2 ? true : undefined,
      );
      t.push(Date.now());
      const del = await runPlugin(PODIPAM_BIN, { command: 'DEL', ...call });
      t.push(Date.now());
      assert.equal(del.code, 0, del.stdout + del.stderr);
      const body = await waitFor('two releases on /metrics', 10_000, async () => {
        const b = (await api(s.url, 'GET', '/metrics')).body as string;
        return metric(b, 'released') === 2 ? b : undefined;
      });
      assert.match(body, /^podipam_history_position_revision [1-9]\d*$/m);
      assert.equal(metric(body, 'gap'), 1, 'one gap: before history began');
      const health = (await api(s.url, 'GET', '/healthz')).body;
      assert.equal(health.loops.history.running, true);
      assert.equal(health.loops.history.file, file);
    } finally {
      assert.equal(await s.stop(), 0, 'SIGTERM stops serve (and its follower) with exit code 0');
    }
    const db = openHistoryDb(file, { readonly: true });
    try {
      const holds = db.holdsOfPod('web', 'web-0');
      assert.equal(holds.length, 2, JSON.stringify(holds));
      for (const h of holds) {
        assert.equal(h.handle, 'net:hist1:eth0');
        assert.deepEqual([h.pod?.uid, h.node, h.containerId, h.ifname], ['u1', 'node-1', 'hist1', 'eth0']);
        assert.equal(h.from.earliest, undefined, 'exact: the plugin stamped its transaction');
        assert.ok(h.from.at >= t[0]! && h.from.at <= t[1]!, `assigned during the ADD: ${h.from.at} in [${t[0]}, ${t[1]}]`);
        assert.ok(
          h.until && h.until.earliest === undefined && h.until.at >= t[2]! && h.until.at <= t[3]!,
          `released during the DEL: ${JSON.stringify(h.until)}`,
        );
        assert.equal(h.until?.why, 'del');
      }
    } finally {
      db.close();
    }

    const off = await startServe({ args: ['--no-history'] });
    try {
      assert.match(off.stdout(), /history off/);
      assert.equal(existsSync(join(off.dataDir, 'history.db')), false);
    } finally {
      await off.stop();
    }
    const bad = await runCli(['serve', '--listen', '127.0.0.1:0', '--data-dir', s.dataDir, '--history-retention', '3 weeks']);
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, /invalid --history-retention "3 weeks": expected a duration/);
    home.remove();
  },
);
