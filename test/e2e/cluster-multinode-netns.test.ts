/**
 * Cluster mode across two nodes, on real network namespaces: two "node" namespaces, each
 * running the reference `bridge` plugin (`ip netns exec <node> /usr/lib/cni/bridge`, so the
 * bridge and the pods' host-side veths live in the node) with podipam as its IPAM — cluster
 * mode on one shared SQLite file, a different nodeName per node — for two pod namespaces of
 * its own, dual-stack. The nodes are joined by a veth pair and route each other's blocks
 * (read from the results: each address carries its block's prefix and gateway). Pods on
 * different nodes must ping each other over IPv4 and IPv6; every address must avoid its
 * block's network, broadcast and gateway address. With `podipam masquerade sync` run in each
 * node, a pod reaching a pod of the other node is seen with its own address (no NAT between
 * pods, IPv4 and IPv6) and a pod reaching the other node's own address (outside every pool) is
 * seen with its node's address. DEL of every pod must leave no allocation
 * and a clean `ipam check`. Every namespace and temp dir is removed at the end, pass or fail;
 * traffic stays between the namespaces the test made. Missing prerequisites FAIL the test.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { type Prefix, formatAddr, formatPrefix, parseCidr, prefixLast, prefixOf } from '../../src/ip/index.js';
import { HANDLE_PREFIX } from '../../src/cluster/records/keys.js';
import { openStore } from '../../src/store/index.js';
import { BRIDGE_BIN, PODIPAM_BIN, runCliSync } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';
import { sourceSeenBy } from '../helpers/netns.js';

function sh(cmd: string, args: readonly string[], input?: string, env?: NodeJS.ProcessEnv): { ok: boolean; code: number | null; out: string; stdout: string } {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 30_000, input, env: env ?? process.env });
  return { ok: r.status === 0, code: r.status, out: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}`, stdout: r.stdout ?? '' };
}

/** What is missing to run this test, or [] when everything is there. */
function missing(): string[] {
  const out: string[] = [];
  if (process.getuid?.() !== 0) out.push('root (network namespaces)');
  if (!existsSync(BRIDGE_BIN)) out.push(`${BRIDGE_BIN} (Debian containernetworking-plugins)`);
  if (!existsSync(PODIPAM_BIN)) out.push(`${PODIPAM_BIN} (build first)`);
  if (!sh('ip', ['netns', 'list']).ok) out.push('`ip netns` (iproute2)');
  for (const bin of ['ping', 'sysctl', 'iptables-restore', 'ip6tables-restore']) if (!sh('sh', ['-c', `command -v ${bin}`]).ok) out.push(`${bin} on PATH`);
  return out;
}

// Names unique to this process and run: other tests create namespaces at the same time.
const tag = `${process.pid.toString(36)}${randomBytes(2).toString('hex')}`;
const NET = `mn-${tag}`;
const nodes = ['a', 'b'].map((n) => ({
  name: `node-${n}-${tag}`,
  ns: `pdmn-${tag}-${n}`,
  /** The node's end of the node-to-node veth and its addresses on that link. */
  link: n === 'a' ? { dev: 'pdlinka', v4: '192.168.254.1', v6: 'fdff:254::1' } : { dev: 'pdlinkb', v4: '192.168.254.2', v6: 'fdff:254::2' },
  pods: [0, 1].map((i) => ({ id: `pod-${n}${i}-${tag}`, ns: `pdmn-${tag}-${n}${i}` })),
}));
const created: string[] = [];
const tmp = makeTempDir('multinode');

after(() => {
  // Pods first, then the nodes (deleting a node namespace deletes its bridge and veths).
  for (const ns of [...created].reverse()) sh('ip', ['netns', 'del', ns]);
  tmp.remove();
});

function nsAdd(ns: string): void {
  const r = sh('ip', ['netns', 'add', ns]);
  assert.ok(r.ok, `ip netns add ${ns}: ${r.out}`);
  created.push(ns);
  must('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
}

function must(cmd: string, args: readonly string[]): string {
  const r = sh(cmd, args);
  assert.ok(r.ok, `${cmd} ${args.join(' ')}: ${r.out}`);
  return r.stdout;
}

/** Waits (bounded) until no IPv6 address in `ns` is tentative (duplicate address detection). */
async function settled(ns: string): Promise<void> {
  let out = '';
  for (let i = 0; i < 50; i++) {
    out = sh('ip', ['-n', ns, '-6', 'addr', 'show', 'tentative']).stdout.trim();
    if (out === '') return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`IPv6 addresses in ${ns} still tentative after 5 s:\n${out}`);
}

/** ping -c1 -W2 from `ns` to `ip`, up to three tries (the first may wait on neighbour discovery). */
function ping(ns: string, ip: string): { ok: boolean; out: string } {
  let r = sh('ip', ['netns', 'exec', ns, 'ping', '-c1', '-W2', ip]);
  for (let attempt = 1; !r.ok && attempt < 3; attempt++) r = sh('ip', ['netns', 'exec', ns, 'ping', '-c1', '-W2', ip]);
  return r;
}

interface BridgeResult {
  ips: { address: string; gateway?: string }[];
}

test(
  'cluster mode on two nodes: bridge + podipam per node, dual-stack pods ping across nodes over IPv4 and IPv6; DEL leaves nothing',
  { timeout: 180_000 },
  async (t) => {
    const lacking = missing();
    if (lacking.length > 0) assert.fail(`cannot run the multi-node test: missing ${lacking.join(', ')}`);

    const db = `sqlite:${join(tmp.path, 'ipam.db')}`;
    for (const [name, cidr] of [
      ['mn-v4', '10.123.0.0/16'],
      ['mn-v6', 'fd00:123::/56'],
    ]) {
      const r = runCliSync(db, ['pool', 'create', name!, '--cidr', cidr!]);
      assert.equal(r.code, 0, r.stderr);
    }
    const binDir = join(tmp.path, 'bin');
    mkdirSync(binDir);
    symlinkSync(PODIPAM_BIN, join(binDir, 'podipam'));

    // Two nodes: forwarding on, DAD off (addresses usable at once), joined by a veth pair.
    for (const n of nodes) {
      nsAdd(n.ns);
      for (const kv of [
        'net.ipv4.ip_forward=1',
        'net.ipv6.conf.all.forwarding=1',
        'net.ipv6.conf.all.accept_dad=0',
        'net.ipv6.conf.default.accept_dad=0',
        'net.ipv4.conf.all.rp_filter=0',
        'net.ipv4.conf.default.rp_filter=0',
      ]) {
        must('ip', ['netns', 'exec', n.ns, 'sysctl', '-qw', kv]);
      }
    }
    const [A, B] = nodes as [(typeof nodes)[number], (typeof nodes)[number]];
    must('ip', ['-n', A.ns, 'link', 'add', A.link.dev, 'type', 'veth', 'peer', 'name', B.link.dev, 'netns', B.ns]);
    for (const n of nodes) {
      must('ip', ['-n', n.ns, 'addr', 'add', `${n.link.v4}/30`, 'dev', n.link.dev]);
      must('ip', ['-n', n.ns, 'addr', 'add', `${n.link.v6}/64`, 'dev', n.link.dev, 'nodad']);
      must('ip', ['-n', n.ns, 'link', 'set', n.link.dev, 'up']);
    }

    // Each node's bridge plugin, run inside the node namespace, adds its two pods.
    const conf = (n: (typeof nodes)[number]) => ({
      cniVersion: '1.0.0',
      name: NET,
      type: 'bridge',
      bridge: 'pdbr0',
      isGateway: true,
      isDefaultGateway: true,
      ipMasq: false,
      ipam: { type: 'podipam', datastore: db, nodeName: n.name, cacheDir: join(tmp.path, `cache-${n.name}`) },
    });
    const bridge = (command: string, n: (typeof nodes)[number], pod: { id: string; ns: string }) =>
      sh('ip', ['netns', 'exec', n.ns, BRIDGE_BIN], JSON.stringify(conf(n)), {
        PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin',
        CNI_COMMAND: command,
        CNI_CONTAINERID: pod.id,
        CNI_NETNS: `/var/run/netns/${pod.ns}`,
        CNI_IFNAME: 'eth0',
        CNI_PATH: binDir,
      });
    const pods: { node: (typeof nodes)[number]; pod: { id: string; ns: string }; v4: string; v6: string; blocks: Prefix[] }[] = [];
    for (const n of nodes) {
      for (const pod of n.pods) {
        nsAdd(pod.ns);
        const r = bridge('ADD', n, pod);
        assert.equal(r.code, 0, `bridge ADD ${pod.id} on ${n.name}: ${r.out}`);
        const result = JSON.parse(r.stdout) as BridgeResult;
        assert.equal(result.ips.length, 2, r.stdout);
        const blocks: Prefix[] = [];
        for (const ip of result.ips) {
          // The addressing model: the block's prefix, its first usable address as the gateway,
          // and never the block's network, broadcast or gateway address.
          const { addr, len } = parseCidr(ip.address);
          const block = prefixOf(addr, len);
          assert.equal(len, addr.family === 4 ? 26 : 122, `${ip.address} carries its block's prefix`);
          assert.equal(ip.gateway, formatAddr({ family: addr.family, value: block.base + 1n }), `${ip.address}: gateway`);
          assert.ok(addr.value !== block.base && addr.value !== block.base + 1n, `${ip.address} is its block's network address or gateway`);
          if (addr.family === 4) assert.ok(addr.value !== prefixLast(block).value, `${ip.address} is its block's broadcast address`);
          blocks.push(block);
        }
        const addr = (f: 4 | 6) => formatAddr(parseCidr(result.ips.find((i) => parseCidr(i.address).addr.family === f)!.address).addr);
        pods.push({ node: n, pod, v4: addr(4), v6: addr(6), blocks });
      }
    }
    t.diagnostic(`pods: ${pods.map((p) => `${p.pod.id} ${p.v4} ${p.v6}`).join('; ')}`);
    assert.equal(new Set(pods.flatMap((p) => [p.v4, p.v6])).size, 8, 'every address distinct');

    // The blocks each node holds, from the results, agree with `ipam show --blocks`.
    const shown = JSON.parse(runCliSync(db, ['ipam', 'show', '--blocks', '--json']).stdout) as { blocks: { cidr: string; node: string }[] };
    const blocksOf = (n: (typeof nodes)[number]) => [...new Set(pods.filter((p) => p.node === n).flatMap((p) => p.blocks.map(formatPrefix)))].sort();
    for (const n of nodes) {
      assert.deepEqual(
        shown.blocks
          .filter((b) => b.node === n.name)
          .map((b) => b.cidr)
          .sort(),
        blocksOf(n),
        `blocks of ${n.name}`,
      );
    }
    // Each bridge holds its blocks' gateways.
    for (const n of nodes) {
      const onBridge = must('ip', ['-n', n.ns, 'addr', 'show', 'dev', 'pdbr0']);
      for (const cidr of blocksOf(n)) {
        const p = parseCidr(cidr);
        const gw = `${formatAddr({ family: p.addr.family, value: p.addr.value + 1n })}/${p.len}`;
        assert.ok(onBridge.includes(` ${gw} `), `${n.name}'s bridge lacks gateway ${gw}:\n${onBridge}`);
      }
    }

    // Each node routes the other's blocks through the node-to-node link.
    for (const [n, peer] of [
      [A, B],
      [B, A],
    ] as const) {
      for (const cidr of blocksOf(peer)) {
        const via = cidr.includes(':') ? peer.link.v6 : peer.link.v4;
        must('ip', ['-n', n.ns, 'route', 'add', cidr, 'via', via, 'dev', n.link.dev]);
      }
    }
    for (const ns of created) await settled(ns);

    // Pods on different nodes reach each other, both ways, over both families.
    for (const from of pods) {
      for (const to of pods.filter((p) => p.node !== from.node)) {
        for (const ip of [to.v4, to.v6]) {
          const r = ping(from.pod.ns, ip);
          assert.ok(
            r.ok,
            `${from.pod.id} (${from.node.name}) cannot ping ${ip} of ${to.pod.id} (${to.node.name}):\n${r.out}\n` +
              must('ip', ['-n', from.pod.ns, 'route', 'show', 'table', 'all']),
          );
        }
      }
    }

    // The node masquerade: nothing between pods, across nodes; the node's address beyond the pools.
    for (const n of nodes) {
      const r = sh('ip', ['netns', 'exec', n.ns, PODIPAM_BIN, '--datastore', db, 'masquerade', 'sync', '--json']);
      assert.equal(r.code, 0, `masquerade sync on ${n.name}: ${r.out}`);
      const items = (JSON.parse(r.stdout) as { items: { state: string; cidrs: string[] }[] }).items;
      assert.deepEqual(
        items.map((f) => [f.state, f.cidrs]),
        [
          ['synced', ['10.123.0.0/16']],
          ['synced', ['fd00:123::/56']],
        ],
      );
    }
    let port = 20_000 + (randomBytes(2).readUInt16BE() % 20_000);
    for (const from of pods) {
      const to = pods.find((p) => p.node !== from.node)!;
      for (const [dst, src] of [
        [to.v4, from.v4],
        [to.v6, from.v6],
      ] as const) {
        const seen = await sourceSeenBy(to.pod.ns, dst, port++, from.pod.ns);
        assert.equal(seen, src, `${to.pod.id} (${to.node.name}) sees ${from.pod.id} (${from.node.name}, ${src}) as ${seen}: source NAT between pods`);
      }
      const peer = nodes.find((n) => n !== from.node)!;
      for (const [dst, node] of [
        [peer.link.v4, from.node.link.v4],
        [peer.link.v6, from.node.link.v6],
      ] as const) {
        const seen = await sourceSeenBy(peer.ns, dst, port++, from.pod.ns);
        assert.equal(seen, node, `${peer.name} (${dst}, outside the pools) sees ${from.pod.id} as ${seen}, not as its node ${node}`);
      }
    }

    // DEL every pod through its node's bridge; nothing may remain allocated.
    for (const p of pods) {
      const r = bridge('DEL', p.node, p.pod);
      assert.equal(r.code, 0, `bridge DEL ${p.pod.id}: ${r.out}`);
    }
    const after = JSON.parse(runCliSync(db, ['ipam', 'show', '--json']).stdout) as { items: { allocated: number }[] };
    assert.deepEqual(
      after.items.map((p) => p.allocated),
      [0, 0],
    );
    const check = runCliSync(db, ['ipam', 'check', '--json']);
    assert.deepEqual(JSON.parse(check.stdout), { leaks: [], problems: [] }, check.stderr);
    const store = await openStore(db);
    try {
      assert.deepEqual(
        (await store.list(HANDLE_PREFIX)).map((e) => e.key),
        [],
        'no handle record remains',
      );
    } finally {
      await store.close();
    }
  },
);
