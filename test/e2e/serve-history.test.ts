/**
 * The history's readers on a running `bin/podipam serve` (history on, its follower filling
 * DATA_DIR/history.db from the SQLite datastore): an address allocated, released through the API
 * and reused by another handle → GET /api/v1/history and `podipam ipam history` (opening serve's
 * live file read-only) give both holders in order with the times the calls happened, `at` inside,
 * between and before them, the release stamped "release"; the export; `--no-history` → 503.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { api, runCli, startServe, waitFor } from './serve-harness.js';

const iso = (t: number): string => new Date(t).toISOString();
const q = (v: string): string => encodeURIComponent(v);

test('serve history: an address reused by another handle, through the API and the CLI on the live file', { timeout: 120_000 }, async () => {
  const s = await startServe();
  try {
    assert.match(s.stdout(), /history on \(/, s.stdout());
    const ip = '10.244.7.9';
    const t0 = Date.now();
    const first = await api(s.url, 'POST', '/api/v1/allocations', { node: 'node-a', containerId: 'first', ips: [ip] });
    assert.equal(first.status, 201, JSON.stringify(first.body));
    const t1 = Date.now();
    await sleep(60);
    const r1 = Date.now();
    assert.equal((await api(s.url, 'DELETE', `/api/v1/allocations/${q(first.body.handle)}`)).status, 200);
    const r2 = Date.now();
    await sleep(60);
    const t2 = Date.now();
    const second = await api(s.url, 'POST', '/api/v1/allocations', { node: 'node-a', containerId: 'second', ips: [ip] });
    assert.equal(second.status, 201, JSON.stringify(second.body));
    const t3 = Date.now();

    const h = await waitFor('two holds of the address in the history', 10_000, async () => {
      const r = await api(s.url, 'GET', `/api/v1/history?address=${ip}`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body.items.length >= 2 ? r.body : undefined;
    });
    assert.deepEqual(
      h.items.map((x: any) => [x.handle, x.node, x.why]),
      [
        [first.body.handle, 'node-a', 'release'],
        [second.body.handle, 'node-a', null],
      ],
    );
    const [a, b] = h.items;
    const within = (t: any, lo: number, hi: number, what: string): void => {
      assert.equal(t.exact, true, `${what} is exact: ${JSON.stringify(t)}`);
      const v = Date.parse(t.at);
      assert.ok(lo <= v && v <= hi, `${what} ${t.at} within ${iso(lo)}..${iso(hi)}`);
    };
    within(a.from, t0, t1, 'the first assignment');
    within(a.until, r1, r2, 'the release');
    within(b.from, t2, t3, 'the reuse');
    assert.equal(b.until, null);

    const at = async (t: number): Promise<any> => (await api(s.url, 'GET', `/api/v1/history?address=${ip}&at=${q(iso(t))}`)).body;
    assert.equal((await at(t1 + 20)).holder.handle, first.body.handle, 'inside the first hold');
    assert.deepEqual(await at(r2 + 20), { address: ip, at: iso(r2 + 20), known: true, holder: null }, 'between the holds');
    assert.equal((await at(t3 + 1)).holder.handle, second.body.handle, 'inside the second hold');
    const before = await at(t0 - 60_000);
    assert.ok(before.known === false || before.holder === null, `before both: none or unknown, never a holder: ${JSON.stringify(before)}`);

    // The CLI reads serve's live file (read-only, while serve writes it).
    const file = join(s.dataDir, 'history.db');
    const cli = await runCli(['ipam', 'history', ip, '--history-db', file, '-o', 'json']);
    assert.equal(cli.code, 0, cli.stderr);
    assert.deepEqual(JSON.parse(cli.stdout).items, h.items);
    const between = await runCli(['ipam', 'history', ip, '--at', iso(r2 + 20)], { PODIPAM_DATA_DIR: s.dataDir });
    assert.equal(between.code, 3, between.stdout + between.stderr);
    assert.equal(between.stdout, `${ip} at ${iso(r2 + 20)}: none (no pod held it)\n`);
    const inside = await runCli(['ipam', 'history', ip, '--at', iso(t1 + 20), '--history-db', file]);
    assert.equal(inside.code, 0, inside.stderr);
    assert.equal(
      inside.stdout,
      `${ip} at ${iso(t1 + 20)}: handle "${first.body.handle}" (no pod named), container first, interface eth0, network podipam, on node node-a, pool default-ipv4; from ${a.from.at} until ${a.until.at} (released: release)\n`,
    );

    // The export, as JSON Lines: the three events of the address in time order.
    const x = await fetch(`${s.url}/api/v1/history?since=${q(iso(t0 - 1))}&format=jsonl`, { signal: AbortSignal.timeout(10_000) });
    assert.equal(x.status, 200);
    assert.match(x.headers.get('content-type') ?? '', /^application\/x-ndjson/);
    const recs = (await x.text())
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l))
      .filter((r) => r.address === ip);
    assert.deepEqual(
      recs.map((r) => `${r.event}:${r.handle}`),
      [`assigned:${first.body.handle}`, `released:${first.body.handle}`, `assigned:${second.body.handle}`],
    );
    const cliExport = await runCli(['ipam', 'history', '--since', iso(t0 - 1), '-o', 'jsonl', '--history-db', file]);
    assert.deepEqual(
      cliExport.stdout
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l))
        .filter((r) => r.address === ip),
      recs,
    );
  } finally {
    await s.stop();
  }

  const off = await startServe({ args: ['--no-history'] });
  try {
    const r = await api(off.url, 'GET', '/api/v1/history?address=10.244.7.9');
    assert.equal(r.status, 503);
    assert.equal(r.body.error.code, 'history_off');
    const cli = await runCli(['ipam', 'history', '10.244.7.9'], { PODIPAM_DATA_DIR: off.dataDir });
    assert.equal(cli.code, 1);
    assert.match(cli.stderr, /^podipam: error: no history at .*history\.db: is podipam serve running with history on\?/);
  } finally {
    await off.stop();
  }
});
