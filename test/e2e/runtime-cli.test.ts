/**
 * `podipam net` end to end as an operator runs it: add a pod to two networks with a netns the
 * CLI creates, list, check, status, gc a pod whose netns is gone, del — nothing left, the
 * created netns removed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { PODIPAM_BIN } from '../helpers/plugin.js';
import { Scratch, requirePrerequisites, sh, testSubnet } from './runtime-harness.js';

test('podipam net add|list|check|status|gc|del with --netns new', async () => {
  requirePrerequisites();
  const s = new Scratch('rt-cli');
  const ids = [`a${s.tag}`, `b${s.tag}`];
  try {
    const [brA, brB] = [s.bridge(1), s.bridge(2)];
    const ipam = (sub: string) => ({ type: 'podipam', ranges: [[{ subnet: sub }]], dataDir: s.dataDir });
    const [na, nb] = [`na-${s.tag}`, `nb-${s.tag}`];
    s.writeList('10-a.conflist', {
      cniVersion: '1.0.0',
      name: na,
      plugins: [
        { type: 'bridge', bridge: brA, ipam: ipam(testSubnet(226)) },
        { type: 'tuning', mtu: 1450 },
      ],
    });
    s.writeList('20-b.conf', { cniVersion: '0.4.0', name: nb, type: 'bridge', bridge: brB, ipam: ipam(testSubnet(227)) }); // legacy, up-converted
    const o = ['--conf-dir', s.confDir, '--bin-dir', s.binDirs.join(':'), '--cache-dir', s.cacheDir];
    const cli = (...args: string[]) => spawnSync(PODIPAM_BIN, args, { encoding: 'utf8', timeout: 60_000 });

    for (const id of ids) {
      const r = cli('net', 'add', na, nb, '--container', id, '--netns', 'new', ...o);
      assert.equal(r.status, 0, r.stderr);
      assert.match(
        r.stdout,
        new RegExp(`container ${id} in /var/run/netns/podipam-${id}\\n  ${na} eth0: 10\\.226\\.\\d+\\.\\d+/24\\n  ${nb} eth1: 10\\.227\\.`),
      );
      assert.match(sh('ip', ['-n', `podipam-${id}`, 'link', 'show', 'eth0']).out, /mtu 1450/);
    }
    const list = JSON.parse(cli('net', 'list', '--cache-dir', s.cacheDir, '--json').stdout) as {
      network: string;
      containerId: string;
      ifname: string;
      addresses: string[];
    }[];
    assert.deepEqual(list.map((r) => `${r.network} ${r.containerId} ${r.ifname} ${r.addresses.length}`).sort(), [
      `${na} ${ids[0]} eth0 1`,
      `${na} ${ids[1]} eth0 1`,
      `${nb} ${ids[0]} eth1 1`,
      `${nb} ${ids[1]} eth1 1`,
    ]);

    // The last pod: bridge 1.1.1's CHECK compares the bridge MAC, which follows its lowest port
    // and so moves when later pods join (a bridge quirk).
    let r = cli('net', 'check', na, nb, '--container', ids[1]!, ...o);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, `${na} eth0: ok\n${nb} eth1: ok\n`);
    r = cli('net', 'status', na, ...o);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /not asked \(cniVersion "1.0.0" < 1.1.0/);

    // Pod b dies without a DEL: its netns goes; gc DELs its two attachments and keeps pod a's —
    // network b's config is gone by then too, so gc uses the config cached at ADD.
    sh('ip', ['netns', 'del', `podipam-${ids[1]}`]);
    rmSync(join(s.confDir, '20-b.conf'));
    r = cli('net', 'gc', ...o);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout.split('\n').filter((l) => l.startsWith(`deleted stale`) && l.includes(ids[1]!)).length, 2, r.stdout);
    assert.equal(s.reservations(na).length + s.reservations(nb).length, 2);
    assert.equal(s.cachedFiles().length, 2);

    // Network a's config goes as well: del uses the configs cached at ADD for both.
    rmSync(join(s.confDir, '10-a.conflist'));
    r = cli('net', 'del', na, nb, '--container', ids[0]!, ...o);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, new RegExp(`network "${na}" is no longer in .*: deleting with the config cached at ADD`));
    assert.ok(!existsSync(`/var/run/netns/podipam-${ids[0]}`), 'del left the netns add --netns new made');
    assert.deepEqual([...s.reservations(na), ...s.reservations(nb)], []);
    assert.deepEqual([...s.portsOf(brA), ...s.portsOf(brB)], []);
    assert.deepEqual(s.cachedFiles(), []);
  } finally {
    for (const id of ids) sh('ip', ['netns', 'del', `podipam-${id}`]);
    await s.cleanup();
  }
});
