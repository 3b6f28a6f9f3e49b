/**
 * A full disk, on a small tmpfs this test mounts (root): ADD fails with
 * code 5 naming the file it could not write, and leaves neither the temporary file nor an
 * address file behind; once there is room again the same ADD succeeds.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, unlinkSync } from 'node:fs';
import { fillFileSystem } from '../helpers/fill-file-system.js';
import { join } from 'node:path';
import { PODIPAM_BIN, runPluginSync } from '../helpers/plugin.js';
import { makeTempDir, type TempDir } from '../helpers/tmp.js';

let tmp: TempDir;
let mnt: string;
let mounted = false;

before(() => {
  tmp = makeTempDir('disk-full');
  mnt = join(tmp.path, 'mnt');
  mkdirSync(mnt);
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64k,mode=0755', `podipam-full-${process.pid}`, mnt], { encoding: 'utf8' });
  assert.equal(r.status, 0, `cannot mount a tmpfs (this test needs root): ${r.stderr}`);
  mounted = true;
});

after(() => {
  if (mounted) spawnSync('umount', [mnt]);
  tmp?.remove();
});

test('disk full: code 5 naming the path, no .podipam-reserve.tmp or address file left', () => {
  const dataDir = join(mnt, 'data');
  const dir = join(dataDir, 'fullnet');
  const add = {
    command: 'ADD',
    containerId: 'c1',
    ifname: 'eth0',
    config: { cniVersion: '1.0.0', name: 'fullnet', ipam: { type: 'podipam', dataDir, ranges: [[{ subnet: '10.61.0.0/24' }]] } },
  };
  mkdirSync(dir, { recursive: true });
  fillFileSystem(join(mnt, 'filler'));

  const r = runPluginSync(PODIPAM_BIN, add);
  assert.equal(r.code, 1, r.stdout);
  assert.equal(r.stderr, '');
  const e = JSON.parse(r.stdout) as { code: number; msg: string };
  assert.equal(e.code, 5, r.stdout);
  assert.ok(e.msg.includes(join(dir, '.podipam-reserve.tmp')), `the message names the file: ${e.msg}`);
  assert.match(e.msg, /ENOSPC/);
  assert.deepEqual(readdirSync(dir).sort(), ['lock'], 'nothing but the lock file is left');

  unlinkSync(join(mnt, 'filler'));
  const ok = runPluginSync(PODIPAM_BIN, add);
  assert.equal(ok.code, 0, ok.stdout);
  assert.equal(JSON.parse(ok.stdout).ips[0].address, '10.61.0.2/24');
});
