import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeTempDir } from '../../test/helpers/tmp.js';
import { buildConflist, conflistText, defaultInterface, interfaceRefusal, type ConflistOptions } from './cni-conflist.js';
import { ForeignFileError } from './foreign-file-error.js';
import { installCni, type InstallOptions } from './install-cni.js';
import { MANIFEST_NAME } from './install-manifest.js';
import { uninstallCni } from './uninstall-cni.js';

const CONF: ConflistOptions = {
  name: 'podipam',
  backend: 'agent',
  bridge: 'cni0',
  agentSocket: '/run/podipam/agent.sock',
  datastore: 'etcd://10.0.0.5:2379',
  nodeName: 'node-a',
  subnets: ['usePodCidr'],
};

/** A temp root with root/opt/cni/bin and root/etc/cni/net.d (created by install, or not). */
function setup(name: string) {
  const root = makeTempDir(`install-${name}`);
  const shim = join(root.path, 'shim-v1');
  writeFileSync(shim, '#!/bin/sh\necho v1\n', { mode: 0o755 });
  const opts: InstallOptions = {
    binDir: join(root.path, 'opt/cni/bin'),
    confDir: join(root.path, 'etc/cni/net.d'),
    shim,
    conflist: CONF,
    priority: '10',
    dryRun: false,
    force: false,
  };
  return { root, opts, bin: join(opts.binDir, 'podipam'), conf: join(opts.confDir, '10-podipam.conflist') };
}

/** Every path under `dir` with its type, mode and content: what "as it was" means. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string): void => {
    for (const n of readdirSync(d).sort()) {
      const p = join(d, n);
      const st = lstatSync(p);
      if (st.isDirectory()) {
        out[p] = `dir ${(st.mode & 0o7777).toString(8)}`;
        walk(p);
      } else out[p] = `file ${(st.mode & 0o7777).toString(8)} ${readFileSync(p, 'base64')}`;
    }
  };
  walk(dir);
  return out;
}

test('buildConflist: cluster and agent default to ptp (a veth per pod, default routes of both families through the block gateway); serve prints the same', async () => {
  for (const backend of ['cluster', 'agent'] as const) {
    assert.equal(defaultInterface(backend), 'ptp');
    for (const o of [
      { ...CONF, backend },
      { ...CONF, backend, interface: 'ptp' as const },
    ]) {
      const [plugin] = buildConflist(o).plugins as { type: string; ipam: { routes?: unknown }; isGateway?: unknown; bridge?: unknown }[];
      assert.equal(plugin!.type, 'ptp', backend);
      assert.equal(plugin!.bridge, undefined, backend);
      assert.equal(plugin!.isGateway, undefined, backend);
      assert.deepEqual(plugin!.ipam.routes, [{ dst: '0.0.0.0/0' }, { dst: '::/0' }], backend);
    }
  }
  const { cniConflist } = await import('../server/cni-config.js');
  const served = JSON.parse(cniConflist({ datastore: 'sqlite:/x.db', nodeName: 'node-a', pools: ['p1'] })) as { plugins: Record<string, unknown>[] };
  const built = buildConflist({ ...CONF, backend: 'cluster', datastore: 'sqlite:/x.db', pools: ['p1'] }).plugins as Record<string, unknown>[];
  assert.equal(served.plugins[0]!.type, 'ptp');
  assert.deepEqual(served.plugins[0], built[0]);
  assert.deepEqual(served.plugins[1], { type: 'portmap', capabilities: { portMappings: true } });
});

test('buildConflist refuses bridge with the cluster and agent back ends, naming the one-IPv4-address-per-bridge limit and ptp', () => {
  for (const backend of ['cluster', 'agent'] as const) {
    const why = interfaceRefusal(backend, 'bridge');
    assert.ok(why !== undefined, backend);
    assert.match(why, new RegExp(`--interface bridge does not work with --backend ${backend}`));
    assert.match(why, /one IPv4 gateway address per bridge/);
    assert.match(why, /already has an IP address different from/);
    assert.match(why, /--interface ptp/);
    assert.throws(
      () => buildConflist({ ...CONF, backend, interface: 'bridge' }),
      (e: unknown) => e instanceof Error && e.message === why,
    );
    assert.equal(interfaceRefusal(backend, 'ptp'), undefined);
  }
  assert.equal(interfaceRefusal('local', 'bridge'), undefined);
  assert.equal(interfaceRefusal('local', 'ptp'), undefined);
});

test('buildConflist with local: bridge by default, byte for byte the config it always wrote (routes in the IPAM section)', () => {
  assert.equal(defaultInterface('local'), 'bridge');
  const local = { ...CONF, backend: 'local' as const, subnets: ['10.1.0.0/24', 'fd00:1::/64'] };
  const text = [
    '{',
    '  "cniVersion": "1.0.0",',
    '  "name": "podipam",',
    '  "plugins": [',
    '    {',
    '      "type": "bridge",',
    '      "bridge": "cni0",',
    '      "isGateway": true,',
    '      "ipMasq": true,',
    '      "ipam": {',
    '        "type": "podipam",',
    '        "ranges": [',
    '          [',
    '            {',
    '              "subnet": "10.1.0.0/24"',
    '            }',
    '          ],',
    '          [',
    '            {',
    '              "subnet": "fd00:1::/64"',
    '            }',
    '          ]',
    '        ],',
    '        "routes": [',
    '          {',
    '            "dst": "0.0.0.0/0"',
    '          },',
    '          {',
    '            "dst": "::/0"',
    '          }',
    '        ]',
    '      }',
    '    }',
    '  ]',
    '}',
    '',
  ].join('\n');
  assert.equal(conflistText(local), text);
  assert.equal(conflistText({ ...local, interface: 'bridge' }), text);
  // usePodCidr counts as IPv4 only (a route of a family the pod gets no address of fails bridge).
  const podCidr = buildConflist({ ...CONF, backend: 'local' }).plugins as { isDefaultGateway?: boolean; ipam: { routes?: unknown } }[];
  assert.equal(podCidr[0]!.isDefaultGateway, undefined);
  assert.deepEqual(podCidr[0]!.ipam.routes, [{ dst: '0.0.0.0/0' }]);
});

test('installCni into an empty root: the binary, the conflist and the install record; the directories created', () => {
  const { root, opts, bin, conf } = setup('fresh');
  try {
    const steps = installCni(opts);
    assert.deepEqual(readFileSync(bin), readFileSync(opts.shim));
    assert.equal(lstatSync(bin).mode & 0o777, 0o755);
    assert.deepEqual(JSON.parse(readFileSync(conf, 'utf8')), buildConflist(CONF));
    assert.equal(lstatSync(conf).mode & 0o777, 0o644);
    assert.ok(existsSync(join(opts.confDir, MANIFEST_NAME)));
    assert.deepEqual(
      steps.filter((s) => s.action === 'write').map((s) => s.path),
      [bin, conf],
    );
    assert.equal(steps.filter((s) => s.action === 'mkdir').length, 6, 'opt, opt/cni, opt/cni/bin, etc, etc/cni, etc/cni/net.d');
    // No temp file left behind.
    assert.deepEqual(readdirSync(opts.binDir), ['podipam']);
    assert.deepEqual(readdirSync(opts.confDir).sort(), [MANIFEST_NAME, '10-podipam.conflist'].sort());
  } finally {
    root.remove();
  }
});

test('installCni twice: the second run changes nothing (same inodes, same bytes)', () => {
  const { root, opts, bin, conf } = setup('repeat');
  try {
    installCni(opts);
    const before = snapshot(root.path);
    const inodes = [bin, conf, join(opts.confDir, MANIFEST_NAME)].map((p) => lstatSync(p).ino);
    const steps = installCni(opts);
    assert.deepEqual(
      steps.map((s) => s.action),
      ['unchanged', 'unchanged'],
    );
    assert.deepEqual(snapshot(root.path), before);
    assert.deepEqual(
      [bin, conf, join(opts.confDir, MANIFEST_NAME)].map((p) => lstatSync(p).ino),
      inodes,
    );
  } finally {
    root.remove();
  }
});

test('installCni refuses a conflist it did not write, names it, and writes nothing at all', () => {
  const { root, opts, conf } = setup('foreign');
  try {
    mkdirSync(opts.confDir, { recursive: true });
    writeFileSync(conf, '{"name":"theirs"}\n');
    const before = snapshot(root.path);
    assert.throws(
      () => installCni(opts),
      (e: unknown) => e instanceof ForeignFileError && e.message.includes(conf) && e.message.includes('--force'),
    );
    assert.deepEqual(snapshot(root.path), before, 'nothing written, not even the binary or the bin dir');
  } finally {
    root.remove();
  }
});

test('installCni refuses a symlink at <bin-dir>/podipam (a hand-made install) and a file edited since install', () => {
  const { root, opts, bin, conf } = setup('symlink');
  try {
    mkdirSync(opts.binDir, { recursive: true });
    symlinkSync('/usr/bin/true', bin);
    assert.throws(
      () => installCni(opts),
      (e: unknown) => e instanceof ForeignFileError && e.message.includes(`${bin} (a symlink)`),
    );
    assert.equal(lstatSync(bin).isSymbolicLink(), true);
    installCni({ ...opts, force: true });
    writeFileSync(conf, '{"edited":true}\n');
    assert.throws(
      () => installCni(opts),
      (e: unknown) => e instanceof ForeignFileError && e.message.includes(conf) && e.message.includes('changed since install'),
    );
    assert.equal(readFileSync(conf, 'utf8'), '{"edited":true}\n');
  } finally {
    root.remove();
  }
});

test('installCni --force takes a foreign file over; from then on it is ours (uninstall removes it)', () => {
  const { root, opts, conf } = setup('force');
  try {
    mkdirSync(opts.confDir, { recursive: true });
    writeFileSync(conf, '{"name":"theirs"}\n');
    const steps = installCni({ ...opts, force: true });
    assert.ok(steps.some((s) => s.action === 'take-over' && s.path === conf && s.detail?.includes('not in the install state')));
    assert.deepEqual(JSON.parse(readFileSync(conf, 'utf8')), buildConflist(CONF));
    assert.deepEqual(
      installCni(opts).map((s) => s.action),
      ['unchanged', 'unchanged'],
    );
    uninstallCni({ binDir: opts.binDir, confDir: opts.confDir, dryRun: false, force: false });
    assert.equal(existsSync(conf), false);
  } finally {
    root.remove();
  }
});

test('uninstallCni leaves the directories as they were before install, other files untouched', () => {
  const { root, opts } = setup('uninstall');
  try {
    // /opt/cni/bin exists with another plugin; /etc/cni/net.d does not exist yet.
    mkdirSync(opts.binDir, { recursive: true });
    copyFileSync('/usr/bin/true', join(opts.binDir, 'loopback'));
    const before = snapshot(root.path);
    installCni(opts);
    const steps = uninstallCni({ binDir: opts.binDir, confDir: opts.confDir, dryRun: false, force: false });
    assert.deepEqual(snapshot(root.path), before);
    assert.deepEqual(
      steps.filter((s) => s.action === 'rmdir').map((s) => s.path),
      [opts.confDir, join(root.path, 'etc/cni'), join(root.path, 'etc')],
    );
    assert.deepEqual(uninstallCni({ binDir: opts.binDir, confDir: opts.confDir, dryRun: false, force: false }), [], 'a second uninstall has nothing to do');
  } finally {
    root.remove();
  }
});

test('uninstallCni keeps a file changed since install (and its record), --force then removes it', () => {
  const { root, opts, bin, conf } = setup('edited');
  try {
    installCni(opts);
    writeFileSync(conf, '{"edited":true}\n');
    const steps = uninstallCni({ binDir: opts.binDir, confDir: opts.confDir, dryRun: false, force: false });
    assert.ok(steps.some((s) => s.action === 'keep' && s.path === conf));
    assert.equal(existsSync(bin), false);
    assert.equal(readFileSync(conf, 'utf8'), '{"edited":true}\n');
    uninstallCni({ binDir: opts.binDir, confDir: opts.confDir, dryRun: false, force: true });
    assert.equal(existsSync(join(root.path, 'etc')), false);
    assert.equal(existsSync(join(root.path, 'opt')), false);
  } finally {
    root.remove();
  }
});

test('install and uninstall with dryRun change nothing and report the same steps', () => {
  const { root, opts } = setup('dry');
  try {
    const before = snapshot(root.path);
    const planned = installCni({ ...opts, dryRun: true });
    assert.deepEqual(snapshot(root.path), before);
    assert.deepEqual(installCni(opts), planned);
    const installed = snapshot(root.path);
    const plannedRm = uninstallCni({ binDir: opts.binDir, confDir: opts.confDir, dryRun: true, force: false });
    assert.deepEqual(snapshot(root.path), installed);
    assert.deepEqual(uninstallCni({ binDir: opts.binDir, confDir: opts.confDir, dryRun: false, force: false }), plannedRm);
  } finally {
    root.remove();
  }
});

test("installCni with another --name keeps the earlier network's conflist; another --priority moves the same name's", () => {
  const { root, opts, bin, conf } = setup('rename');
  try {
    installCni(opts);
    const steps = installCni({ ...opts, conflist: { ...CONF, name: 'pods' } });
    assert.ok(!steps.some((s) => s.action === 'remove'), JSON.stringify(steps));
    assert.ok(existsSync(conf));
    assert.ok(existsSync(join(opts.confDir, '10-pods.conflist')));
    const moved = installCni({ ...opts, priority: '5', conflist: { ...CONF, name: 'pods' } });
    assert.deepEqual(
      moved.filter((s) => s.action === 'remove').map((s) => s.path),
      [join(opts.confDir, '10-pods.conflist')],
    );
    assert.ok(existsSync(conf) && existsSync(join(opts.confDir, '5-pods.conflist')) && existsSync(bin));
    // Uninstalling one name leaves the other and the binary; the last one takes everything.
    uninstallCni({ binDir: opts.binDir, confDir: opts.confDir, name: 'podipam', dryRun: false, force: false });
    assert.deepEqual(readdirSync(opts.confDir).sort(), [MANIFEST_NAME, '5-pods.conflist'].sort());
    assert.ok(existsSync(bin));
    uninstallCni({ binDir: opts.binDir, confDir: opts.confDir, name: 'pods', dryRun: false, force: false });
    assert.deepEqual(readdirSync(root.path), ['shim-v1']);
  } finally {
    root.remove();
  }
});

test('a record listing paths install cannot have written is refused by install and uninstall, naming each, with nothing done', () => {
  const { root, opts, bin } = setup('confine');
  try {
    installCni(opts);
    const state = join(opts.confDir, MANIFEST_NAME);
    const honest = JSON.parse(readFileSync(state, 'utf8')) as { files: { path: string; sha256: string[] }[]; createdDirs: string[] };
    const hash = honest.files.find((f) => f.path === bin)!.sha256;
    const bad = [
      { files: [{ path: 'opt/cni/bin/podipam', sha256: hash }] }, // relative
      { files: [{ path: join(opts.binDir, 'other'), sha256: hash }] }, // not the binary's name
      { files: [{ path: join(opts.confDir, 'x.json'), sha256: hash }] }, // not a conflist
      { files: [{ path: join(opts.confDir, 'sub', '10-a.conflist'), sha256: hash }] }, // below the conf dir
      { files: [{ path: `${opts.binDir}/../bin/podipam`, sha256: hash }] }, // not normal
      { createdDirs: [join(root.path, 'elsewhere')] },
      { createdDirs: [join(opts.binDir, 'below')] },
    ];
    for (const b of bad) {
      const planted = {
        ...honest,
        ...(b.files ? { files: [...honest.files, ...b.files] } : {}),
        ...(b.createdDirs ? { createdDirs: [...honest.createdDirs, ...b.createdDirs] } : {}),
      };
      writeFileSync(state, JSON.stringify(planted));
      const before = snapshot(root.path);
      const entry = JSON.stringify(b.files?.[0]?.path ?? b.createdDirs?.[0]);
      for (const act of [
        () => installCni({ ...opts, priority: '20' }),
        () => uninstallCni({ binDir: opts.binDir, confDir: opts.confDir, dryRun: false, force: true }),
      ]) {
        assert.throws(act, (e: Error) => e.name === 'InstallRecordError' && e.message.includes(entry), entry);
        assert.deepEqual(snapshot(root.path), before, entry);
      }
    }
    // The honest record, with the directories given relative to the working directory, is accepted.
    writeFileSync(state, JSON.stringify(honest));
    const cwd = process.cwd();
    process.chdir(root.path);
    try {
      assert.ok(uninstallCni({ binDir: 'opt/cni/bin', confDir: 'etc/cni/net.d', dryRun: true, force: false }).some((s) => s.path === bin));
    } finally {
      process.chdir(cwd);
    }
  } finally {
    root.remove();
  }
});

test('installCni replaces the binary while a process executes the old one: no ETXTBSY, the old process runs on', async () => {
  const { root, opts, bin } = setup('busy');
  try {
    const v1 = join(root.path, 'sleep-v1');
    const v2 = join(root.path, 'true-v2');
    copyFileSync('/usr/bin/sleep', v1);
    copyFileSync('/usr/bin/true', v2);
    installCni({ ...opts, shim: v1 });
    const child = spawn(bin, ['1.5'], { stdio: 'ignore' });
    const exited = new Promise<[number | null, string | null]>((resolve) => child.on('exit', (c, s) => resolve([c, s])));
    await new Promise((r) => setTimeout(r, 200));
    // Writing in place is what an atomic install avoids: the kernel refuses it while v1 runs.
    assert.throws(() => writeFileSync(bin, readFileSync(v2)), { code: 'ETXTBSY' });
    const steps = installCni({ ...opts, shim: v2 });
    assert.ok(steps.some((s) => s.action === 'replace' && s.path === bin));
    assert.deepEqual(readFileSync(bin), readFileSync(v2));
    assert.deepEqual(await exited, [0, null], 'the process running v1 finished normally');
  } finally {
    root.remove();
  }
});
