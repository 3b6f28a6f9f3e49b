import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, lstatSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { parseAddr } from '../ip/index.js';
import { DiskStore } from './disk-store.js';
import { reserveAddon } from './native-reserve.js';

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
function same(plant: (dir: string) => void, reserves: readonly [string, string][]): { answers: boolean[]; error?: string; files: Record<string, string> } {
  const root = mkdtempSync(join(tmpdir(), 'podipam-native-reserve-'));
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
        error = (e as Error).message.replaceAll(dir, '<dir>');
      } finally {
        s.close();
      }
      return { answers, ...(error === undefined ? {} : { error }), files: snapshot(dir) };
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
    assert.match(r.error ?? '', new RegExp(`^refusing <dir>/last_reserved_ip\\.0: it is ${what}`), what);
    assert.deepEqual(Object.keys(r.files), ['last_reserved_ip.0', 'lock'], `${what}: no address file left`);
  }
});

test('native and node:fs writers: a temporary file that cannot be created fails naming it, with node:fs’s message', () => {
  const r = same((dir) => mkdirSync(join(dir, '.podipam-reserve.tmp')), [['c1', '10.0.0.2']]);
  assert.equal(r.error, "cannot create <dir>/.podipam-reserve.tmp: EEXIST: file already exists, open '<dir>/.podipam-reserve.tmp'");
  assert.deepEqual(Object.keys(r.files), ['.podipam-reserve.tmp', 'lock']);
});
