/**
 * No token on a command line (every local user reads /proc/PID/cmdline): the "Try:" line
 * serve prints holds none and works as printed — simulate reads the install token from
 * serve's data directory itself, or takes $PODIPAM_ADMIN_TOKEN. A token given in
 * `--server URL?token=` or `--token` still works, with a warning saying why not to.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { makeTempDir } from '../helpers/tmp.js';
import { runCli, startServe } from './serve-harness.js';

test('simulate finds the token itself: serve\'s "Try:" line has none and works as printed', { timeout: 120_000 }, async () => {
  const s = await startServe();
  const empty = makeTempDir('simulate-no-token');
  try {
    const token = s.installToken as string;
    assert.ok(token, 'serve runs with an install token');
    const tryLine = /^Try: (.*)$/m.exec(s.stdout())?.[1] ?? '';
    assert.doesNotMatch(tryLine, /token/i, `no token on the suggested command line: ${tryLine}`);
    // From a clone `podipam` is not on PATH: the hint says `npx podipam` (or `podipam` when PATH leads to this install).
    const words = tryLine.split(' ');
    const at = words.indexOf('simulate');
    assert.match(words.slice(0, at).join(' '), /^(npx podipam|podipam)$/, tryLine);
    const args = words.slice(at);
    assert.deepEqual(args.slice(0, 5), ['simulate', '--server', s.url, '--data-dir', s.dataDir], tryLine);
    // As printed, smaller.
    const small = args.map((w, i) => (args[i - 1] === '--pods' ? '12' : args[i - 1] === '--nodes' ? '3' : w));
    const sim = await runCli([...small, '--json']);
    assert.equal(sim.code, 0, sim.stdout + sim.stderr);
    assert.equal(JSON.parse(sim.stdout).added, 12 + Math.round(0.2 * 12));
    assert.doesNotMatch(sim.stderr, /warning/);

    // $PODIPAM_ADMIN_TOKEN works without the data directory.
    const viaEnv = await runCli(['simulate', '--server', s.url, '--data-dir', empty.path, '--nodes', '1', '--pods', '1', '--node-prefix', 'env'], {
      PODIPAM_ADMIN_TOKEN: token,
    });
    assert.equal(viaEnv.code, 0, viaEnv.stderr);

    // No token anywhere: one line saying where it looked.
    const none = await runCli(['simulate', '--server', s.url, '--data-dir', empty.path, '--nodes', '1', '--pods', '1']);
    assert.equal(none.code, 1, none.stdout + none.stderr);
    assert.match(none.stderr, /^podipam: error: .*only read.*no token \(.*serve\.token does not exist, \$PODIPAM_ADMIN_TOKEN is not set\)/m);

    // A token on the command line still works, and says why it should not be there.
    for (const extra of [
      ['--server', `${s.url}/?token=${token}`],
      ['--server', s.url, '--token', token],
    ]) {
      const r = await runCli(['simulate', ...extra, '--data-dir', empty.path, '--nodes', '1', '--pods', '1', '--node-prefix', 'cmdline']);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /^podipam: warning: the token in .* is visible to every local user in \/proc\/PID\/cmdline/m, extra.join(' '));
    }
  } finally {
    empty.remove();
    await s.stop();
  }
});
