/**
 * Several blocks on one node, through the conflist `podipam install-cni --backend cluster` writes
 * by default (ptp, ipMasq off) and the shim it installs, on a SQLite datastore, in real network
 * namespaces. The pools are small on purpose: IPv4 /30 blocks (one pod each) and IPv6 /126
 * blocks (two pods each), so three dual-stack pods take three IPv4 blocks and two IPv6 blocks;
 * a fourth pod is placed in another pool by its `podipam.io/pools` annotation (the runtime
 * hands it over in runtimeConfig, as containerd does for the declared capability). Every pod
 * must get its addresses, reach every other pod (IPv4 and IPv6) and the node; CHECK passes; DEL
 * of every pod leaves the node as it was: no veth, no pod route, no gateway address, no
 * masquerade chain, nothing allocated.
 *
 * NAT: `podipam masquerade sync`, run in the node, writes the PODIPAM-MASQ chains from the pools;
 * a pod reaching a pod of another block or pool is seen by it with its own address (IPv4 and
 * IPv6: no source NAT between pods, which ptp's own ipMasq did across blocks), a pod reaching a
 * host outside the pools (a namespace standing for "outside", beside the node) is seen with the
 * node's address; `podipam masquerade remove` leaves no rule.
 *
 * The second test is the reason ptp is the default there: the reference bridge plugin with the
 * same back end fails the node's second IPv4 block ("already has an IP address different
 * from …"), which is why install-cni refuses `--interface bridge` with cluster and agent.
 *
 * The "node" is a namespace of the test: the runtime runs the interface plugin in it (so its
 * veths, routes, forwarding and iptables rules live there), and the node's own address is on its
 * loopback. Every namespace and temp dir is removed, pass or fail; no traffic, route or setting
 * touches the host's namespace. Missing prerequisites FAIL the test.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { formatPrefix, parseCidr, prefixOf } from '../../src/ip/index.js';
import { PODIPAM_BIN, runCliSync, runPluginSync } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';
import { ping, sh, sourceSeenBy, waitDadDone } from '../helpers/netns.js';
import { requireShim } from '../helpers/agent.js';

interface CniResult {
  ips: { address: string; gateway?: string }[];
  routes?: { dst: string; gw?: string }[];
}

/** What is missing to run these tests, or [] when everything is there. */
function missing(plugins: readonly string[]): string[] {
  const out: string[] = [];
  if (process.getuid?.() !== 0) out.push('root (network namespaces)');
  for (const p of plugins) if (!existsSync(`/usr/lib/cni/${p}`)) out.push(`/usr/lib/cni/${p} (Debian containernetworking-plugins)`);
  if (!existsSync(PODIPAM_BIN)) out.push(`${PODIPAM_BIN} (build first)`);
  if (!sh('ip', ['netns', 'list']).ok) out.push('`ip netns` (iproute2)');
  for (const bin of ['ping', 'sysctl', 'iptables', 'ip6tables']) if (!sh('sh', ['-c', `command -v ${bin}`]).ok) out.push(`${bin} on PATH`);
  return out;
}

/** A test's node namespace, its pods' namespaces and its install root; `done()` removes them all. */
function rig(label: string) {
  const tag = `${process.pid.toString(36)}${randomBytes(2).toString('hex')}`.slice(-8);
  const root = makeTempDir(`blocks-${label}`);
  const nodeNs = `pdblk-${tag}-node`;
  const created: string[] = [];
  const nsAdd = (ns: string): void => {
    const r = sh('ip', ['netns', 'add', ns]);
    assert.ok(r.ok, `ip netns add ${ns}: ${r.out}`);
    created.push(ns);
    must('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
  };
  return {
    tag,
    root,
    nodeNs,
    datastore: `sqlite:${join(root.path, 'podipam.db')}`,
    binDir: join(root.path, 'opt/cni/bin'),
    confDir: join(root.path, 'etc/cni/net.d'),
    nsAdd,
    pod: (i: number) => ({ id: `ctr${tag}${i}`, ns: `pdblk-${tag}-${i}`, name: `web-${i}` }),
    done: (): void => {
      // Pods first, then the node (deleting a namespace deletes its veth ends, routes and rules).
      for (const ns of created.reverse()) sh('ip', ['netns', 'del', ns]);
      root.remove();
    },
  };
}

function must(cmd: string, args: readonly string[]): string {
  const r = sh(cmd, args);
  assert.ok(r.ok, `${cmd} ${args.join(' ')}: ${r.out}`);
  return r.out;
}

/** The network config a runtime takes from the conf dir: the first conflist's first plugin, with name and cniVersion. */
function installedConf(confDir: string): Record<string, unknown> {
  const file = readdirSync(confDir)
    .filter((f) => f.endsWith('.conflist'))
    .sort()[0];
  assert.ok(file !== undefined, `no conflist in ${confDir}`);
  const list = JSON.parse(readFileSync(join(confDir, file), 'utf8')) as { cniVersion: string; name: string; plugins: Record<string, unknown>[] };
  assert.equal(list.plugins.length, 1, 'one plugin (no portmap asked)');
  return { cniVersion: list.cniVersion, name: list.name, ...list.plugins[0]! };
}

/** A script running `plugin` inside the node namespace: the runtime's side of the node. */
function inNode(dir: string, nodeNs: string, plugin: string): string {
  const file = join(dir, `in-node-${plugin}`);
  writeFileSync(file, `#!/bin/sh\nexec ip netns exec ${nodeNs} /usr/lib/cni/${plugin}\n`, { mode: 0o755 });
  return file;
}

const addrOf = (cidr: string): string => cidr.split('/')[0]!;
const blockOf = (cidr: string): string => {
  const { addr, len } = parseCidr(cidr);
  return formatPrefix(prefixOf(addr, len));
};

test(
  'install-cni --backend cluster (default ptp): pods in several blocks and pools on one node get addresses, reach each other and the node; DEL leaves nothing',
  { timeout: 180_000 },
  async (t) => {
    const lacking = missing(['ptp']);
    if (lacking.length > 0) assert.fail(`cannot run the several-blocks test: missing ${lacking.join(', ')}`);
    requireShim();
    const r = rig('ptp');
    const octet = 16 + (randomBytes(1)[0]! % 200);
    const nodeAddr = '198.51.100.9';
    const nodeName = `node-${r.tag}`;
    try {
      const cli = (args: readonly string[]): string => {
        const res = runCliSync(r.datastore, args);
        assert.equal(res.code, 0, `podipam ${args.join(' ')}: ${res.stdout}${res.stderr}`);
        return res.stdout;
      };
      cli(['pool', 'create', `main-v4-${r.tag}`, '--cidr', `10.217.${octet}.0/26`, '--block-size', '30']);
      cli(['pool', 'create', `main-v6-${r.tag}`, '--cidr', `fd00:217:${octet.toString(16)}::/120`, '--block-size', '126']);
      // Created after main-v4 (so the pods without annotations draw from main-v4 first): the annotated pod's pool.
      cli(['pool', 'create', `other-${r.tag}`, '--cidr', `10.218.${octet}.0/28`, '--block-size', '29']);
      const inst = spawnSync(
        PODIPAM_BIN,
        ['install-cni', '--bin-dir', r.binDir, '--conf-dir', r.confDir, '--backend', 'cluster', '--datastore', r.datastore, '--node-name', nodeName],
        {
          encoding: 'utf8',
          timeout: 30_000,
        },
      );
      assert.equal(inst.status, 0, inst.stdout + inst.stderr);
      const conf = installedConf(r.confDir);
      assert.equal(conf.type, 'ptp', `the cluster back end's default interface: ${JSON.stringify(conf)}`);
      assert.equal(conf.ipMasq, false, 'ptp does not masquerade (relative to a block it would NAT pod-to-pod traffic); podipam masquerade does');

      r.nsAdd(r.nodeNs);
      must('ip', ['-n', r.nodeNs, 'addr', 'add', `${nodeAddr}/32`, 'dev', 'lo']);
      // "Outside": a host beside the node, on a link of its own, with no route to the pods (so an
      // unmasqueraded packet could not even be answered), IPv4 and IPv6.
      const outsideNs = `pdblk-${r.tag}-out`;
      r.nsAdd(outsideNs);
      must('ip', ['-n', r.nodeNs, 'link', 'add', 'uplink', 'type', 'veth', 'peer', 'name', 'eth0', 'netns', outsideNs]);
      must('ip', ['netns', 'exec', outsideNs, 'sysctl', '-qw', 'net.ipv6.conf.eth0.accept_dad=0']);
      must('ip', ['netns', 'exec', r.nodeNs, 'sysctl', '-qw', 'net.ipv6.conf.uplink.accept_dad=0']);
      for (const [ns, dev, a4, a6] of [
        [r.nodeNs, 'uplink', '192.0.2.1/24', '2001:db8:9::1/64'],
        [outsideNs, 'eth0', '192.0.2.2/24', '2001:db8:9::2/64'],
      ] as const) {
        must('ip', ['-n', ns, 'addr', 'add', a4, 'dev', dev]);
        must('ip', ['-n', ns, '-6', 'addr', 'add', a6, 'dev', dev, 'nodad']);
        must('ip', ['-n', ns, 'link', 'set', dev, 'up']);
      }
      const masq = spawnSync('ip', ['netns', 'exec', r.nodeNs, PODIPAM_BIN, '--datastore', r.datastore, 'masquerade', 'sync', '--json'], {
        encoding: 'utf8',
        timeout: 30_000,
      });
      assert.equal(masq.status, 0, masq.stdout + masq.stderr);
      const synced = JSON.parse(masq.stdout) as { items: { family: number; state: string; cidrs: string[] }[] };
      assert.deepEqual(
        synced.items.map((f) => [f.family, f.state, f.cidrs]),
        [
          [4, 'synced', [`10.217.${octet}.0/26`, `10.218.${octet}.0/28`]],
          [6, 'synced', [`fd00:217:${octet.toString(16)}::/120`]],
        ],
      );
      const ptp = inNode(r.root.path, r.nodeNs, 'ptp');
      const call = (command: string, pod: ReturnType<typeof r.pod>, extra: Record<string, unknown> = {}) =>
        runPluginSync(ptp, {
          command,
          containerId: pod.id,
          ifname: 'eth0',
          netns: `/var/run/netns/${pod.ns}`,
          args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=shop;K8S_POD_NAME=${pod.name};K8S_POD_INFRA_CONTAINER_ID=${pod.id}`,
          path: `${r.binDir}:/usr/lib/cni`,
          config: { ...conf, ...extra },
          env: { PODIPAM_CNI_LOG: join(r.root.path, 'cni.log') },
        });

      // Three pods of the node's pools (dual-stack), then one the annotation puts in the other pool.
      const pods = [0, 1, 2, 3].map((i) => r.pod(i));
      const annotated = { runtimeConfig: { 'io.kubernetes.cri.pod-annotations': { 'podipam.io/pools': `other-${r.tag}` } } };
      const results: CniResult[] = [];
      for (const [i, pod] of pods.entries()) {
        r.nsAdd(pod.ns);
        must('ip', ['netns', 'exec', pod.ns, 'sysctl', '-qw', 'net.ipv6.conf.default.accept_dad=0']);
        const add = call('ADD', pod, i === 3 ? annotated : {});
        assert.equal(add.code, 0, `ADD ${pod.name}: ${add.stdout} ${add.stderr}`);
        results.push(JSON.parse(add.stdout) as CniResult);
      }
      t.diagnostic(`pods: ${results.map((res, i) => `${pods[i]!.name} ${res.ips.map((ip) => `${ip.address} gw ${ip.gateway}`).join(' ')}`).join('; ')}`);
      const v4 = results.map((res) => res.ips.find((ip) => !ip.address.includes(':'))!);
      const v6 = results.slice(0, 3).map((res) => res.ips.find((ip) => ip.address.includes(':'))!);
      assert.ok(
        v4.every((ip) => ip !== undefined),
        'every pod has an IPv4 address',
      );
      assert.ok(
        v6.every((ip) => ip !== undefined),
        'the node-pool pods have an IPv6 address',
      );
      assert.equal(results[3]!.ips.length, 1, `the annotated pod draws only from its pool: ${JSON.stringify(results[3])}`);
      for (const ip of v4.slice(0, 3)) assert.match(ip.address, new RegExp(`^10\\.217\\.${octet}\\.\\d+/30$`));
      assert.match(v4[3]!.address, new RegExp(`^10\\.218\\.${octet}\\.\\d+/29$`));
      const v4Blocks = new Set(v4.map((ip) => blockOf(ip.address)));
      const v6Blocks = new Set(v6.map((ip) => blockOf(ip.address)));
      assert.equal(v4Blocks.size, 4, `four IPv4 blocks on one node: ${[...v4Blocks].join(', ')}`);
      assert.equal(v6Blocks.size, 2, `two IPv6 blocks on one node: ${[...v6Blocks].join(', ')}`);
      // The datastore agrees: every one of those blocks is this node's.
      const shown = JSON.parse(cli(['ipam', 'show', '--blocks', '--json'])) as { blocks: { cidr: string; node: string }[] };
      assert.deepEqual(
        shown.blocks
          .filter((b) => b.node === nodeName)
          .map((b) => b.cidr)
          .sort(),
        [...v4Blocks, ...v6Blocks].sort(),
      );
      // The annotated pod has only IPv4 routes (a route of a family it has no address of would fail ptp).
      assert.deepEqual(
        results[3]!.routes?.map((x) => x.dst),
        ['0.0.0.0/0'],
      );

      // Each pod's default routes go through its own block's gateway, on its own veth.
      for (const [i, pod] of pods.entries()) {
        const routes = must('ip', ['-n', pod.ns, 'route', 'show', 'default']);
        assert.match(routes, new RegExp(`^default via ${v4[i]!.gateway!.replaceAll('.', '\\.')} dev eth0`, 'm'), `${pod.name}:\n${routes}`);
        if (i < 3) {
          const routes6 = must('ip', ['-n', pod.ns, '-6', 'route', 'show', 'default']);
          assert.ok(routes6.includes(`default via ${v6[i]!.gateway!} dev eth0`), `${pod.name}:\n${routes6}`);
        }
      }
      for (const pod of pods) await waitDadDone(pod.ns);

      // Every pod reaches every other pod (across blocks and pools) and the node.
      for (const [i, pod] of pods.entries()) {
        const peers = [
          ...v4.filter((_, j) => j !== i).map((ip) => addrOf(ip.address)),
          ...(i < 3 ? v6.filter((_, j) => j !== i).map((ip) => addrOf(ip.address)) : []),
        ];
        for (const peer of [...peers, nodeAddr]) {
          const p = ping(pod.ns, peer);
          assert.ok(
            p.ok,
            `${pod.name} (${results[i]!.ips.map((ip) => ip.address).join(', ')}) cannot reach ${peer}:\n${p.out}\n${must('ip', ['-n', pod.ns, 'route', 'show', 'table', 'all'])}`,
          );
        }
      }
      // No NAT between pods: across blocks of one pool and across pools, IPv4 and IPv6, the
      // receiver sees the sender's own address; ptp wrote no masquerade of its own.
      let port = 20_000 + (randomBytes(2).readUInt16BE() % 20_000);
      const pairs: [number, number, 'v4' | 'v6'][] = [
        [0, 1, 'v4'],
        [1, 2, 'v4'],
        [0, 3, 'v4'],
        [3, 2, 'v4'],
        [0, 1, 'v6'],
        [2, 0, 'v6'],
      ];
      for (const [from, to, fam] of pairs) {
        const [src, dst] = fam === 'v4' ? [v4[from]!, v4[to]!] : [v6[from]!, v6[to]!];
        const seen = await sourceSeenBy(pods[to]!.ns, addrOf(dst.address), port++, pods[from]!.ns);
        assert.equal(
          seen,
          addrOf(src.address),
          `${pods[to]!.name} (${dst.address}) sees ${pods[from]!.name} (${src.address}) as ${seen}: source NAT between pods`,
        );
      }
      for (const ipt of ['iptables', 'ip6tables']) {
        const nat = must('ip', ['netns', 'exec', r.nodeNs, ipt, '-t', 'nat', '-S']);
        assert.doesNotMatch(nat, /CNI-/, `${ipt}: ptp added a masquerade chain:\n${nat}`);
        assert.match(nat, /^-A POSTROUTING .*-j PODIPAM-MASQ$/m, `${ipt}: no jump to PODIPAM-MASQ:\n${nat}`);
      }
      // Traffic leaving the pools is masqueraded: the outside host sees the node's address.
      for (const [i, fam] of [
        [0, 'v4'],
        [3, 'v4'],
        [1, 'v6'],
      ] as const) {
        const [target, node] = fam === 'v4' ? ['192.0.2.2', '192.0.2.1'] : ['2001:db8:9::2', '2001:db8:9::1'];
        const seen = await sourceSeenBy(outsideNs, target, port++, pods[i]!.ns);
        assert.equal(seen, node, `the outside host sees ${pods[i]!.name} as ${seen}, not as the node (${node})`);
      }

      const check = call('CHECK', pods[3]!, { ...annotated, prevResult: results[3] });
      assert.equal(check.code, 0, `CHECK: ${check.stdout} ${check.stderr}`);

      // DEL every pod: the node is left as it was, and nothing is allocated.
      for (const [i, pod] of pods.entries()) {
        const del = call('DEL', pod, i === 3 ? annotated : {});
        assert.equal(del.code, 0, `DEL ${pod.name}: ${del.stdout} ${del.stderr}`);
      }
      const veths = must('ip', ['-n', r.nodeNs, '-o', 'link', 'show', 'type', 'veth'])
        .split('\n')
        .filter((l) => l.trim() !== '' && !/^\d+: uplink@/.test(l));
      assert.deepEqual(veths, [], "no pod veth left on the node (the uplink to the outside host is the test's)");
      for (const family of ['-4', '-6']) {
        const routes = must('ip', ['-n', r.nodeNs, family, 'route', 'show', 'table', 'all']);
        assert.doesNotMatch(routes, /10\.21[78]\.|fd00:217:/, `no pod route left on the node:\n${routes}`);
        const addrs = must('ip', ['-n', r.nodeNs, family, 'addr', 'show']);
        assert.doesNotMatch(addrs, /10\.21[78]\.|fd00:217:/, `no gateway address left on the node:\n${addrs}`);
      }
      const removed = spawnSync('ip', ['netns', 'exec', r.nodeNs, PODIPAM_BIN, 'masquerade', 'remove', '--json'], { encoding: 'utf8', timeout: 30_000 });
      assert.equal(removed.status, 0, removed.stdout + removed.stderr);
      assert.deepEqual(
        (JSON.parse(removed.stdout) as { items: { state: string }[] }).items.map((f) => f.state),
        ['removed', 'removed'],
      );
      for (const ipt of ['iptables', 'ip6tables']) {
        const nat = must('ip', ['netns', 'exec', r.nodeNs, ipt, '-t', 'nat', '-S']);
        assert.doesNotMatch(nat, /CNI-|PODIPAM|10\.21[78]\.|fd00:217:/, `${ipt}: no masquerade rule left on the node:\n${nat}`);
      }
      const after = JSON.parse(cli(['ipam', 'show', '--json'])) as { items: { allocated: number }[] };
      assert.deepEqual(
        after.items.map((p) => p.allocated),
        [0, 0, 0],
        'nothing allocated',
      );
      const ipamCheck = runCliSync(r.datastore, ['ipam', 'check', '--json']);
      assert.deepEqual(JSON.parse(ipamCheck.stdout), { leaks: [], problems: [] }, ipamCheck.stderr);
    } finally {
      r.done();
    }
    assert.ok(!sh('ip', ['netns', 'list']).out.includes(`pdblk-${r.tag}`), 'every namespace of the test is gone');
  },
);

test("why not bridge with the block back ends: the reference bridge plugin fails the node's second IPv4 block", { timeout: 60_000 }, () => {
  const lacking = missing(['bridge']);
  if (lacking.length > 0) assert.fail(`cannot run the bridge test: missing ${lacking.join(', ')}`);
  const r = rig('br');
  const octet = 16 + (randomBytes(1)[0]! % 200);
  try {
    const pool = runCliSync(r.datastore, ['pool', 'create', `br-${r.tag}`, '--cidr', `10.219.${octet}.0/26`, '--block-size', '30']);
    assert.equal(pool.code, 0, pool.stderr);
    // What install-cni wrote before ptp became the default there (it now refuses --interface bridge).
    const refused = spawnSync(
      PODIPAM_BIN,
      ['install-cni', '--bin-dir', r.binDir, '--conf-dir', r.confDir, '--backend', 'cluster', '--datastore', r.datastore, '--interface', 'bridge'],
      { encoding: 'utf8', timeout: 30_000 },
    );
    assert.equal(refused.status, 2, refused.stdout + refused.stderr);
    assert.match(refused.stderr, /one IPv4 gateway address per bridge/);
    const conf = {
      cniVersion: '1.0.0',
      name: `br-${r.tag}`,
      type: 'bridge',
      bridge: 'cni0',
      isGateway: true,
      isDefaultGateway: true,
      ipMasq: false,
      ipam: { type: 'podipam', datastore: r.datastore, nodeName: `node-${r.tag}` },
    };
    r.nsAdd(r.nodeNs);
    const bridge = inNode(r.root.path, r.nodeNs, 'bridge');
    const path = binDirWith(r.root.path);
    const call = (command: string, pod: ReturnType<typeof r.pod>) =>
      runPluginSync(bridge, { command, containerId: pod.id, ifname: 'eth0', netns: `/var/run/netns/${pod.ns}`, path, config: conf });
    const [first, second] = [r.pod(0), r.pod(1)];
    r.nsAdd(first.ns);
    r.nsAdd(second.ns);
    const a = call('ADD', first);
    assert.equal(a.code, 0, `first ADD: ${a.stdout} ${a.stderr}`);
    const b = call('ADD', second);
    assert.notEqual(
      b.code,
      0,
      `the second block's ADD succeeded: bridge now holds several IPv4 gateways, and install-cni's refusal can be lifted:\n${b.stdout}`,
    );
    assert.match((JSON.parse(b.stdout) as { msg: string }).msg, /"cni0" already has an IP address different from 10\.219\./);
    for (const pod of [first, second]) {
      const del = call('DEL', pod);
      assert.equal(del.code, 0, `DEL ${pod.id}: ${del.stdout} ${del.stderr}`);
    }
  } finally {
    r.done();
  }
});

/** A CNI bin dir holding `podipam` (the built plugin), made once in `root`. */
function binDirWith(root: string): string {
  const dir = join(root, 'plugin-bin');
  if (!existsSync(dir)) {
    must('mkdir', ['-p', dir]);
    must('ln', ['-s', PODIPAM_BIN, join(dir, 'podipam')]);
  }
  return `${dir}:/usr/lib/cni`;
}
