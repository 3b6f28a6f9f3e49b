/**
 * podipam as the IPAM plugin of the reference `bridge` plugin, on real network namespaces:
 * bridge finds `podipam` in CNI_PATH (ipam.type), delegates ADD/CHECK/DEL to it, and puts the
 * addresses on veths in namespaces this test creates. Pods must see their addresses and ping
 * each other; DEL must leave only `lock` and `last_reserved_ip.*` on disk. Every namespace,
 * the bridge and the temp dirs are removed at the end, pass or fail. Traffic stays between the
 * namespaces the test made.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { BRIDGE_BIN, PODIPAM_BIN, type PluginCall, runPluginSync } from '../helpers/plugin.js';
import { requireCommand, requireExecutable, requireRoot } from '../helpers/prereq.js';
import { makeTempDir } from '../helpers/tmp.js';
import { ping, sh, waitDadDone } from '../helpers/netns.js';

test('bridge + podipam: dual-stack addresses in the pods, pods ping each other over IPv4 and IPv6, DEL cleans up', async (t) => {
  // Prerequisites fail the test with the reason; they never skip it.
  requireRoot('creating network namespaces and a bridge');
  requireExecutable(BRIDGE_BIN);
  requireCommand('ip', ['netns', 'list'], 'iproute2');
  requireCommand('ping', ['-V'], 'iputils-ping');
  const tag = randomBytes(3).toString('hex');
  const bridge = `pdbr${tag}`;
  const netName = `pdnet-${tag}`;
  // A private test subnet, random third octet so parallel runs do not collide.
  const octet = 16 + (randomBytes(1)[0]! % 200);
  const subnet4 = `10.213.${octet}.0/24`;
  const subnet6 = `fd13:${octet.toString(16)}::/64`;
  const pods = [0, 1, 2].map((i) => ({ id: `pod${tag}${i}`, ns: `podipam-${tag}-${i}` }));
  const dataDir = makeTempDir('bridge-data');
  const binDir = makeTempDir('bridge-bin');
  symlinkSync(PODIPAM_BIN, join(binDir.path, 'podipam'));
  const created: string[] = [];
  const config = {
    cniVersion: '1.0.0',
    name: netName,
    type: 'bridge',
    bridge,
    isGateway: false,
    ipMasq: false,
    ipam: { type: 'podipam', dataDir: dataDir.path, ranges: [[{ subnet: subnet4 }], [{ subnet: subnet6 }]] },
  };
  const bridgeCall = (command: string, pod: (typeof pods)[number], conf: unknown = config): PluginCall => ({
    command,
    containerId: pod.id,
    ifname: 'eth0',
    netns: `/var/run/netns/${pod.ns}`,
    path: binDir.path,
    config: conf,
  });
  try {
    const results: { ips: { address: string }[] }[] = [];
    for (const pod of pods) {
      assert.ok(sh('ip', ['netns', 'add', pod.ns]).ok, `ip netns add ${pod.ns}`);
      created.push(pod.ns);
      sh('ip', ['-n', pod.ns, 'link', 'set', 'lo', 'up']);
      const r = runPluginSync(BRIDGE_BIN, bridgeCall('ADD', pod));
      assert.equal(r.code, 0, `bridge ADD ${pod.id}: ${r.stdout} ${r.stderr}`);
      results.push(JSON.parse(r.stdout));
    }
    const v4 = results.map((r) => r.ips.find((i) => !i.address.includes(':'))!.address);
    const v6 = results.map((r) => r.ips.find((i) => i.address.includes(':'))!.address);
    t.diagnostic(`pods got ${v4.join(', ')} and ${v6.join(', ')}`);
    assert.equal(new Set(v4).size, 3);
    assert.deepEqual(
      v4,
      [2, 3, 4].map((h) => `10.213.${octet}.${h}/24`),
    );
    assert.equal(new Set(v6).size, 3);
    assert.deepEqual(
      v6,
      [2, 3, 4].map((h) => `fd13:${octet.toString(16)}::${h}/64`),
    );

    for (const [i, pod] of pods.entries()) {
      const shown = sh('ip', ['-n', pod.ns, 'addr', 'show', 'dev', 'eth0']);
      assert.ok(shown.ok, shown.out);
      assert.ok(shown.out.includes(`inet ${v4[i]}`), `${pod.ns} lacks ${v4[i]}:\n${shown.out}`);
      assert.ok(shown.out.includes(`inet6 ${v6[i]}`), `${pod.ns} lacks ${v6[i]}:\n${shown.out}`);
    }
    for (const pod of pods) await waitDadDone(pod.ns);
    for (const [i, pod] of pods.entries()) {
      for (const family of [v4, v6]) {
        const peer = family[(i + 1) % pods.length]!.split('/')[0]!;
        const r = ping(pod.ns, peer);
        assert.ok(r.ok, `${pod.ns} cannot ping ${peer}:\n${r.out}`);
      }
    }

    // bridge forwards CHECK (with its result as prevResult) to podipam. The last pod's: the
    // bridge's MAC follows its lowest port, so older results no longer match it (a bridge quirk).
    const check = runPluginSync(BRIDGE_BIN, bridgeCall('CHECK', pods[2]!, { ...config, prevResult: results[2] }));
    assert.equal(check.code, 0, `bridge CHECK: ${check.stdout} ${check.stderr}`);

    for (const pod of pods) {
      const r = runPluginSync(BRIDGE_BIN, bridgeCall('DEL', pod));
      assert.equal(r.code, 0, `bridge DEL ${pod.id}: ${r.stdout} ${r.stderr}`);
    }
    assert.deepEqual(readdirSync(join(dataDir.path, netName)).sort(), ['last_reserved_ip.0', 'last_reserved_ip.1', 'lock']);
  } finally {
    for (const ns of created) sh('ip', ['netns', 'del', ns]);
    sh('ip', ['link', 'del', bridge]);
    dataDir.remove();
    binDir.remove();
  }
  assert.ok(!sh('ip', ['link', 'show', bridge]).ok, `bridge ${bridge} still exists`);
  const left = sh('ip', ['netns', 'list']).out;
  for (const pod of pods) assert.ok(!left.includes(pod.ns), `namespace ${pod.ns} still exists`);
});
