/**
 * What `podipam install-cni` writes works end to end: the CLI installs the shim and a conflist
 * into a temp root (bridge for the local back end, ptp for agent and cluster), and this test
 * then acts as the runtime — it reads the conflist from the conf dir, finds the interface
 * plugin and `podipam` on CNI_PATH (the installed bin dir first), and runs ADD/CHECK/DEL for
 * pods in network namespaces it creates. Pods get addresses from the installed config's range
 * and ping each other; DEL frees them; uninstall-cni then restores the root. Namespaces and the
 * bridge carry this run's tag and are removed, pass or fail. The agent and cluster tests run
 * the runtime inside a "node" namespace of their own (ptp routes each pod on the node and turns
 * forwarding on there), so nothing touches the host's namespace; several blocks on one node:
 * install-cni-blocks-netns.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PODIPAM_BIN, runPluginSync } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';
import { ping, sh } from '../helpers/netns.js';
import { requireShim, SHIM_BIN, startAgent } from '../helpers/agent.js';

test('install-cni --backend local, used as a runtime would: bridge + the installed shim (no agent: the plugin) give pods addresses in netns', () => {
  assert.equal(process.getuid?.(), 0, 'needs root (network namespaces)');
  assert.ok(sh('ip', ['netns', 'list']).ok, 'needs ip netns');
  requireShim();
  const tag = `${process.pid.toString(36)}${randomBytes(2).toString('hex')}`.slice(-8);
  const bridge = `pdi${tag}`;
  const name = `pdinst-${tag}`;
  const octet = 16 + (randomBytes(1)[0]! % 200);
  const root = makeTempDir('install-e2e');
  const binDir = join(root.path, 'opt/cni/bin');
  const confDir = join(root.path, 'etc/cni/net.d');
  const pods = [0, 1].map((i) => ({ id: `ctr${tag}${i}`, ns: `podipam-inst-${tag}-${i}` }));
  const created: string[] = [];
  try {
    const inst = spawnSync(
      PODIPAM_BIN,
      [
        'install-cni',
        '--bin-dir',
        binDir,
        '--conf-dir',
        confDir,
        '--backend',
        'local',
        '--subnet',
        `10.214.${octet}.0/24`,
        '--host-local-dir',
        join(root.path, 'networks'),
        '--bridge',
        bridge,
        '--name',
        name,
        '--no-ip-masq',
      ],
      { encoding: 'utf8', timeout: 30_000 },
    );
    assert.equal(inst.status, 0, inst.stdout + inst.stderr);
    assert.deepEqual(readdirSync(binDir), ['podipam']);
    assert.deepEqual(readFileSync(join(binDir, 'podipam')), readFileSync(SHIM_BIN), 'the native shim was installed');

    // The runtime's side: the first config in name order, each plugin given name + cniVersion.
    const file = readdirSync(confDir)
      .filter((f) => f.endsWith('.conflist'))
      .sort()[0]!;
    const list = JSON.parse(readFileSync(join(confDir, file), 'utf8')) as { cniVersion: string; name: string; plugins: Record<string, unknown>[] };
    assert.equal(list.plugins.length, 1);
    const conf: Record<string, unknown> = { cniVersion: list.cniVersion, name: list.name, ...list.plugins[0]! };
    const call = (command: string, pod: (typeof pods)[number], extra: Record<string, unknown> = {}) =>
      runPluginSync(`/usr/lib/cni/${String(conf.type)}`, {
        command,
        containerId: pod.id,
        ifname: 'eth0',
        netns: `/var/run/netns/${pod.ns}`,
        path: `${binDir}:/usr/lib/cni`,
        config: { ...conf, ...extra },
        env: { PODIPAM_AGENT_SOCKET: join(root.path, 'no-agent.sock'), PODIPAM_CNI_LOG: join(root.path, 'cni.log') },
      });
    const results: { ips: { address: string }[] }[] = [];
    for (const pod of pods) {
      assert.ok(sh('ip', ['netns', 'add', pod.ns]).ok, `ip netns add ${pod.ns}`);
      created.push(pod.ns);
      const r = call('ADD', pod);
      assert.equal(r.code, 0, `ADD ${pod.id}: ${r.stdout} ${r.stderr}`);
      results.push(JSON.parse(r.stdout));
    }
    const addrs = results.map((r) => r.ips[0]!.address);
    assert.deepEqual(addrs, [`10.214.${octet}.2/24`, `10.214.${octet}.3/24`]);
    const shown = sh('ip', ['-n', pods[0]!.ns, 'addr', 'show', 'dev', 'eth0']);
    assert.ok(shown.out.includes(`inet ${addrs[0]}`), shown.out);
    const pinged = ping(pods[0]!.ns, addrs[1]!.split('/')[0]!);
    assert.ok(pinged.ok, pinged.out);
    const check = call('CHECK', pods[1]!, { prevResult: results[1] });
    assert.equal(check.code, 0, `CHECK: ${check.stdout} ${check.stderr}`);
    for (const pod of pods) {
      const r = call('DEL', pod);
      assert.equal(r.code, 0, `DEL ${pod.id}: ${r.stdout} ${r.stderr}`);
    }
    assert.deepEqual(readdirSync(join(root.path, 'networks', name)).sort(), ['last_reserved_ip.0', 'lock']);

    const un = spawnSync(PODIPAM_BIN, ['uninstall-cni', '--conf-dir', confDir, '--bin-dir', binDir], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(un.status, 0, un.stdout + un.stderr);
    assert.deepEqual(readdirSync(root.path).sort(), ['networks']);
  } finally {
    for (const ns of created) sh('ip', ['netns', 'del', ns]);
    sh('ip', ['link', 'del', bridge]);
    root.remove();
  }
  assert.ok(!sh('ip', ['link', 'show', bridge]).ok, `bridge ${bridge} still exists`);
});

test('install-cni --backend agent: ptp → the installed shim → podipam agent → cluster pool, in netns', async () => {
  assert.equal(process.getuid?.(), 0, 'needs root (network namespaces)');
  requireShim();
  const tag = `${process.pid.toString(36)}${randomBytes(2).toString('hex')}`.slice(-8);
  const octet = 16 + (randomBytes(1)[0]! % 200);
  const root = makeTempDir('install-agent-e2e');
  const binDir = join(root.path, 'opt/cni/bin');
  const confDir = join(root.path, 'etc/cni/net.d');
  const socket = join(root.path, 'run/podipam/agent.sock');
  const datastore = `sqlite:${join(root.path, 'podipam.db')}`;
  const nodeNs = `podipam-anode-${tag}`;
  const pod = { id: `ctra${tag}`, ns: `podipam-insta-${tag}` };
  const created: string[] = [];
  const agent = await startAgent(socket, ['--data-dir', join(root.path, 'agent')]);
  try {
    const pool = spawnSync(PODIPAM_BIN, ['pool', 'create', `e2e-${tag}`, '--cidr', `10.215.${octet}.0/24`, '--block-size', '28', '--datastore', datastore], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(pool.status, 0, pool.stdout + pool.stderr);
    const inst = spawnSync(
      PODIPAM_BIN,
      [
        'install-cni',
        '--bin-dir',
        binDir,
        '--conf-dir',
        confDir,
        '--backend',
        'agent',
        '--agent-socket',
        socket,
        '--datastore',
        datastore,
        '--node-name',
        `node-${tag}`,
        '--name',
        `pdagent-${tag}`,
        '--no-ip-masq',
      ],
      { encoding: 'utf8', timeout: 30_000 },
    );
    assert.equal(inst.status, 0, inst.stdout + inst.stderr);
    const file = readdirSync(confDir)
      .filter((f) => f.endsWith('.conflist'))
      .sort()[0]!;
    const list = JSON.parse(readFileSync(join(confDir, file), 'utf8')) as { cniVersion: string; name: string; plugins: Record<string, unknown>[] };
    const conf: Record<string, unknown> = { cniVersion: list.cniVersion, name: list.name, ...list.plugins[0]! };
    assert.equal(conf.type, 'ptp', 'the agent back end defaults to ptp');
    for (const ns of [nodeNs, pod.ns]) {
      assert.ok(sh('ip', ['netns', 'add', ns]).ok, `ip netns add ${ns}`);
      created.push(ns);
    }
    // The runtime runs in the node's namespace; the agent's socket is a file, reachable from it.
    const inNode = join(root.path, 'in-node');
    writeFileSync(inNode, `#!/bin/sh\nexec ip netns exec ${nodeNs} /usr/lib/cni/${String(conf.type)}\n`, { mode: 0o755 });
    // No Node.js fallback: if the shim did not reach the agent, the call fails.
    const call = (command: string) =>
      runPluginSync(inNode, {
        command,
        containerId: pod.id,
        ifname: 'eth0',
        netns: `/var/run/netns/${pod.ns}`,
        path: `${binDir}:/usr/lib/cni`,
        config: conf,
        env: { PODIPAM_PLUGIN: '' },
      });
    const add = call('ADD');
    assert.equal(add.code, 0, `ADD: ${add.stdout} ${add.stderr}`);
    const ip = (JSON.parse(add.stdout) as { ips: { address: string }[] }).ips[0]!.address;
    assert.ok(ip.startsWith(`10.215.${octet}.`), ip);
    assert.ok(sh('ip', ['-n', pod.ns, 'addr', 'show', 'dev', 'eth0']).out.includes(`inet ${ip.split('/')[0]}/`));
    const del = call('DEL');
    assert.equal(del.code, 0, `DEL: ${del.stdout} ${del.stderr}`);
    const st = await agent.status();
    assert.equal(st.requests.ADD?.ok, 1, 'the agent served the ADD');
    assert.equal(st.requests.DEL?.ok, 1, 'the agent served the DEL');
  } finally {
    await agent.stop();
    for (const ns of created.reverse()) sh('ip', ['netns', 'del', ns]);
    root.remove();
  }
});

test('install-cni --backend cluster, the documented way: a pod reaches an address beyond its block through its default route', () => {
  assert.equal(process.getuid?.(), 0, 'needs root (network namespaces)');
  assert.ok(sh('ip', ['netns', 'list']).ok, 'needs ip netns');
  requireShim();
  const tag = `${process.pid.toString(36)}${randomBytes(2).toString('hex')}`.slice(-8);
  const octet = 16 + (randomBytes(1)[0]! % 200);
  const root = makeTempDir('install-route-e2e');
  const binDir = join(root.path, 'opt/cni/bin');
  const confDir = join(root.path, 'etc/cni/net.d');
  const datastore = `sqlite:${join(root.path, 'podipam.db')}`;
  // The "node" is a namespace of this test: the host-side veth, its gateway and the address beyond the
  // pod's block (another node's pod, a service, the internet) live there, so no traffic and no
  // setting touches the host's own namespace.
  const nodeNs = `podipam-node-${tag}`;
  const beyond = '198.51.100.7';
  const pod = { id: `ctrr${tag}`, ns: `podipam-route-${tag}` };
  const created: string[] = [];
  try {
    for (const ns of [nodeNs, pod.ns]) {
      assert.ok(sh('ip', ['netns', 'add', ns]).ok, `ip netns add ${ns}`);
      created.push(ns);
    }
    assert.ok(sh('ip', ['-n', nodeNs, 'link', 'set', 'lo', 'up']).ok);
    assert.ok(sh('ip', ['-n', nodeNs, 'addr', 'add', `${beyond}/32`, 'dev', 'lo']).ok);
    const pool = spawnSync(PODIPAM_BIN, ['pool', 'create', `route-${tag}`, '--cidr', `10.216.${octet}.0/24`, '--block-size', '28', '--datastore', datastore], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(pool.status, 0, pool.stdout + pool.stderr);
    const inst = spawnSync(
      PODIPAM_BIN,
      [
        'install-cni',
        '--bin-dir',
        binDir,
        '--conf-dir',
        confDir,
        '--backend',
        'cluster',
        '--datastore',
        datastore,
        '--node-name',
        `node-${tag}`,
        '--no-ip-masq',
      ],
      { encoding: 'utf8', timeout: 30_000 },
    );
    assert.equal(inst.status, 0, inst.stdout + inst.stderr);
    const file = readdirSync(confDir)
      .filter((f) => f.endsWith('.conflist'))
      .sort()[0]!;
    const list = JSON.parse(readFileSync(join(confDir, file), 'utf8')) as { cniVersion: string; name: string; plugins: Record<string, unknown>[] };
    const conf: Record<string, unknown> = { cniVersion: list.cniVersion, name: list.name, ...list.plugins[0]! };
    assert.equal(conf.type, 'ptp', 'the cluster back end defaults to ptp');
    // The runtime runs in the node's namespace.
    const inNode = join(root.path, 'in-node');
    writeFileSync(inNode, `#!/bin/sh\nexec ip netns exec ${nodeNs} /usr/lib/cni/${String(conf.type)}\n`, { mode: 0o755 });
    const call = (command: string) =>
      runPluginSync(inNode, {
        command,
        containerId: pod.id,
        ifname: 'eth0',
        netns: `/var/run/netns/${pod.ns}`,
        path: `${binDir}:/usr/lib/cni`,
        config: conf,
        env: { PODIPAM_CNI_LOG: join(root.path, 'cni.log') },
      });
    const add = call('ADD');
    assert.equal(add.code, 0, `ADD: ${add.stdout} ${add.stderr}`);
    const ip = (JSON.parse(add.stdout) as { ips: { address: string }[] }).ips[0]!.address;
    assert.match(ip, new RegExp(`^10\\.216\\.${octet}\\.\\d+/28$`));
    const shown = sh('ip', ['-n', pod.ns, 'route', 'show', 'default']);
    assert.match(shown.out, /^default via 10\.216\./m, `the pod has no default route:\n${shown.out}`);
    const pinged = ping(pod.ns, beyond);
    assert.ok(pinged.ok, `${ip} -> ${beyond} (beyond its block): ${pinged.out}`);
    const del = call('DEL');
    assert.equal(del.code, 0, `DEL: ${del.stdout} ${del.stderr}`);
    const un = spawnSync(PODIPAM_BIN, ['uninstall-cni', '--conf-dir', confDir, '--bin-dir', binDir], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(un.status, 0, un.stdout + un.stderr);
  } finally {
    for (const ns of created.reverse()) sh('ip', ['netns', 'del', ns]);
    root.remove();
  }
});
