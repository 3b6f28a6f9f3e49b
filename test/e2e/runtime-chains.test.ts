/**
 * The runtime client on real plugins (/usr/lib/cni bridge, loopback, portmap, tuning,
 * host-local, and bin/podipam as IPAM) in namespaces this test creates: chains of two and three
 * plugins, several networks on one pod, CHECK, and DEL / GC leaving nothing behind (no links,
 * no reservations, no cached results, no portmap rules).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { attachNetworks, detachNetworks, resultAddresses } from '../../src/runtime/index.js';
import { PODIPAM_BIN, runPluginSync } from '../helpers/plugin.js';
import { Scratch, requirePrerequisites, sh, testSubnet } from './runtime-harness.js';

const podipam = (s: Scratch, subnet: string) => ({ type: 'podipam', ranges: [[{ subnet }]], dataDir: s.dataDir });
const natRulesOf = (containerId: string) =>
  sh('iptables-save', ['-t', 'nat'])
    .out.split('\n')
    .filter((l) => l.includes(`id: \\"${containerId}\\"`) || l.includes(`id: "${containerId}"`));

test('chains of two and three plugins: forward ADD with prevResult, CHECK, reverse DEL leaves nothing', async () => {
  requirePrerequisites();
  const s = new Scratch('rt-chains');
  try {
    const [br2, br3] = [s.bridge(2), s.bridge(3)];
    const [sub2, sub3] = [testSubnet(231), testSubnet(232)];
    const two = s.writeList('10-two.conflist', {
      cniVersion: '1.0.0',
      name: `two-${s.tag}`,
      plugins: [
        { type: 'bridge', bridge: br2, ipam: podipam(s, sub2) },
        { type: 'tuning', sysctl: { 'net.ipv4.conf.eth0.arp_notify': '1' } },
      ],
    });
    const three = s.writeList('20-three.conflist', {
      cniVersion: '1.0.0',
      name: `three-${s.tag}`,
      plugins: [
        { type: 'bridge', bridge: br3, ipam: podipam(s, sub3) },
        { type: 'portmap', capabilities: { portMappings: true }, snat: false },
        { type: 'tuning', mtu: 1400 },
      ],
    });
    const rt = s.runtime();
    const ns2 = s.netns(2);
    const ns3 = s.netns(3);
    const id2 = `c2${s.tag}`;
    const id3 = `c3${s.tag}`;
    const r2 = await rt.add(two, { containerId: id2, netns: ns2.path, ifname: 'eth0' });
    const r3 = await rt.add(three, {
      containerId: id3,
      netns: ns3.path,
      ifname: 'eth0',
      capabilityArgs: { portMappings: [{ hostPort: 18080 + (process.pid % 1000), containerPort: 80, protocol: 'tcp' }], ignored: true },
    });

    // The last plugin's result carries the first one's interfaces and addresses (prevResult chaining).
    for (const [r, ns, sub] of [
      [r2, ns2, sub2],
      [r3, ns3, sub3],
    ] as const) {
      const addr = resultAddresses(r);
      assert.equal(addr.length, 1);
      assert.ok(addr[0]!.startsWith(sub.split('.').slice(0, 3).join('.')), `${addr} in ${sub}`);
      assert.ok(sh('ip', ['-n', ns.name, 'addr', 'show', 'eth0']).out.includes(`inet ${addr[0]}`));
      assert.ok((r.interfaces as { name: string }[]).some((i) => i.name === 'eth0'));
    }
    // tuning ran inside the netns; portmap got runtimeConfig.portMappings (its DNAT rules exist).
    assert.equal(sh('ip', ['netns', 'exec', ns2.name, 'cat', '/proc/sys/net/ipv4/conf/eth0/arp_notify']).out.trim(), '1');
    assert.match(sh('ip', ['-n', ns3.name, 'link', 'show', 'eth0']).out, /mtu 1400/);
    assert.ok(natRulesOf(id3).length > 0, 'portmap made no rules for the container: runtimeConfig.portMappings not delivered');
    assert.deepEqual(s.cachedFiles().sort(), [`three-${s.tag}-${id3}-eth0`, `two-${s.tag}-${id2}-eth0`]);

    await rt.check(two, { containerId: id2, netns: ns2.path, ifname: 'eth0' });
    // Not `three`: portmap 1.1.1's CHECK looks for an IPv6 DNAT chain even for an IPv4-only pod
    // and fails wherever ip6tables exists (a plugin bug, fixed in later plugins).

    await rt.del(two, { containerId: id2, netns: ns2.path, ifname: 'eth0' });
    await rt.del(three, { containerId: id3, netns: ns3.path, ifname: 'eth0' });
    await rt.del(three, { containerId: id3, netns: ns3.path, ifname: 'eth0' }); // idempotent
    assert.deepEqual(s.linksIn(ns2.name), []);
    assert.deepEqual(s.linksIn(ns3.name), []);
    assert.deepEqual([...s.portsOf(br2), ...s.portsOf(br3)], []);
    assert.deepEqual([...s.reservations(two.name), ...s.reservations(three.name)], []);
    assert.deepEqual(s.cachedFiles(), []);
    assert.deepEqual(natRulesOf(id3), []);
  } finally {
    await s.cleanup();
  }
});

test('two networks (and loopback) on one pod, attached in parallel; DEL leaves nothing', async () => {
  requirePrerequisites();
  const s = new Scratch('rt-multi');
  try {
    const [brA, brB] = [s.bridge(1), s.bridge(2)];
    const lo = s.writeList('00-lo.conflist', { cniVersion: '1.0.0', name: `lo-${s.tag}`, plugins: [{ type: 'loopback' }] });
    const a = s.writeList('10-a.conflist', {
      cniVersion: '1.0.0',
      name: `a-${s.tag}`,
      plugins: [{ type: 'bridge', bridge: brA, ipam: podipam(s, testSubnet(233)) }],
    });
    const b = s.writeList('20-b.conflist', {
      cniVersion: '0.4.0',
      name: `b-${s.tag}`,
      plugins: [{ type: 'bridge', bridge: brB, ipam: { type: 'host-local', subnet: testSubnet(234), dataDir: s.dataDir } }],
    });
    const rt = s.runtime();
    const ns = s.netns(1);
    const pod = { containerId: `m${s.tag}`, netns: ns.path };
    const nets = [
      { list: lo, ifname: 'lo' },
      { list: a, ifname: 'eth0' },
      { list: b, ifname: 'eth1' },
    ];
    const results = await attachNetworks(rt, pod, nets);
    const [addrA] = resultAddresses(results[1]);
    const [addrB] = resultAddresses(results[2]);
    assert.ok(sh('ip', ['-n', ns.name, 'addr', 'show', 'eth0']).out.includes(`inet ${addrA}`));
    assert.ok(sh('ip', ['-n', ns.name, 'addr', 'show', 'eth1']).out.includes(`inet ${addrB}`));
    assert.deepEqual(s.linksIn(ns.name).sort(), ['eth0', 'eth1']);
    assert.equal(s.reservations(a.name).length, 1);
    assert.equal(s.reservations(b.name).length, 1);
    assert.equal(s.cachedFiles().length, 3);

    await detachNetworks(rt, pod, nets);
    assert.deepEqual(s.linksIn(ns.name), []);
    assert.deepEqual([...s.portsOf(brA), ...s.portsOf(brB)], []);
    assert.deepEqual([...s.reservations(a.name), ...s.reservations(b.name)], []);
    assert.deepEqual(s.cachedFiles(), []);
  } finally {
    await s.cleanup();
  }
});

test('GC: cached attachments not valid (their netns gone) are DELeted first; the valid one stays', async () => {
  requirePrerequisites();
  const s = new Scratch('rt-gc');
  try {
    const br = s.bridge(1);
    const net = s.writeList('10-gc.conflist', {
      cniVersion: '1.0.0',
      name: `gc-${s.tag}`,
      plugins: [{ type: 'bridge', bridge: br, ipam: podipam(s, testSubnet(235)) }],
    });
    const rt = s.runtime();
    const [n1, n2] = [s.netns(1), s.netns(2)];
    const [id1, id2] = [`g1${s.tag}`, `g2${s.tag}`];
    await rt.add(net, { containerId: id1, netns: n1.path, ifname: 'eth0' });
    await rt.add(net, { containerId: id2, netns: n2.path, ifname: 'eth0' });
    sh('ip', ['netns', 'del', n1.name]); // the pod died without a DEL
    const deleted = await rt.gc(net, [{ containerId: id2, ifname: 'eth0' }]);
    assert.deepEqual(
      deleted.map((d) => d.containerId),
      [id1],
    );
    assert.deepEqual(s.cachedFiles(), [`gc-${s.tag}-${id2}-eth0`]);
    assert.equal(s.reservations(net.name).length, 1);
    assert.equal(s.portsOf(br).length, 1);

    await rt.gc(net, []); // now nothing is valid
    assert.deepEqual(s.cachedFiles(), []);
    assert.deepEqual(s.reservations(net.name), []);
    assert.deepEqual(s.portsOf(br), []);
    assert.deepEqual(s.linksIn(n2.name), []);
  } finally {
    await s.cleanup();
  }
});

test('GC at cniVersion 1.1.0 also sends GC with the valid attachments: podipam drops a leak no cache knows', async () => {
  requirePrerequisites([]);
  const s = new Scratch('rt-gc11');
  try {
    const name = `gc11-${s.tag}`;
    const ipam = { type: 'podipam', ranges: [[{ subnet: testSubnet(236) }]], dataDir: s.dataDir };
    const net = s.writeList('10-gc11.conflist', { cniVersion: '1.1.0', name, plugins: [{ type: 'podipam', ipam }] });
    const rt = s.runtime();
    const netns = '/var/run/netns/unused'; // podipam as the only plugin never enters it
    await rt.add(net, { containerId: `k${s.tag}`, netns, ifname: 'eth0' });
    await rt.add(net, { containerId: `s${s.tag}`, netns, ifname: 'eth0' });
    // A reservation made behind the runtime's back (no cache entry): only the plugin GC can find it.
    const leak = runPluginSync(PODIPAM_BIN, {
      command: 'ADD',
      containerId: `l${s.tag}`,
      ifname: 'eth0',
      path: s.binDir,
      config: { cniVersion: '1.1.0', name, ipam },
    });
    assert.equal(leak.code, 0, leak.stdout);
    assert.equal(s.reservations(name).length, 3);
    assert.equal(await rt.status(net), true);

    const deleted = await rt.gc(net, [{ containerId: `k${s.tag}`, ifname: 'eth0' }]);
    assert.deepEqual(
      deleted.map((d) => d.containerId),
      [`s${s.tag}`],
    );
    assert.deepEqual(s.cachedFiles(), [`${name}-k${s.tag}-eth0`]);
    const left = s.reservations(name);
    assert.equal(left.length, 1, `left: ${left}`);
    await rt.del(net, { containerId: `k${s.tag}`, netns, ifname: 'eth0' });
    assert.deepEqual(s.reservations(name), []);
    assert.deepEqual(s.cachedFiles(), []);
  } finally {
    await s.cleanup();
  }
});

test('GC sends both valid-attachment keys, as libcni does (#1101)', async () => {
  requirePrerequisites([]);
  const s = new Scratch('rt-gckeys');
  try {
    s.script('rec', 'exit 0');
    const net = s.writeList('10-rec.conflist', { cniVersion: '1.1.0', name: `rec-${s.tag}`, plugins: [{ type: 'rec', x: 1 }] });
    await s.runtime().gc(net, [{ containerId: 'c1', ifname: 'eth0' }]);
    const stdin = JSON.parse(sh('cat', [join(s.root.path, 'stdin.GC.rec')]).out);
    assert.deepEqual(stdin, {
      cniVersion: '1.1.0',
      'cni.dev/attachments': [{ containerID: 'c1', ifname: 'eth0' }],
      'cni.dev/valid-attachments': [{ containerID: 'c1', ifname: 'eth0' }],
      name: `rec-${s.tag}`,
      type: 'rec',
      x: 1,
    });
  } finally {
    await s.cleanup();
  }
});
