/** `podipam install-cni` / `uninstall-cni` / `version` as a user runs them: flags, messages, exit codes. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PODIPAM_BIN } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';

function run(args: readonly string[], env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(PODIPAM_BIN, args, { encoding: 'utf8', timeout: 30_000, env: { PATH: process.env.PATH, ...env } });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

test('install-cni: bad flags exit 2 naming the flag and value; the datastore defaults as for every command', () => {
  const bad = run(['install-cni', '--backend', 'magic', '--shim', '/usr/bin/true']);
  assert.equal(bad.code, 2);
  assert.match(bad.err, /invalid --backend "magic": expected one of local, cluster, agent/);
  assert.match(run(['install-cni', '--interface', 'macvlan']).err, /invalid --interface "macvlan"/);
  assert.match(run(['install-cni', '--name', '../x']).err, /invalid --name "\.\.\/x"/);
  // No --datastore: $PODIPAM_DATASTORE, else SQLite in the data directory, as every command.
  const byEnv = run(['install-cni', '--backend', 'cluster', '--shim', '/usr/bin/true', '--dry-run'], { PODIPAM_DATASTORE: 'etcd://127.0.0.9:2379' });
  assert.equal(byEnv.code, 0, byEnv.err);
  assert.match(byEnv.out, /"datastore": "etcd:\/\/127\.0\.0\.9:2379"/);
  assert.match(run(['install-cni', '--shim', '/usr/bin/true', '--dry-run'], { PODIPAM_DATA_DIR: '/srv/pd' }).out, /"datastore": "sqlite:\/srv\/pd\/podipam\.db"/);
  assert.doesNotMatch(run(['install-cni', '--backend', 'local', '--subnet', '10.1.0.0/24', '--shim', '/usr/bin/true', '--dry-run']).out, /datastore/);
  const noShim = run(['install-cni', '--backend', 'local', '--subnet', '10.1.0.0/24', '--shim', '/nonexistent/shim', '--dry-run', '--bin-dir', '/tmp/x', '--conf-dir', '/tmp/y']);
  assert.equal(noShim.code, 1);
  assert.match(noShim.err, /--shim \/nonexistent\/shim/);
});

test('install-cni: --dry-run prints the plan and the config, a foreign file exits 1 naming it, --force takes over', () => {
  const d = makeTempDir('install-cli');
  try {
    const dirs = ['--bin-dir', join(d.path, 'bin'), '--conf-dir', join(d.path, 'net.d'), '--shim', '/usr/bin/true', '--datastore', 'etcd://127.0.0.1:2379'];
    const dry = run(['install-cni', ...dirs, '--backend', 'cluster', '--datastore', 'etcd://10.0.0.5:2379', '--node-name', 'node-a', '--interface', 'ptp', '--dry-run']);
    const agentDry = run(['install-cni', ...dirs, '--node-name', 'node-a', '--agent-socket', '/run/x/agent.sock', '--dry-run']);
    assert.match(agentDry.out, /"agent": "\/run\/x\/agent\.sock",\s+"datastore": "etcd:\/\/127\.0\.0\.1:2379",\s+"nodeName": "node-a"/);
    assert.equal(dry.code, 0, dry.err);
    assert.match(dry.out, /would write .*\/bin\/podipam \(sha256 [0-9a-f]{12}\)/);
    assert.match(dry.out, /"type": "ptp"[\s\S]*"datastore": "etcd:\/\/10\.0\.0\.5:2379"[\s\S]*"nodeName": "node-a"/);
    assert.equal(existsSync(join(d.path, 'bin')), false);

    mkdirSync(join(d.path, 'net.d'));
    writeFileSync(join(d.path, 'net.d', '10-podipam.conflist'), '{}');
    const refused = run(['install-cni', ...dirs]);
    assert.equal(refused.code, 1);
    assert.match(refused.err, new RegExp(`refusing to overwrite ${join(d.path, 'net.d', '10-podipam.conflist')}.*--force`));
    assert.equal(readFileSync(join(d.path, 'net.d', '10-podipam.conflist'), 'utf8'), '{}');
    const forced = run(['install-cni', ...dirs, '--force']);
    assert.equal(forced.code, 0, forced.err);
    assert.match(forced.out, /took over .*10-podipam\.conflist/);
    assert.match(run(['install-cni', ...dirs]).out, /already installed, nothing changed/);
    const un = run(['uninstall-cni', '--conf-dir', join(d.path, 'net.d')]);
    assert.equal(un.code, 0, un.err);
    assert.match(un.out, /removed .*bin\/podipam/);
    assert.match(run(['uninstall-cni', '--conf-dir', join(d.path, 'net.d')]).out, /nothing installed/);
  } finally {
    d.remove();
  }
});

test('podipam version and --version print the package version, commit and CNI versions', () => {
  const v = run(['version']);
  assert.equal(v.code, 0, v.err);
  assert.match(v.out, /^podipam \d+\.\d+\.\d+\ncommit: ([0-9a-f]{40}(-dirty)?|unknown)\nCNI spec versions: .*1\.1\.0\nNode\.js: v/);
  assert.equal(run(['--version']).out, v.out);
  assert.equal(JSON.parse(run(['version', '--json']).out).node, process.version);
});
