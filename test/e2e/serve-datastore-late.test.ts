/**
 * `podipam serve` whose datastore does not answer at start (etcd starting beside it in a fresh
 * install, or restarting) waits for it, logging "datastore unavailable, retrying", and serves once
 * it answers — a pod under kubelet is not restarted for it; a SIGTERM while it waits ends it at
 * once, exit 0. A real etcd member, killed before serve starts and restarted on the same ports.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startEtcd, type EtcdMember } from '../helpers/etcd.js';
import { PODIPAM_BIN } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';
import { startServe } from './serve-harness.js';

test(
  'serve waits for a datastore that does not answer at start and serves once it does; SIGTERM while it waits exits 0 at once',
  { timeout: 90_000 },
  async () => {
    const etcd = await startEtcd({ members: 1 });
    const member = etcd.members[0] as EtcdMember;
    const tmp = makeTempDir('serve-late');
    try {
      await member.kill();
      const args = ['--gc-interval', '0', '--no-controller', '--no-default-pools', '--datastore', etcd.url];

      // A SIGTERM while serve waits: it stops waiting and exits 0, nothing started.
      const child = spawn(process.execPath, [PODIPAM_BIN, 'serve', '--listen', '127.0.0.1:0', '--data-dir', join(tmp.path, 'a'), ...args], {
        env: { PATH: process.env.PATH, HOME: tmp.path },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let err = '';
      child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      for (let i = 0; i < 200 && !/datastore unavailable, retrying/.test(err) && child.exitCode === null; i++) await sleep(50);
      assert.match(err, /datastore unavailable, retrying: .*could not be reached/, `serve should wait for the datastore; it exited ${child.exitCode}: ${err}`);
      const t0 = Date.now();
      child.kill('SIGTERM');
      assert.equal(await exited, 0, err);
      assert.ok(Date.now() - t0 < 3000, `exited ${Date.now() - t0} ms after SIGTERM`);
      assert.match(err, /SIGTERM, shutting down before the datastore answered/);

      // The member comes back while serve waits: serve serves, and says it waited.
      const late = sleep(1500).then(() => member.restart());
      const serve = await startServe({ dataDir: join(tmp.path, 'b'), args });
      try {
        await late;
        assert.match(serve.stderr(), /datastore unavailable, retrying/);
        assert.match(serve.stderr(), /datastore answers/);
        const r = await fetch(`${serve.url}/healthz`);
        assert.equal(r.status, 200, await r.text());
      } finally {
        await serve.stop();
      }
    } finally {
      await etcd.stop();
      tmp.remove();
    }
  },
);
