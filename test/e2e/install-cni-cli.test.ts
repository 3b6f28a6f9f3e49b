/** `podipam install-cni` / `uninstall-cni` / `version` as a user runs them: flags, messages, exit codes. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PODIPAM_BIN } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';

function run(args: readonly string[], env: NodeJS.ProcessEnv = {}, cwd?: string) {
  const r = spawnSync(PODIPAM_BIN, args, { encoding: 'utf8', timeout: 30_000, env: { PATH: process.env.PATH, ...env }, ...(cwd ? { cwd } : {}) });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

test('install-cni: bad flags exit 2 naming the flag and value; the datastore defaults as for every command', () => {
  const bad = run(['install-cni', '--backend', 'magic', '--shim', '/usr/bin/true']);
  assert.equal(bad.code, 2);
  assert.match(bad.err, /invalid --backend "magic": expected one of local, cluster, agent/);
  assert.match(run(['install-cni', '--interface', 'macvlan']).err, /invalid --interface "macvlan"/);
  assert.match(run(['install-cni', '--name', '../x']).err, /invalid --name "\.\.\/x"/);
  // bridge cannot hold a node's several blocks: refused with the block back ends, naming why and ptp.
  for (const backend of ['cluster', 'agent']) {
    const br = run(['install-cni', '--backend', backend, '--interface', 'bridge', '--shim', '/usr/bin/true', '--dry-run']);
    assert.equal(br.code, 2, br.out + br.err);
    assert.match(br.err, new RegExp(`--interface bridge does not work with --backend ${backend}: .*one IPv4 gateway address per bridge.*use --interface ptp`));
    assert.equal(br.out, '', 'nothing planned');
  }
  const strayBridge = run(['install-cni', '--bridge', 'br9', '--shim', '/usr/bin/true', '--dry-run']);
  assert.equal(strayBridge.code, 2);
  assert.match(strayBridge.err, /--bridge "br9" applies to --interface bridge only; this config uses ptp/);
  // The defaults: ptp for agent (and cluster), bridge for local.
  assert.match(run(['install-cni', '--shim', '/usr/bin/true', '--dry-run']).out, /"type": "ptp"/);
  assert.match(run(['install-cni', '--backend', 'cluster', '--shim', '/usr/bin/true', '--dry-run']).out, /"type": "ptp"/);
  const local = run(['install-cni', '--backend', 'local', '--subnet', '10.1.0.0/24', '--bridge', 'br9', '--shim', '/usr/bin/true', '--dry-run']);
  assert.equal(local.code, 0, local.err);
  assert.match(local.out, /"type": "bridge",\s+"bridge": "br9",\s+"isGateway": true,\s+"ipMasq": true,\s+"ipam"/);
  // No --datastore: $PODIPAM_DATASTORE, else SQLite in the data directory, as every command.
  const byEnv = run(['install-cni', '--backend', 'cluster', '--shim', '/usr/bin/true', '--dry-run'], { PODIPAM_DATASTORE: 'etcd://127.0.0.9:2379' });
  assert.equal(byEnv.code, 0, byEnv.err);
  assert.match(byEnv.out, /"datastore": "etcd:\/\/127\.0\.0\.9:2379"/);
  assert.match(
    run(['install-cni', '--shim', '/usr/bin/true', '--dry-run'], { PODIPAM_DATA_DIR: '/srv/pd' }).out,
    /"datastore": "sqlite:\/srv\/pd\/podipam\.db"/,
  );
  assert.doesNotMatch(run(['install-cni', '--backend', 'local', '--subnet', '10.1.0.0/24', '--shim', '/usr/bin/true', '--dry-run']).out, /datastore/);
  const noShim = run([
    'install-cni',
    '--backend',
    'local',
    '--subnet',
    '10.1.0.0/24',
    '--shim',
    '/nonexistent/shim',
    '--dry-run',
    '--bin-dir',
    '/tmp/x',
    '--conf-dir',
    '/tmp/y',
  ]);
  assert.equal(noShim.code, 1);
  assert.match(noShim.err, /--shim \/nonexistent\/shim/);
});

test('install-cni: --dry-run prints the plan and the config, a foreign file exits 1 naming it, --force takes over', () => {
  const d = makeTempDir('install-cli');
  try {
    const dirs = ['--bin-dir', join(d.path, 'bin'), '--conf-dir', join(d.path, 'net.d'), '--shim', '/usr/bin/true', '--datastore', 'etcd://127.0.0.1:2379'];
    const dry = run([
      'install-cni',
      ...dirs,
      '--backend',
      'cluster',
      '--datastore',
      'etcd://10.0.0.5:2379',
      '--node-name',
      'node-a',
      '--interface',
      'ptp',
      '--dry-run',
    ]);
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
    const un = run(['uninstall-cni', '--conf-dir', join(d.path, 'net.d'), '--bin-dir', join(d.path, 'bin')]);
    assert.equal(un.code, 0, un.err);
    assert.match(un.out, /removed .*bin\/podipam/);
    assert.match(run(['uninstall-cni', '--conf-dir', join(d.path, 'net.d')]).out, /nothing installed/);
  } finally {
    d.remove();
  }
});

/** Every path under `dir` with its content (files) or "dir": what "touched nothing" means. */
function tree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string): void => {
    for (const n of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, n.name);
      if (n.isDirectory()) {
        out[p] = 'dir';
        walk(p);
      } else out[p] = readFileSync(p, 'base64');
    }
  };
  walk(dir);
  return out;
}

const sha256 = (p: string): string => createHash('sha256').update(readFileSync(p)).digest('hex');

test('install-cni / uninstall-cni refuse a recorded path outside --bin-dir and --conf-dir, naming it, and touch nothing', () => {
  const d = makeTempDir('install-planted');
  try {
    const bin = join(d.path, 'bin');
    const conf = join(d.path, 'net.d');
    const dirs = ['--bin-dir', bin, '--conf-dir', conf];
    const inst = run(['install-cni', ...dirs, '--shim', '/usr/bin/true', '--backend', 'local', '--subnet', '10.1.0.0/24']);
    assert.equal(inst.code, 0, inst.err);
    // Planted: a file and an empty directory elsewhere, recorded as if install had made them.
    const victim = join(d.path, 'precious', 'data.txt');
    const foreignDir = join(d.path, 'foreign-empty');
    mkdirSync(join(d.path, 'precious'));
    writeFileSync(victim, 'keep me');
    mkdirSync(foreignDir);
    const statePath = join(conf, '.podipam-install.state');
    const honest = JSON.parse(readFileSync(statePath, 'utf8')) as { files: { path: string; sha256: string[] }[]; createdDirs: string[] };
    const planted = [
      { what: 'a file', state: { ...honest, files: [...honest.files, { path: victim, sha256: [sha256(victim)] }] }, entry: victim },
      {
        what: 'a file reached through ..',
        state: { ...honest, files: [...honest.files, { path: join(bin, '..', 'precious', 'data.txt'), sha256: [sha256(victim)] }] },
        entry: join(bin, '..', 'precious', 'data.txt'),
      },
      { what: 'a directory', state: { ...honest, createdDirs: [...honest.createdDirs, foreignDir] }, entry: foreignDir },
    ];
    for (const p of planted) {
      writeFileSync(statePath, JSON.stringify(p.state));
      const before = tree(d.path);
      // A re-install under another name (the recorded file is no longer wanted), then an uninstall.
      for (const args of [
        ['install-cni', ...dirs, '--shim', '/usr/bin/true', '--backend', 'local', '--subnet', '10.1.0.0/24', '--priority', '20'],
        ['uninstall-cni', ...dirs],
        ['uninstall-cni', ...dirs, '--force'],
      ]) {
        const r = run(args);
        assert.equal(r.code, 1, `${p.what}, ${args[0]}: ${r.out} ${r.err}`);
        assert.ok(r.err.includes(JSON.stringify(p.entry)), `${p.what}, ${args[0]}: the message names the entry: ${r.err}`);
        assert.doesNotMatch(r.err, /\n\s+at /, 'no stack trace');
        assert.deepEqual(tree(d.path), before, `${p.what}, ${args[0]}: nothing touched`);
      }
    }
    assert.equal(readFileSync(victim, 'utf8'), 'keep me');
    assert.ok(existsSync(foreignDir));
  } finally {
    d.remove();
  }
});

test('install-cni of two network names: both configs stay; uninstall-cni --name removes one, the last uninstall everything', () => {
  const d = makeTempDir('install-two');
  try {
    const bin = join(d.path, 'bin');
    const conf = join(d.path, 'net.d');
    const dirs = ['--bin-dir', bin, '--conf-dir', conf];
    const common = [...dirs, '--shim', '/usr/bin/true', '--backend', 'local'];
    assert.equal(run(['install-cni', ...common, '--subnet', '10.1.0.0/24']).code, 0);
    const second = run(['install-cni', ...common, '--subnet', '10.2.0.0/24', '--name', 'other']);
    assert.equal(second.code, 0, second.err);
    assert.doesNotMatch(second.out, /removed/, second.out);
    assert.deepEqual(readdirSync(conf).sort(), ['.podipam-install.state', '10-other.conflist', '10-podipam.conflist']);
    // Re-installing one name with another priority moves only that name's config.
    const moved = run(['install-cni', ...common, '--subnet', '10.2.0.0/24', '--name', 'other', '--priority', '05']);
    assert.equal(moved.code, 0, moved.err);
    assert.match(moved.out, /removed .*10-other\.conflist/);
    assert.deepEqual(readdirSync(conf).sort(), ['.podipam-install.state', '05-other.conflist', '10-podipam.conflist']);
    const one = run(['uninstall-cni', ...dirs, '--name', 'podipam']);
    assert.equal(one.code, 0, one.err);
    assert.deepEqual(readdirSync(conf).sort(), ['.podipam-install.state', '05-other.conflist']);
    assert.deepEqual(readdirSync(bin), ['podipam'], 'the binary stays while a config uses it');
    const last = run(['uninstall-cni', ...dirs, '--name', 'other']);
    assert.equal(last.code, 0, last.err);
    assert.deepEqual(readdirSync(d.path), [], 'the last uninstall removes the binary, the record and the directories');
  } finally {
    d.remove();
  }
});

test('install-cni with relative --bin-dir/--conf-dir records absolute paths; uninstall-cni from elsewhere removes everything, checking --bin-dir against the record', () => {
  const d = makeTempDir('install-relative');
  try {
    const inst = run(
      ['install-cni', '--bin-dir', 'opt/bin', '--conf-dir', 'etc/net.d', '--shim', '/usr/bin/true', '--backend', 'local', '--subnet', '10.1.0.0/24'],
      {},
      d.path,
    );
    assert.equal(inst.code, 0, inst.err);
    const state = JSON.parse(readFileSync(join(d.path, 'etc/net.d/.podipam-install.state'), 'utf8')) as { files: { path: string }[]; createdDirs: string[] };
    assert.deepEqual(state.files.map((f) => f.path).sort(), [join(d.path, 'etc/net.d/10-podipam.conflist'), join(d.path, 'opt/bin/podipam')]);
    assert.ok(
      state.createdDirs.every((p) => p.startsWith(`${d.path}/`)),
      state.createdDirs.join(', '),
    );
    const conf = join(d.path, 'etc/net.d');
    const before = tree(d.path);
    const wrongBin = run(['uninstall-cni', '--conf-dir', conf, '--bin-dir', '/opt/elsewhere/bin']);
    assert.equal(wrongBin.code, 1, wrongBin.out + wrongBin.err);
    assert.ok(wrongBin.err.includes(JSON.stringify(join(d.path, 'opt/bin/podipam'))), wrongBin.err);
    assert.match(wrongBin.err, /--bin-dir/);
    assert.deepEqual(tree(d.path), before, 'nothing touched');
    const un = run(['uninstall-cni', '--conf-dir', conf, '--bin-dir', join(d.path, 'opt/bin')], {}, '/');
    assert.equal(un.code, 0, un.out + un.err);
    assert.deepEqual(readdirSync(d.path), [], un.out);
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
