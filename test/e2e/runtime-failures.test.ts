/**
 * Failure injection on real chains: a plugin in the middle of bridge(+podipam) → X → tuning that
 * exits non-zero, hangs past the timeout, crashes, prints garbage, or is missing. Each time the
 * ADD fails with an error naming the plugin, the plugins already run were DELeted (in reverse,
 * with the last good result), the ones after it never ran, and nothing is left: no link in the
 * pod, no port on the bridge, no reservation, no cached result. Plus several networks of one
 * pod (all or nothing) and the CLI's answers to bad input.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { AttachError, ChainError, PluginError, PluginNotFoundError, PluginTimeoutError, attachNetworks } from '../../src/runtime/index.js';
import { PODIPAM_BIN } from '../helpers/plugin.js';
import { Scratch, requirePrerequisites, sh, testSubnet } from './runtime-harness.js';

const podipam = (s: Scratch, subnet: string) => ({ type: 'podipam', ranges: [[{ subnet }]], dataDir: s.dataDir });

function assertNothingLeft(s: Scratch, ns: string, bridge: string, network: string): void {
  assert.deepEqual(s.linksIn(ns), [], `links left in ${ns}`);
  assert.deepEqual(s.portsOf(bridge), [], `ports left on ${bridge}`);
  assert.deepEqual(s.reservations(network), [], 'reservations left');
  assert.deepEqual(s.cachedFiles(), [], 'cached results left');
}

test('a real plugin exiting non-zero mid-chain: the earlier plugins were DELeted, nothing is left', async () => {
  requirePrerequisites();
  const s = new Scratch('rt-fail-real');
  try {
    const br = s.bridge(1);
    const net = s.writeList('10-f.conflist', {
      cniVersion: '1.0.0',
      name: `freal-${s.tag}`,
      plugins: [
        { type: 'bridge', bridge: br, ipam: podipam(s, testSubnet(237)) },
        { type: 'tuning', sysctl: { 'net.ipv4.conf.eth0.podipam_no_such_key': '1' } },
        { type: 'portmap', capabilities: { portMappings: true } },
      ],
    });
    const ns = s.netns(1);
    await assert.rejects(
      s.runtime().add(net, { containerId: `f${s.tag}`, netns: ns.path, ifname: 'eth0' }),
      (e: unknown) =>
        e instanceof ChainError &&
        e.plugin === 'tuning' &&
        e.cause instanceof PluginError &&
        e.cause.exitCode !== 0 &&
        e.rollback.length === 0 &&
        /plugin type="tuning" failed \(add\)/.test(e.message),
    );
    assertNothingLeft(s, ns.name, br, net.name);
  } finally {
    await s.cleanup();
  }
});

const BAD: Record<string, { what: string; body: string; check: (e: ChainError) => boolean; ranBad: boolean }> = {
  exits: {
    what: 'exits non-zero',
    body: '[ "$CNI_COMMAND" = ADD ] && { echo \'{"code": 7, "msg": "injected failure", "details": "mid-chain"}\'; exit 1; }; exit 0',
    check: (e) => e.cause instanceof PluginError && e.cause.code === 7 && e.cause.msg === 'injected failure',
    ranBad: true,
  },
  hangs: {
    what: 'hangs past the timeout',
    body: '[ "$CNI_COMMAND" = ADD ] && exec sleep 30; exit 0',
    check: (e) => e.cause instanceof PluginTimeoutError,
    ranBad: true,
  },
  crashes: {
    what: 'crashes (SIGSEGV)',
    body: '[ "$CNI_COMMAND" = ADD ] && kill -SEGV $$; exit 0',
    check: (e) => e.cause instanceof PluginError && e.cause.signal === 'SIGSEGV',
    ranBad: true,
  },
  garbage: {
    what: 'prints garbage',
    body: '[ "$CNI_COMMAND" = ADD ] && echo "hello, world"; exit 0',
    check: (e) => e.cause instanceof PluginError && /exited 0 but printed no valid result: not JSON: "hello, world/.test(e.cause.message),
    ranBad: true,
  },
  missing: {
    what: 'is missing',
    body: '',
    check: (e) => e.cause instanceof PluginNotFoundError && /failed to find plugin "bad-missing"/.test(e.cause.message),
    ranBad: false,
  },
};

for (const [kind, bad] of Object.entries(BAD)) {
  test(`a plugin that ${bad.what} mid-chain: error names it, earlier plugins DELeted in reverse, later ones never run, nothing left`, async () => {
    requirePrerequisites();
    const s = new Scratch(`rt-fail-${kind}`);
    try {
      const br = s.bridge(1);
      if (kind !== 'missing') s.script(`bad-${kind}`, bad.body);
      s.script('after', 'echo "{}"');
      const net = s.writeList('10-f.conflist', {
        cniVersion: '1.0.0',
        name: `f${kind}-${s.tag}`,
        plugins: [{ type: 'bridge', bridge: br, ipam: podipam(s, testSubnet(238)) }, { type: `bad-${kind}` }, { type: 'after' }],
      });
      const ns = s.netns(1);
      const t0 = performance.now();
      await assert.rejects(
        s.runtime(1500).add(net, { containerId: `f${s.tag}`, netns: ns.path, ifname: 'eth0' }),
        (e: unknown) => e instanceof ChainError && e.plugin === `bad-${kind}` && e.rollback.length === 0 && bad.check(e),
      );
      assert.ok(performance.now() - t0 < 10_000);
      assert.deepEqual(s.calls(), bad.ranBad ? [`ADD bad-${kind}`, `DEL bad-${kind}`] : []);
      if (bad.ranBad) {
        // The rollback DEL carries the last good result (bridge's) as prevResult.
        const del = JSON.parse(sh('cat', [join(s.root.path, `stdin.DEL.bad-${kind}`)]).out);
        assert.ok(del.prevResult.ips[0].address, JSON.stringify(del));
      }
      assertNothingLeft(s, ns.name, br, net.name);
    } finally {
      await s.cleanup();
    }
  });
}

test('several networks of one pod: one fails, so the others are DELeted too (all or nothing)', async () => {
  requirePrerequisites();
  const s = new Scratch('rt-fail-multi');
  try {
    const [brA, brB] = [s.bridge(1), s.bridge(2)];
    s.script('boom', '[ "$CNI_COMMAND" = ADD ] && { echo \'{"code": 11, "msg": "not now"}\'; exit 1; }; exit 0');
    const a = s.writeList('10-a.conflist', {
      cniVersion: '1.0.0',
      name: `a-${s.tag}`,
      plugins: [{ type: 'bridge', bridge: brA, ipam: podipam(s, testSubnet(239)) }],
    });
    const b = s.writeList('20-b.conflist', {
      cniVersion: '1.0.0',
      name: `b-${s.tag}`,
      plugins: [{ type: 'bridge', bridge: brB, ipam: { type: 'host-local', subnet: testSubnet(240), dataDir: s.dataDir } }, { type: 'boom' }],
    });
    const ns = s.netns(1);
    await assert.rejects(
      attachNetworks(s.runtime(), { containerId: `m${s.tag}`, netns: ns.path }, [
        { list: a, ifname: 'eth0' },
        { list: b, ifname: 'eth1' },
      ]),
      (e: unknown) => e instanceof AttachError && e.failures.length === 1 && e.cleanup.length === 0 && /not now/.test(e.message),
    );
    assert.deepEqual(s.linksIn(ns.name), []);
    assert.deepEqual([...s.portsOf(brA), ...s.portsOf(brB)], []);
    assert.deepEqual([...s.reservations(a.name), ...s.reservations(b.name)], []);
    assert.deepEqual(s.cachedFiles(), []);
  } finally {
    await s.cleanup();
  }
});

test('podipam net: a missing network, an invalid config, a missing plugin and bad flags get clear errors', async () => {
  requirePrerequisites([]);
  const s = new Scratch('rt-fail-cli');
  try {
    const cli = (...args: string[]) => {
      const r = spawnSync(PODIPAM_BIN, args, { encoding: 'utf8', timeout: 60_000 });
      return { code: r.status, err: r.stderr };
    };
    const o = ['--conf-dir', s.confDir, '--bin-dir', s.binDir, '--cache-dir', s.cacheDir];
    const id = `cli${s.tag}`;
    let r = cli('net', 'add', 'nosuch', '--container', id, '--netns', 'new', ...o);
    assert.equal(r.code, 1);
    assert.match(r.err, new RegExp(`no net configurations found in ${s.confDir}`));
    writeFileSync(join(s.confDir, '10-ok.conflist'), JSON.stringify({ cniVersion: '1.0.0', name: 'ok', plugins: [{ type: 'nosuchplugin' }] }));
    r = cli('net', 'add', 'nosuch', '--container', id, '--netns', 'new', ...o);
    assert.match(r.err, new RegExp(`no net configuration with name "nosuch" in ${s.confDir}`));
    r = cli('net', 'add', 'ok', '--container', id, '--netns', 'new', ...o);
    assert.equal(r.code, 1);
    assert.match(r.err, /plugin type="nosuchplugin" failed \(add\): failed to find plugin "nosuchplugin" in path/);
    writeFileSync(join(s.confDir, '20-bad.conflist'), JSON.stringify({ cniVersion: '1.0.0', name: 'bad', plugins: [{ type: 'a' }, { ipam: {} }] }));
    r = cli('net', 'add', 'bad', '--container', id, '--netns', 'new', ...o);
    assert.equal(r.code, 1);
    assert.match(r.err, new RegExp(`${join(s.confDir, '20-bad.conflist')}: plugins\\[1\\]\\.type: missing 'type'`));
    r = cli('net', 'add', 'ok', '--container', id, '--netns', 'new', '--args', 'novalue', ...o);
    assert.equal(r.code, 2);
    assert.match(r.err, /invalid --args pair "novalue"/);
    r = cli('net', 'add', 'ok', '--container', 'bad id!', '--netns', '/var/run/netns/x', ...o);
    assert.equal(r.code, 1);
    assert.match(r.err, /container id "bad id!": invalid characters/);
    assert.ok(!sh('ip', ['netns', 'list']).out.includes(`podipam-${id}`), 'a failed add left its new netns');
  } finally {
    await s.cleanup();
  }
});
