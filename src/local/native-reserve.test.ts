import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, lstatSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { parseAddr } from '../ip/index.js';
import { DiskStore } from './disk-store.js';
import { reserveAddon } from './native-reserve.js';
import { fillFileSystem } from '../../test/helpers/fill-file-system.js';

/** What a directory holds: each entry's kind and, for files, content. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of readdirSync(dir).sort()) {
    const st = lstatSync(join(dir, name));
    out[name] = st.isSymbolicLink() ? 'symlink' : st.isDirectory() ? 'directory' : st.isFIFO() ? 'fifo' : `file ${readFileSync(join(dir, name), 'utf8')}`;
  }
  return out;
}

/**
 * Runs `reserves` on a fresh directory set up by `plant`, once with the native writer and once
 * with node:fs, and asserts both end the same: the same answers or the same error message
 * (directory paths aside) and the same directory. Returns the native run's outcome.
 */
function same(
  plant: (dir: string) => void,
  reserves: readonly [string, string][],
  on = tmpdir(),
): { answers: boolean[]; error?: string; files: Record<string, string>; victim?: string } {
  const root = mkdtempSync(join(on, 'podipam-native-reserve-'));
  try {
    const runs = [true, false].map((native) => {
      const dir = join(root, native ? 'native' : 'node-fs', 'net');
      const s = DiskStore.open(dir, undefined, { native });
      plant(dir);
      const answers: boolean[] = [];
      let error: string | undefined;
      s.lock();
      try {
        for (const [id, addr] of reserves) answers.push(s.reserve(id, 'eth0', parseAddr(addr), 0));
      } catch (e) {
        error = `${(e as Error).constructor.name}: ${(e as Error).message.replaceAll(dir, '<dir>')}`;
      } finally {
        s.close();
      }
      const victim = join(dir, '..', 'victim');
      return {
        answers,
        ...(error === undefined ? {} : { error }),
        files: snapshot(dir),
        ...(existsSync(victim) ? { victim: readFileSync(victim, 'utf8') } : {}),
      };
    });
    assert.deepEqual(runs[0], runs[1], 'the native writer and node:fs end the same');
    return runs[0]!;
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

test('the reservation writer addon is built and loads (npm install builds it; without it every ADD pays ~10 node:fs calls)', () => {
  assert.notEqual(reserveAddon(), null, 'build/Release/reserve_file.node did not load: run npm install (node-gyp)');
});

test('native and node:fs writers: a reservation, then the same address refused, another recorded as last', () => {
  const r = same(() => {}, [
    ['c1', '10.0.0.2'],
    ['c2', '10.0.0.2'],
    ['c3', 'fd00::3'],
  ]);
  assert.deepEqual(r.answers, [true, false, true]);
  assert.deepEqual(r.files, {
    '10.0.0.2': 'file c1\r\neth0',
    'fd00::3': 'file c3\r\neth0',
    'last_reserved_ip.0': 'file fd00::3',
    lock: 'file ',
  });
});

test('native and node:fs writers: a longer old last_reserved_ip is cut; a killed writer’s temporary file is replaced', () => {
  const r = same(
    (dir) => {
      writeFileSync(join(dir, 'last_reserved_ip.0'), 'fd00:ffff:ffff:ffff::ffff');
      writeFileSync(join(dir, '.podipam-reserve.tmp'), 'half');
    },
    [['c1', '10.0.0.9']],
  );
  assert.deepEqual(r.answers, [true]);
  assert.equal(r.files['last_reserved_ip.0'], 'file 10.0.0.9');
  assert.deepEqual(Object.keys(r.files), ['10.0.0.9', 'last_reserved_ip.0', 'lock']);
});

test('native and node:fs writers: a planted last_reserved_ip (link, directory, FIFO) is refused naming it, nothing reserved, its target untouched', () => {
  for (const [what, plant] of [
    ['a symbolic link', (dir: string) => symlinkSync(join(dir, '..', 'victim'), join(dir, 'last_reserved_ip.0'))],
    ['a directory', (dir: string) => mkdirSync(join(dir, 'last_reserved_ip.0'))],
    ['a FIFO', (dir: string) => assert.equal(spawnSync('mkfifo', [join(dir, 'last_reserved_ip.0')]).status, 0, 'mkfifo')],
  ] as const) {
    const r = same(
      (dir) => {
        writeFileSync(join(dir, '..', 'victim'), 'precious');
        plant(dir);
      },
      [['c1', '10.0.0.2']],
    );
    assert.deepEqual(r.answers, []);
    assert.match(r.error ?? '', new RegExp(`^UnsafeFileError: refusing <dir>/last_reserved_ip\\.0: it is ${what}`), what);
    assert.deepEqual(Object.keys(r.files), ['last_reserved_ip.0', 'lock'], `${what}: no address file left`);
    assert.equal(r.victim, 'precious', `${what}: the link's target untouched`);
  }
});

test('native and node:fs writers: non-ASCII text, and strings of 4 KiB and more (one whose 4,096th byte is inside a character), are written whole', () => {
  // The last: copied into the addon's 4 KiB buffer it would stop before the € (4,093 bytes):
  // too long, handed back to node:fs, never written cut.
  for (const id of [`${'c'.repeat(3000)}é€`, 'c'.repeat(5000), `${'c'.repeat(4093)}€`]) {
    const r = same(() => {}, [[id, '10.0.0.2']]);
    assert.deepEqual(r.answers, [true]);
    assert.equal(r.files['10.0.0.2'], `file ${id}\r\neth0`, `${id.length} characters, written whole`);
  }
});

test('native and node:fs writers: a temporary file that cannot be created fails naming it, with node:fs’s message', () => {
  const r = same((dir) => mkdirSync(join(dir, '.podipam-reserve.tmp')), [['c1', '10.0.0.2']]);
  assert.equal(r.error, "FileIoError: cannot create <dir>/.podipam-reserve.tmp: EEXIST: file already exists, open '<dir>/.podipam-reserve.tmp'");
  assert.deepEqual(Object.keys(r.files), ['.podipam-reserve.tmp', 'lock']);
});

test('native and node:fs writers: a full disk fails naming the temporary file with node:fs’s message, nothing left (a 64 KiB tmpfs; root)', () => {
  const mnt = mkdtempSync(join(tmpdir(), 'podipam-native-reserve-full-'));
  const m = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64k,mode=0755', `podipam-reserve-${process.pid}`, mnt], { encoding: 'utf8' });
  assert.equal(m.status, 0, `cannot mount a tmpfs (this test needs root): ${m.stderr}`);
  try {
    const filler = join(mnt, 'filler');
    const r = same(
      () => {
        rmSync(filler, { force: true });
        fillFileSystem(filler, 64);
      },
      [['c1', '10.0.0.2']],
      mnt,
    );
    assert.equal(r.error, 'FileIoError: cannot write <dir>/.podipam-reserve.tmp: ENOSPC: no space left on device, write');
    assert.deepEqual(Object.keys(r.files), ['lock']);
  } finally {
    spawnSync('umount', [mnt]);
    rmSync(mnt, { recursive: true, force: true });
  }
});
