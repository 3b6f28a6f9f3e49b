/**
 * What `npm start` runs — `bin/podipam serve` on a fresh data directory with its defaults —
 * reaches a page that answers, creates the default pools once, prints a CNI config that the
 * real plugin accepts, and stops cleanly on SIGTERM.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { PODIPAM_BIN, runPlugin, stdoutJson } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';
import { api, startServe, waitFor } from './serve-harness.js';

test('serve start: a fresh data dir gets default pools, a page that answers and a working CNI config', { timeout: 60_000 }, async () => {
  const home = makeTempDir('serve-start');
  const dataDir = join(home.path, 'podipam');
  try {
    // As `npm start`: no --data-dir, no --datastore — the data dir comes from the environment.
    const s = await startServe({ rawArgs: true, args: ['--listen', '127.0.0.1:0'], env: { PODIPAM_DATA_DIR: dataDir, NODENAME: 'node-1' }, dataDir });
    try {
      assert.ok(existsSync(join(dataDir, 'podipam.db')), 'the SQLite datastore lives in the data dir');
      assert.match(s.stdout(), /created pools default-ipv4, default-ipv6/);
      const page = await api(s.url, 'GET', '/');
      assert.equal(page.status, 200);
      assert.match(page.headers.get('content-type') ?? '', /text\/html/);
      assert.match(page.body, /<title>podipam<\/title>/);
      // The page names its bundled, content-hashed script and stylesheet; both answer.
      const script = /<script src="(\/assets\/app-[A-Za-z0-9]+\.js)">/.exec(page.body);
      const style = /<link rel="stylesheet" href="(\/assets\/style-[A-Za-z0-9]+\.css)">/.exec(page.body);
      assert.ok(script && style, page.body);
      assert.equal((await api(s.url, 'GET', script[1] as string)).status, 200);
      assert.equal((await api(s.url, 'GET', style[1] as string)).status, 200);
      assert.equal((await api(s.url, 'GET', '/healthz')).body.status, 'ok');
      const pools = (await api(s.url, 'GET', '/api/v1/pools')).body.items;
      assert.deepEqual(
        pools.map((p: any) => [p.name, p.cidr, p.blockSize]),
        [
          ['default-ipv4', '10.244.0.0/16', 26],
          ['default-ipv6', 'fd00:10:244::/56', 122],
        ],
      );

      // The printed conflist: ptp + podipam in cluster mode on this datastore, for node-1.
      const json = /^(\{[\s\S]*?^\})$/m.exec(s.stdout());
      assert.ok(json, s.stdout());
      const conflist = JSON.parse(json[1] as string);
      assert.equal(conflist.plugins[0].type, 'ptp');
      const ipam = conflist.plugins[0].ipam;
      assert.deepEqual(ipam, {
        type: 'podipam',
        datastore: `sqlite:${join(dataDir, 'podipam.db')}`,
        nodeName: 'node-1',
        routes: [{ dst: '0.0.0.0/0' }, { dst: '::/0' }],
      });
      // The real plugin, as ptp would delegate to it, allocates from the server's pools.
      const netconf = { cniVersion: conflist.cniVersion, name: conflist.name, type: 'ptp', ipam };
      const add = await runPlugin(PODIPAM_BIN, { command: 'ADD', containerId: 'npmstart1', ifname: 'eth0', config: netconf });
      assert.equal(add.code, 0, add.stdout + add.stderr);
      const result = stdoutJson(add);
      assert.equal(result.ips.length, 2);
      assert.match(result.ips[0].address, /^10\.244\.\d+\.\d+\/26$/);
      assert.match(result.ips[0].gateway, /^10\.244\.\d+\.\d+$/);
      const held = await waitFor('the plugin allocation in the API', 5000, async () => {
        const r = await api(s.url, 'GET', '/api/v1/allocations?handle=podipam:npmstart1:eth0');
        return r.body.items.length === 2 ? r.body.items : undefined;
      });
      assert.ok(held.every((a: any) => a.node === 'node-1'));
      const del = await runPlugin(PODIPAM_BIN, { command: 'DEL', containerId: 'npmstart1', ifname: 'eth0', config: netconf });
      assert.equal(del.code, 0, del.stdout + del.stderr);
    } finally {
      assert.equal(await s.stop(), 0, 'SIGTERM stops serve with exit code 0');
    }

    // A second start on the same data dir keeps the pools and creates none.
    const again = await startServe({ rawArgs: true, args: ['--listen', '127.0.0.1:0'], env: { PODIPAM_DATA_DIR: dataDir }, dataDir });
    try {
      assert.doesNotMatch(again.stdout(), /created pools/);
      assert.equal((await api(again.url, 'GET', '/api/v1/pools')).body.items.length, 2);
      assert.equal((await api(again.url, 'GET', '/api/v1/overview')).body.totals.allocated, 0);
    } finally {
      await again.stop();
    }
  } finally {
    home.remove();
  }
});

test('serve start: a taken port and a bad flag fail with one clear line', { timeout: 30_000 }, async () => {
  const s = await startServe();
  try {
    const port = new URL(s.url).port;
    const d = makeTempDir('serve-port');
    try {
      const { runCli } = await import('./serve-harness.js');
      const busy = await runCli(['serve', '--listen', `127.0.0.1:${port}`, '--data-dir', d.path, '--gc-interval', '0']);
      assert.equal(busy.code, 1);
      assert.match(busy.stderr, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: the address is in use`));
      const bad = await runCli(['serve', '--listen', 'localhost', '--data-dir', d.path]);
      assert.equal(bad.code, 2);
      assert.match(bad.stderr, /invalid --listen "localhost": expected HOST:PORT/);
      const mask = await runCli(['serve', '--node-mask-size', '8', '--data-dir', d.path]);
      assert.equal(mask.code, 2);
      assert.match(mask.stderr, /--node-mask-size 8/);
    } finally {
      d.remove();
    }
  } finally {
    await s.stop();
  }
});
