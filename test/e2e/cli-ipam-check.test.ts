/**
 * `podipam pool create` and `podipam ipam show|check` as an operator's cron job sees them
 * (real binary, real SQLite file): odd pool CIDRs refused with exit 2, big IPv6 capacities
 * exact in JSON and readable in tables, `ipam check` exiting 1 when it finds anything.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { cniHandleId } from '../../src/model/handle-id.js';
import { openStore } from '../../src/store/index.js';
import { PODIPAM_BIN, clusterCall, runCliSync, runPlugin } from '../helpers/plugin.js';
import { withTempDir } from '../helpers/tmp.js';
import { handleKey } from './serve-keys.js';

const cli = runCliSync;

test('cli pool create: multicast, loopback, unspecified and IPv4-mapped CIDRs are refused with exit 2', () =>
  withTempDir('cli-pool-odd', (dir) => {
    const db = `sqlite:${join(dir, 'ipam.db')}`;
    const cases: [string, RegExp][] = [
      ['224.0.0.0/4', /multicast 224\.0\.0\.0\/4/],
      ['127.0.0.0/8', /loopback 127\.0\.0\.0\/8/],
      ['0.0.0.0/8', /unspecified/],
      ['ff00::/8', /multicast ff00::\/8/],
      ['::1/128', /loopback ::1\/128/],
      ['::/128', /unspecified/],
      ['::ffff:0:0/96', /IPv4-mapped/],
      ['::ffff:10.0.0.0/104', /IPv4-mapped IPv6 CIDR is not a pool; for IPv4 write 10\.0\.0\.0\/8/],
    ];
    for (const [cidr, message] of cases) {
      const r = cli(db, ['pool', 'create', 'odd', '--cidr', cidr]);
      assert.equal(r.code, 2, `${cidr}: ${r.stdout}${r.stderr}`);
      assert.match(r.stderr, message, cidr);
    }
    const list = cli(db, ['pool', 'list', '--json']);
    assert.deepEqual(JSON.parse(list.stdout), { items: [] }, 'nothing was created');
  }));

test("cli ipam show: an IPv6 pool's capacity is exact in JSON and M*2^N in the table", () =>
  withTempDir('cli-ipam-show', (dir) => {
    const db = `sqlite:${join(dir, 'ipam.db')}`;
    assert.equal(cli(db, ['pool', 'create', 'v6', '--cidr', 'fd00:10:244::/56']).code, 0);
    assert.equal(cli(db, ['pool', 'create', 'v4', '--cidr', '10.244.0.0/16']).code, 0);
    const json = JSON.parse(cli(db, ['ipam', 'show', '--json']).stdout) as { items: { name: string; capacity: unknown }[] };
    assert.deepEqual(json.items.map((p) => [p.name, p.capacity]).sort(), [
      ['v4', 62464],
      ['v6', '4574792530279968800768'],
    ]);
    const table = cli(db, ['ipam', 'show']).stdout;
    assert.match(table, /^v6 +fd00:10:244::\/56 +31\*2\^67 +0 /m); // 2^66 blocks x 62 usable addresses
    assert.match(table, /^v4 +10\.244\.0\.0\/16 +62464 +0 /m);
  }));

test('cli ipam check: exit 0 when clean, 1 when it finds a leak, with and without --json', () =>
  withTempDir('cli-ipam-check', async (dir) => {
    const db = `sqlite:${join(dir, 'ipam.db')}`;
    assert.equal(cli(db, ['pool', 'create', 'p', '--cidr', '10.102.0.0/24']).code, 0);
    const add = await runPlugin(PODIPAM_BIN, clusterCall('net', db, join(dir, 'cache'), 'ADD', 'leaky', 'n1'));
    assert.equal(add.code, 0, add.stdout + add.stderr);
    for (const args of [
      ['ipam', 'check'],
      ['ipam', 'check', '--json'],
    ]) {
      const r = cli(db, args);
      assert.equal(r.code, 0, `${args.join(' ')} on a clean store: ${r.stdout}${r.stderr}`);
    }
    const store = await openStore(db);
    try {
      const h = await store.get(handleKey(cniHandleId('net', 'leaky', 'eth0')));
      assert.ok(h, 'the handle record exists');
      assert.ok((await store.txn([{ key: h.key, rev: h.rev }], [{ type: 'delete', key: h.key }])).succeeded);
    } finally {
      await store.close();
    }
    const text = cli(db, ['ipam', 'check']);
    assert.equal(text.code, 1, text.stdout + text.stderr);
    assert.match(text.stdout, /^leak: 10\.102\.0\.\d+ /m);
    assert.match(text.stdout, /found 1 problem\./);
    const json = cli(db, ['ipam', 'check', '--json']);
    assert.equal(json.code, 1, json.stderr);
    assert.equal(JSON.parse(json.stdout).leaks.length, 1);
  }));
