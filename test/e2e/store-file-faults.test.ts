/**
 * Faults of the files under the plugin, through the real binary (root: it mounts a tmpfs):
 * - a read-only file system (`mount -o remount,ro`) under the local data directory and under
 *   the SQLite file: ADD and DEL fail with code 5 naming the path and saying read-only, write
 *   nothing (the directory and the store are unchanged), and work again once it is remounted
 *   read-write;
 * - a corrupted SQLite file (random bytes over the header, over the pages after it, or the
 *   file cut short): every verb and `ipam check` fail with one clear line naming the file —
 *   code 5 for the plugin, no stack trace — and work again once the file is restored.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { mulberry32 } from '../../src/util/mulberry32.js';
import { PODIPAM_BIN, clusterCall, runCliSync, runPluginSync, type PluginCall } from '../helpers/plugin.js';
import { makeTempDir, type TempDir } from '../helpers/tmp.js';

let tmp: TempDir;
let mnt: string;
let mounted = false;

before(() => {
  tmp = makeTempDir('file-faults');
  mnt = join(tmp.path, 'mnt');
  mkdirSync(mnt);
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=16m,mode=0755', `podipam-ro-${process.pid}`, mnt], { encoding: 'utf8' });
  assert.equal(r.status, 0, `cannot mount a tmpfs (this test needs root): ${r.stderr}`);
  mounted = true;
});
after(() => {
  if (mounted) spawnSync('umount', [mnt]);
  tmp?.remove();
});

function remount(mode: 'ro' | 'rw'): void {
  const r = spawnSync('mount', ['-o', `remount,${mode}`, mnt], { encoding: 'utf8' });
  assert.equal(r.status, 0, `mount -o remount,${mode} ${mnt}: ${r.stderr}`);
}

/** Every file under `dir` with its size and content: what "nothing was written" compares. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(dir, { recursive: true }) as string[]) {
    const p = join(dir, name);
    const st = statSync(p);
    out[name] = st.isFile() ? `${st.size}:${readFileSync(p).toString('base64')}` : 'dir';
  }
  return out;
}

function cniError(r: { code: number | null; stdout: string; stderr: string }, what: string): { code: number; msg: string } {
  assert.equal(r.code, 1, `${what}: ${r.stdout}${r.stderr}`);
  assert.equal(r.stderr, '', `${what}: nothing on stderr (no stack trace)`);
  return JSON.parse(r.stdout) as { code: number; msg: string };
}

test('read-only file system under the local data directory: code 5 naming the path, nothing written, works again after remount rw', () => {
  const dataDir = join(mnt, 'local');
  const dir = join(dataDir, 'ronet');
  const call = (command: string, id: string): PluginCall => ({
    command,
    containerId: id,
    ifname: 'eth0',
    config: { cniVersion: '1.0.0', name: 'ronet', ipam: { type: 'podipam', dataDir, ranges: [[{ subnet: '10.62.0.0/24' }]] } },
  });
  const first = runPluginSync(PODIPAM_BIN, call('ADD', 'l1'));
  assert.equal(first.code, 0, first.stdout);
  const before = snapshot(dir);
  remount('ro');
  try {
    const add = cniError(runPluginSync(PODIPAM_BIN, call('ADD', 'l2')), 'ADD on a read-only fs');
    assert.equal(add.code, 5, add.msg);
    assert.ok(add.msg.includes(dir), `names the path: ${add.msg}`);
    assert.match(add.msg, /EROFS|read-only/);
    const del = cniError(runPluginSync(PODIPAM_BIN, call('DEL', 'l1')), 'DEL on a read-only fs');
    assert.equal(del.code, 5, del.msg);
    assert.ok(del.msg.includes(join(dir, '10.62.0.2')), `names the file: ${del.msg}`);
    const check = runPluginSync(PODIPAM_BIN, call('CHECK', 'l1'));
    assert.equal(check.code, 0, `CHECK only reads: ${check.stdout}`);
    assert.deepEqual(snapshot(dir), before, 'nothing was written');
  } finally {
    remount('rw');
  }
  const add = runPluginSync(PODIPAM_BIN, call('ADD', 'l2'));
  assert.equal(add.code, 0, add.stdout);
  assert.equal(JSON.parse(add.stdout).ips[0].address, '10.62.0.3/24');
  assert.equal(runPluginSync(PODIPAM_BIN, call('DEL', 'l1')).code, 0);
  assert.deepEqual(readdirSync(dir).sort(), ['10.62.0.3', 'last_reserved_ip.0', 'lock']);
});

test('read-only file system under the SQLite file: code 5 naming the file and "read-only", nothing written, works again after remount rw', () => {
  const db = `sqlite:${join(mnt, 'sqlite', 'ipam.db')}`;
  const cache = join(tmp.path, 'cache-ro'); // off the tmpfs: the fault is the store's alone
  assert.equal(runCliSync(db, ['pool', 'create', 'p', '--cidr', '10.63.0.0/16']).code, 0);
  const call = (command: string, id: string) => clusterCall('rosql', db, cache, command, id, 'n1');
  assert.equal(runPluginSync(PODIPAM_BIN, call('ADD', 's1')).code, 0);
  const before = snapshot(join(mnt, 'sqlite'));
  remount('ro');
  try {
    for (const [command, id] of [
      ['ADD', 's2'],
      ['DEL', 's1'],
    ] as const) {
      const e = cniError(runPluginSync(PODIPAM_BIN, call(command, id)), `${command} on a read-only fs`);
      assert.equal(e.code, 5, e.msg);
      assert.ok(e.msg.includes(join(mnt, 'sqlite', 'ipam.db')), `names the file: ${e.msg}`);
      assert.match(e.msg, /read-only file system/, e.msg);
    }
    const check = runCliSync(db, ['ipam', 'check']);
    assert.notEqual(check.code, 0);
    assert.match(check.stderr, /^podipam: error: datastore sqlite:.*ipam\.db: .*read-only file system/m);
    assert.doesNotMatch(check.stderr, /^\s+at /m);
    assert.deepEqual(snapshot(join(mnt, 'sqlite')), before, 'nothing was written');
  } finally {
    remount('rw');
  }
  const clean = runCliSync(db, ['ipam', 'check', '--json']);
  assert.equal(clean.code, 0, clean.stdout + clean.stderr);
  assert.equal(runPluginSync(PODIPAM_BIN, call('ADD', 's2')).code, 0);
  assert.equal(runPluginSync(PODIPAM_BIN, call('DEL', 's1')).code, 0);
  const shown = JSON.parse(runCliSync(db, ['ipam', 'show', '--json']).stdout) as { items: { allocated: number }[] };
  assert.equal(shown.items[0]!.allocated, 1, 's2 only');
});

test('corrupted SQLite file: every verb and ipam check fail with one line naming the file, and work again once it is restored', () => {
  const dir = join(tmp.path, 'corrupt');
  mkdirSync(dir);
  const file = join(dir, 'ipam.db');
  const db = `sqlite:${file}`;
  const cache = join(dir, 'cache');
  assert.equal(runCliSync(db, ['pool', 'create', 'p', '--cidr', '10.64.0.0/16']).code, 0);
  const call = (command: string, id: string) => clusterCall('corrupt', db, cache, command, id, 'n1');
  for (let i = 0; i < 12; i++) assert.equal(runPluginSync(PODIPAM_BIN, call('ADD', `k${i}`)).code, 0);
  // The last connection to close checkpoints the WAL into the main file: a copy of that file is complete.
  assert.equal(runCliSync(db, ['ipam', 'check']).code, 0);
  assert.equal(statSync(`${file}-wal`, { throwIfNoEntry: false })?.size ?? 0, 0, 'no WAL content outside the main file');
  const good = join(dir, 'good.db');
  copyFileSync(file, good);
  const size = statSync(good).size;
  assert.ok(size >= 8192, `the file has pages beyond the header: ${size} bytes`);
  const seed = Number(process.env.PODIPAM_FUZZ_SEED ?? Date.now() % 2 ** 31);
  console.log(`corrupted SQLite: seed ${seed} (PODIPAM_FUZZ_SEED=${seed} replays)`);
  const rand = mulberry32(seed);
  const noise = (n: number): Buffer => Buffer.from(Array.from({ length: n }, () => Math.floor(rand() * 256)));
  // `noticed`: damage SQLite must detect. Random runs may all land in space no record uses (free
  // bytes of a page): then a clean answer is right, and only "no crash, no stack" is asserted.
  const damages: [string, () => void, boolean][] = [
    ['random bytes over the header', () => overwrite(file, 0, noise(4096)), true],
    ['random bytes over the pages after the first', () => overwrite(file, 4096, noise(size - 4096)), true],
    [
      'random 512-byte runs at random offsets',
      () => {
        for (let k = 0; k < 8; k++) overwrite(file, 1024 + Math.floor(rand() * (size - 1536)), noise(512));
      },
      false,
    ],
    ['the file cut to half its size', () => truncateSync(file, Math.floor(size / 2)), true],
  ];
  for (const [what, damage, noticed] of damages) {
    copyFileSync(good, file);
    rmSync(`${file}-wal`, { force: true });
    rmSync(`${file}-shm`, { force: true });
    damage();
    let failures = 0;
    for (const [command, id] of [
      ['ADD', 'new'],
      ['DEL', 'k3'],
      ['CHECK', 'k4'],
    ] as const) {
      const r = runPluginSync(PODIPAM_BIN, call(command, id));
      if (r.code === 0) continue; // damage a verb never reads (a free page) is not an error
      failures++;
      const e = cniError(r, `${command} after ${what}`);
      // SQLite has no checksums: a run landing inside a record's bytes (a key no longer under
      // "pools/", say) is data it cannot tell from real, and the verb answers as the data says
      // (seed 936617010: "no pool exists", code 7). Such damage gets a well-formed CNI error,
      // checked above; damage SQLite must notice gets the datastore's code.
      if (!noticed && e.code !== 5 && e.code !== 102) continue;
      assert.ok(e.code === 5 || e.code === 102, `${command} after ${what}: code 5 (or 102 for CHECK of a record it cannot find): ${r.stdout}`);
      if (e.code === 5) {
        assert.ok(e.msg.includes(file), `${command} after ${what}: names the file: ${e.msg}`);
        assert.match(e.msg, /SQLITE_(NOTADB|CORRUPT)|corrupt|malformed|not a database/i);
      }
    }
    const check = runCliSync(db, ['ipam', 'check']);
    if (noticed) assert.notEqual(check.code, 0, `ipam check after ${what} finds something: ${check.stdout}${check.stderr}`);
    assert.doesNotMatch(check.stderr, /^\s+at /m, 'no stack trace');
    // Damage SQLite cannot tell from data may be read as data: the check then reports what that
    // data shows (seed 1287878181: "found 12 leak(s)…" for handles it can no longer match), an
    // answer, not an error. Anything else it prints is an error naming the file.
    const report = /^podipam: ipam check found \d+ leak\(s\)/m.test(check.stderr);
    if (check.stderr !== '' && !(report && !noticed)) assert.ok(check.stderr.includes(file), `names the file: ${check.stderr}`);
    if (noticed) assert.ok(failures > 0 || check.code !== 0, `${what} was noticed`);
  }
  copyFileSync(good, file);
  rmSync(`${file}-wal`, { force: true });
  rmSync(`${file}-shm`, { force: true });
  assert.equal(runCliSync(db, ['ipam', 'check']).code, 0, 'the restored file checks clean');
  assert.equal(runPluginSync(PODIPAM_BIN, call('ADD', 'after')).code, 0);
});

function overwrite(file: string, at: number, bytes: Buffer): void {
  const fd = openSync(file, 'r+');
  try {
    writeSync(fd, bytes, 0, bytes.length, at);
  } finally {
    closeSync(fd);
  }
}
