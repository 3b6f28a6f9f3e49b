/**
 * The plugin reads at most 1 MiB of stdin: a larger input is answered with
 * code 7 naming the limit as soon as the limit is passed — without reading the rest, so time
 * and memory stay small whatever the runtime pipes in.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { PODIPAM_BIN, runPluginSync } from '../helpers/plugin.js';
import { withTempDir } from '../helpers/tmp.js';

/** What the test offers: far more than the limit (a plugin reading it all would take seconds). */
const OFFERED = 256 << 20;
const CHUNK = Buffer.alloc(1 << 20, 'a');

interface Outcome {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** Bytes the plugin's stdin pipe accepted before it went away. */
  readonly accepted: number;
  /** The plugin's peak RSS in KiB (GNU time's %M). */
  readonly maxRssKiB: number;
  readonly ms: number;
}

/**
 * Sets O_NONBLOCK on stdin, then runs the plugin: a runtime that shares a non-blocking pipe
 * takes the plugin's polling path.
 */
const NONBLOCKING = [
  'python3',
  '-c',
  'import fcntl, os, sys; fcntl.fcntl(0, fcntl.F_SETFL, fcntl.fcntl(0, fcntl.F_GETFL) | os.O_NONBLOCK); os.execv(sys.argv[1], sys.argv[1:])',
];

/** Runs the plugin under /usr/bin/time, streaming a valid-looking config padded to OFFERED bytes. */
function pipeHuge(dataDir: string, wrapper: readonly string[] = []): Promise<Outcome> {
  const t0 = performance.now();
  const child = spawn('/usr/bin/time', ['-f', 'podipam-max-rss-kib %M', ...wrapper, PODIPAM_BIN], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      CNI_COMMAND: 'ADD',
      CNI_CONTAINERID: 'c1',
      CNI_IFNAME: 'eth0',
      CNI_NETNS: '/var/run/netns/x',
      CNI_PATH: '/usr/lib/cni',
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  let accepted = 0;
  let gone = false;
  child.stdin.on('error', () => (gone = true));
  const head = Buffer.from(
    JSON.stringify({ cniVersion: '1.0.0', name: 'big', ipam: { type: 'podipam', dataDir, ranges: [[{ subnet: '10.77.0.0/24' }]] } }).slice(0, -1) + ',"pad":"',
  );
  const pump = async () => {
    const write = (b: Buffer) => new Promise<boolean>((resolve) => child.stdin.write(b, (err) => resolve(!err)));
    if (await write(head)) accepted += head.length;
    // Bounded: at most OFFERED bytes, one chunk in flight at a time.
    for (let sent = head.length; sent < OFFERED && !gone; sent += CHUNK.length) {
      if (!(await write(CHUNK))) break;
      accepted += CHUNK.length;
    }
    if (!gone) child.stdin.end('"}');
  };
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    void pump();
    child.on('close', (code) => {
      const m = /podipam-max-rss-kib (\d+)/.exec(stderr);
      resolve({
        code,
        stdout,
        stderr: stderr.replace(/^Command exited with non-zero status \d+\n/m, '').replace(/podipam-max-rss-kib \d+\n?/, ''),
        accepted,
        maxRssKiB: m ? Number(m[1]) : NaN,
        ms: performance.now() - t0,
      });
    });
  });
}

for (const [how, wrapper] of [
  ['blocking', []],
  ['non-blocking', NONBLOCKING],
] as const) {
  test(`stdin above 1 MiB (${how}): code 7 naming the limit, at once, without reading the rest`, async (t) => {
    await withTempDir('stdin-limit', async (dir) => {
      const r = await pipeHuge(dir, wrapper);
      t.diagnostic(`accepted ${r.accepted} bytes, ${Math.round(r.ms)} ms, peak RSS ${r.maxRssKiB} KiB`);
      assert.equal(r.stderr, '', 'nothing on stderr');
      const out = JSON.parse(r.stdout) as { code: number; msg: string };
      assert.equal(out.code, 7, r.stdout);
      assert.match(out.msg, /larger than the limit of 1048576 bytes \(1 MiB\)/);
      assert.equal(r.code, 1);
      // The pipe holds at most 64 KiB besides what the plugin read: it stopped near the limit.
      assert.ok(r.accepted < 8 << 20, `the plugin consumed ${r.accepted} bytes of ${OFFERED}`);
      assert.ok(r.ms < 5000, `took ${Math.round(r.ms)} ms`);
      assert.ok(r.maxRssKiB < 150 * 1024, `peak RSS ${r.maxRssKiB} KiB`);
    });
  });
}

test('stdin of exactly 1 MiB is still read', async () => {
  await withTempDir('stdin-limit', async (dir) => {
    const conf = JSON.stringify({ cniVersion: '1.0.0', name: 'big', ipam: { type: 'podipam', dataDir: dir, ranges: [[{ subnet: '10.77.0.0/24' }]] }, pad: '' });
    const padded = conf.slice(0, -2) + 'a'.repeat((1 << 20) - conf.length) + '"}';
    assert.equal(Buffer.byteLength(padded), 1 << 20);
    const r = runPluginSync(PODIPAM_BIN, { command: 'ADD', containerId: 'c1', ifname: 'eth0', config: padded });
    assert.equal(r.code, 0, r.stdout);
    assert.match(JSON.parse(r.stdout).ips[0].address, /^10\.77\.0\.2\/24$/);
  });
});
