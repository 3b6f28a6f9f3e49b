/**
 * The reference `bridge` plugin with the native shim as its IPAM (`podipam` in CNI_PATH is
 * dist/bin/podipam-cni) and `podipam agent` serving it, on real network namespaces: pods get
 * dual-stack addresses from the agent, ping each other over IPv4 and IPv6, bridge's CHECK and
 * DEL go through the shim too, and DEL leaves only `lock` and `last_reserved_ip.*`. Fails (never
 * skips) without root, ip netns or /usr/lib/cni/bridge.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { SHIM_BIN, requireShim, startAgent } from '../helpers/agent.js';
import { BRIDGE_BIN, type PluginCall, runPluginSync } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';
import { ping, sh, waitDadDone } from '../helpers/netns.js';

test('bridge + shim + agent: dual-stack pods ping each other over IPv4 and IPv6; CHECK and DEL through the shim', async (t) => {
  assert.equal(process.getuid?.(), 0, 'this test needs root (network namespaces)');
  assert.ok(existsSync(BRIDGE_BIN), `${BRIDGE_BIN} is missing: install Debian's containernetworking-plugins`);
  assert.ok(sh('ip', ['netns', 'list']).ok, '`ip netns` does not work here (iproute2 missing?)');
  requireShim();
  const tag = `${process.pid.toString(36)}${randomBytes(2).toString('hex')}`;
  const bridge = `pdsh${tag}`.slice(0, 15);
  const netName = `pdshim-${tag}`;
  const octet = 16 + (randomBytes(1)[0]! % 200);
  const pods = [0, 1, 2].map((i) => ({ id: `shimpod${tag}${i}`, ns: `pdshim-${tag}-${i}` }));
  const work = makeTempDir('bridge-shim');
  const binDir = join(work.path, 'bin');
  sh('mkdir', ['-p', binDir]);
  symlinkSync(SHIM_BIN, join(binDir, 'podipam'));
  const agent = await startAgent(join(work.path, 'run', 'agent.sock'));
  const created: string[] = [];
  const config = {
    cniVersion: '1.0.0',
    name: netName,
    type: 'bridge',
    bridge,
    isGateway: false,
    ipMasq: false,
    ipam: {
      type: 'podipam',
      agent: agent.socket,
      dataDir: join(work.path, 'data'),
      ranges: [[{ subnet: `10.214.${octet}.0/24` }], [{ subnet: `fd14:${octet.toString(16)}::/64` }]],
    },
  };
  const call = (command: string, pod: (typeof pods)[number], conf: unknown = config): PluginCall => ({
    command,
    containerId: pod.id,
    ifname: 'eth0',
    netns: `/var/run/netns/${pod.ns}`,
    path: binDir,
    config: conf,
    env: { PODIPAM_PLUGIN: '' }, // no standalone fallback: the agent must serve every call
  });
  try {
    const results: { ips: { address: string }[] }[] = [];
    for (const pod of pods) {
      assert.ok(sh('ip', ['netns', 'add', pod.ns]).ok, `ip netns add ${pod.ns}`);
      created.push(pod.ns);
      sh('ip', ['-n', pod.ns, 'link', 'set', 'lo', 'up']);
      const r = runPluginSync(BRIDGE_BIN, call('ADD', pod));
      assert.equal(r.code, 0, `bridge ADD ${pod.id}: ${r.stdout} ${r.stderr}`);
      results.push(JSON.parse(r.stdout));
    }
    const v4 = results.map((r) => r.ips.find((i) => !i.address.includes(':'))!.address.split('/')[0]!);
    const v6 = results.map((r) => r.ips.find((i) => i.address.includes(':'))!.address.split('/')[0]!);
    t.diagnostic(`pods got ${v4.join(', ')} and ${v6.join(', ')}`);
    assert.equal(new Set([...v4, ...v6]).size, 6);
    // IPv6 addresses are usable once duplicate address detection has finished.
    for (const pod of pods) await waitDadDone(pod.ns);
    for (const [i, pod] of pods.entries()) {
      for (const peers of [v4, v6]) {
        const peer = peers[(i + 1) % pods.length]!;
        const r = ping(pod.ns, peer);
        assert.ok(r.ok, `${pod.ns} cannot ping ${peer}:\n${r.out}`);
      }
    }
    const check = runPluginSync(BRIDGE_BIN, call('CHECK', pods[2]!, { ...config, prevResult: results[2] }));
    assert.equal(check.code, 0, `bridge CHECK: ${check.stdout} ${check.stderr}`);
    for (const pod of pods) {
      const r = runPluginSync(BRIDGE_BIN, call('DEL', pod));
      assert.equal(r.code, 0, `bridge DEL ${pod.id}: ${r.stdout} ${r.stderr}`);
    }
    assert.deepEqual(readdirSync(join(work.path, 'data', netName)).sort(), ['last_reserved_ip.0', 'last_reserved_ip.1', 'lock']);
    const s = await agent.status();
    assert.equal(s.requests.ADD?.ok, 3, JSON.stringify(s.requests));
    assert.equal(s.requests.DEL?.ok, 3);
    assert.equal(s.requests.CHECK?.ok, 1);
  } finally {
    for (const ns of created) sh('ip', ['netns', 'del', ns]);
    sh('ip', ['link', 'del', bridge]);
    await agent.stop();
    work.remove();
  }
});
