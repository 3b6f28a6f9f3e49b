/**
 * A SIGTERM that comes the moment `serve` says it serves (a rolling update right after a start)
 * stops it cleanly, exit 0: its signal handlers are set before its port answers, never after.
 * Five times, each signalled on the first line of its banner.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { PODIPAM_BIN } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';

test('serve signalled as soon as its banner says it serves: a clean stop, exit 0', { timeout: 120_000 }, async () => {
  const dir = makeTempDir('serve-early-stop');
  try {
    for (let i = 0; i < 5; i++) {
      const child = spawn(process.execPath, [PODIPAM_BIN, 'serve', '--listen', '127.0.0.1:0', '--gc-interval', '0', '--data-dir', join(dir.path, `d${i}`)], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let err = '';
      child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
      child.stdout.setEncoding('utf8').on('data', (d: string) => {
        if (d.includes('dashboard and API on') && child.signalCode === null) child.kill('SIGTERM');
      });
      const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on('exit', (c, s) => resolve([c, s])));
      assert.deepEqual([code, signal], [0, null], `run ${i}: serve stopped by the signal itself, not by its handler\n${err}`);
    }
  } finally {
    dir.remove();
  }
});
