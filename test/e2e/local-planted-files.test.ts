/**
 * Files planted in the local back end's network directory, through the real
 * binary. host-local follows a `last_reserved_ip.0` symlink and overwrites its target, reads an
 * address-named link to /dev/zero until it aborts, hangs on a FIFO and waits forever for a
 * held lock; podipam refuses every non-regular entry with code 5 naming it, and gives up on the
 * lock with code 11 after PODIPAM_LOCK_TIMEOUT_MS (default 10 s).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PODIPAM_BIN, type PluginCall, type PluginRun, startPlugin } from '../helpers/plugin.js';
import { withTempDir } from '../helpers/tmp.js';

const NET = 'plantnet';
const conf = (dataDir: string, cniVersion = '1.0.0') => ({ cniVersion, name: NET, ipam: { type: 'podipam', dataDir, ranges: [[{ subnet: '10.60.0.0/24' }]] } });
const call = (dataDir: string, command: string, more: Partial<PluginCall> = {}): PluginCall => ({
  command,
  containerId: 'c1',
  ifname: 'eth0',
  config: conf(dataDir),
  ...more,
});

/** Runs the plugin, killing it after `limitMs` (a hang must fail the test, not stall it). */
async function runBounded(c: PluginCall, limitMs = 8000): Promise<PluginRun & { killed: boolean }> {
  const p = startPlugin(PODIPAM_BIN, c);
  let killed = false;
  const timer = setTimeout(() => {
    killed = true;
    p.child.kill('SIGKILL');
  }, limitMs);
  try {
    return { ...(await p.done), killed };
  } finally {
    clearTimeout(timer);
  }
}

/** The run answered the CNI error JSON with `code` and exited 1, nothing on stderr. */
function cniError(r: PluginRun & { killed: boolean }, code: number): string {
  assert.equal(r.killed, false, `the plugin did not return within the limit (stdout ${JSON.stringify(r.stdout)})`);
  assert.equal(r.signal, null, `killed by ${r.signal}`);
  assert.equal(r.stderr, '', `stderr: ${r.stderr}`);
  assert.equal(r.code, 1, `exit ${r.code}, stdout ${r.stdout}`);
  const e = JSON.parse(r.stdout) as { code: number; msg: string };
  assert.equal(e.code, code, r.stdout);
  return e.msg;
}

const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

test('a last_reserved_ip.0 symlink is refused (code 5 naming it), its target left untouched', () =>
  withTempDir('plant-last', async (root) => {
    const dataDir = join(root, 'data');
    const dir = join(dataDir, NET);
    mkdirSync(dir, { recursive: true });
    const victim = join(root, 'victim');
    writeFileSync(victim, 'precious');
    symlinkSync(victim, join(dir, 'last_reserved_ip.0'));
    const msg = cniError(await runBounded(call(dataDir, 'ADD')), 5);
    assert.match(msg, new RegExp(`${esc(join(dir, 'last_reserved_ip.0'))}: it is a symbolic link`));
    assert.equal(readFileSync(victim, 'utf8'), 'precious');
    assert.deepEqual(readdirSync(dir).sort(), ['last_reserved_ip.0', 'lock']);
    assert.ok(lstatSync(join(dir, 'last_reserved_ip.0')).isSymbolicLink());
  }));

test('an address-named symlink to /dev/zero: code 5 naming it, no abort', () =>
  withTempDir('plant-zero', async (root) => {
    const dir = join(root, NET);
    mkdirSync(dir, { recursive: true });
    symlinkSync('/dev/zero', join(dir, '10.60.0.2'));
    const msg = cniError(await runBounded(call(root, 'ADD')), 5);
    assert.match(msg, new RegExp(`refusing ${esc(join(dir, '10.60.0.2'))}: it is a symbolic link, not a regular file`));
    assert.deepEqual(readdirSync(dir).sort(), ['10.60.0.2', 'lock']);
  }));

test('a FIFO named like an address, and a FIFO as the lock file: code 5 naming it, no hang', () =>
  withTempDir('plant-fifo', async (root) => {
    const dir = join(root, NET);
    mkdirSync(dir, { recursive: true });
    const fifo = join(dir, '10.60.0.2');
    assert.equal(spawnSync('mkfifo', [fifo]).status, 0, 'mkfifo');
    let msg = cniError(await runBounded(call(root, 'ADD')), 5);
    assert.match(msg, new RegExp(`refusing ${esc(fifo)}: it is a FIFO`));
    // CHECK and GC refuse it too; nothing is removed.
    msg = cniError(await runBounded(call(root, 'GC', { config: { ...conf(root, '1.1.0'), 'cni.dev/valid-attachments': [] } })), 5);
    assert.match(msg, new RegExp(esc(fifo)));
    assert.ok(existsSync(fifo));

    const dir2 = join(root, 'other', NET);
    mkdirSync(dir2, { recursive: true });
    assert.equal(spawnSync('mkfifo', [join(dir2, 'lock')]).status, 0, 'mkfifo');
    msg = cniError(await runBounded(call(join(root, 'other'), 'ADD')), 5);
    assert.match(msg, new RegExp(`refusing ${esc(join(dir2, 'lock'))}: it is a FIFO`));
  }));

test('DEL with a planted entry still releases the attachment, then reports the entry (code 5)', () =>
  withTempDir('plant-del', async (root) => {
    const dir = join(root, NET);
    const add = await runBounded(call(root, 'ADD'));
    assert.equal(add.code, 0, add.stdout);
    symlinkSync('/dev/zero', join(dir, '10.60.0.9'));
    const msg = cniError(await runBounded(call(root, 'DEL')), 5);
    assert.match(msg, new RegExp(esc(join(dir, '10.60.0.9'))));
    assert.deepEqual(readdirSync(dir).sort(), ['10.60.0.9', 'last_reserved_ip.0', 'lock']);
  }));

test('a held lock: ADD gives up with code 11 after PODIPAM_LOCK_TIMEOUT_MS, naming the lock file', () =>
  withTempDir('plant-lock', async (root) => {
    const dir = join(root, NET);
    mkdirSync(dir, { recursive: true });
    const lock = join(dir, 'lock');
    writeFileSync(lock, '', { mode: 0o750 });
    // util-linux flock(1) holds flock(LOCK_EX) on the file, as a stuck plugin would.
    // Its own process group, so the sleep it runs (which inherits the lock) dies with it.
    const holder = spawn('flock', ['--exclusive', lock, 'sleep', '60'], { stdio: 'ignore', detached: true });
    const exited = new Promise((r) => holder.once('exit', r));
    try {
      // Wait (bounded) until the holder has the lock: a non-blocking try then fails.
      let held = false;
      for (let i = 0; i < 200 && !held; i++) {
        held = spawnSync('flock', ['--nonblock', lock, 'true']).status !== 0;
        if (!held) await new Promise((r) => setTimeout(r, 10));
      }
      assert.ok(held, 'the holder never took the lock');
      const r = await runBounded(call(root, 'ADD', { env: { PODIPAM_LOCK_TIMEOUT_MS: '700' } }));
      const msg = cniError(r, 11);
      assert.match(msg, new RegExp(`timed out after 700 ms waiting for the lock on ${esc(lock)}`));
      assert.ok(r.ms >= 700 && r.ms < 5000, `answered after ${Math.round(r.ms)} ms`);
      assert.deepEqual(readdirSync(dir), ['lock']);
      // A bad value is named (code 4).
      const bad = cniError(await runBounded(call(root, 'ADD', { env: { PODIPAM_LOCK_TIMEOUT_MS: '10s' } })), 4);
      assert.match(bad, /PODIPAM_LOCK_TIMEOUT_MS must be a whole number of milliseconds from 0 to 3600000: got "10s"/);
    } finally {
      process.kill(-holder.pid!, 'SIGKILL');
    }
    await exited;
    // Released: the next ADD goes through at once.
    const ok = await runBounded(call(root, 'ADD'));
    assert.equal(ok.code, 0, ok.stdout);
  }));
