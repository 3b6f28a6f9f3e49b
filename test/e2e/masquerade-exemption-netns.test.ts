/**
 * The node masquerade leaves the operator's own POSTROUTING rules their say: `podipam
 * masquerade sync` (the same writer the agent runs) APPENDS its jump to PODIPAM-MASQ, so an
 * exemption the operator put in nat POSTROUTING beforehand (`-A POSTROUTING -d X -j RETURN`)
 * precedes it and still takes effect — a pod reaching X keeps its own source address, a pod
 * reaching anything else outside the pools leaves with the node's. Syncing again adds no second
 * jump; `masquerade remove` takes the jump and the chain and leaves the operator's rule.
 *
 * Three namespaces of the test (the host's nat table is never touched): a node that forwards,
 * a pod on a veth with an address of the pool, an outside host with one exempted and one plain
 * address. Missing prerequisites FAIL the test.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { sh, sourceSeenBy } from '../helpers/netns.js';
import { PODIPAM_BIN, runCliSync } from '../helpers/plugin.js';
import { requireCommand, requireRoot } from '../helpers/prereq.js';
import { makeTempDir } from '../helpers/tmp.js';

function must(cmd: string, args: readonly string[]): string {
  const r = sh(cmd, args);
  assert.ok(r.ok, `${cmd} ${args.join(' ')}: ${r.out}`);
  return r.out;
}

test("masquerade sync appends its jump: the operator's earlier POSTROUTING exemption still keeps a pod's source address", { timeout: 120_000 }, async () => {
  requireRoot('network namespaces');
  requireCommand('ip', ['-V'], 'iproute2');
  for (const c of ['iptables', 'iptables-restore']) requireCommand(c, ['--version'], 'iptables');
  const tag = `${process.pid.toString(36)}${randomBytes(2).toString('hex')}`.slice(-8);
  const dir = makeTempDir('masq-exempt');
  const [node, pod, out] = [`pdmx-n-${tag}`, `pdmx-p-${tag}`, `pdmx-o-${tag}`];
  const o = 16 + (randomBytes(1)[0]! % 200);
  const datastore = `sqlite:${join(dir.path, 'podipam.db')}`;
  const inNode = (args: readonly string[]) =>
    spawnSync('ip', ['netns', 'exec', node, PODIPAM_BIN, '--datastore', datastore, ...args], { encoding: 'utf8', timeout: 30_000 });
  const postrouting = () =>
    must('ip', ['netns', 'exec', node, 'iptables', '-t', 'nat', '-S', 'POSTROUTING'])
      .split('\n')
      .filter((l) => l.startsWith('-A '));
  try {
    for (const ns of [node, pod, out]) {
      must('ip', ['netns', 'add', ns]);
      must('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
    }
    must('ip', ['netns', 'exec', node, 'sysctl', '-qw', 'net.ipv4.ip_forward=1']);
    // The pod: 10.231.o.2 of the pool, its gateway the node's end of the veth.
    must('ip', ['-n', node, 'link', 'add', 'pod0', 'type', 'veth', 'peer', 'name', 'eth0', 'netns', pod]);
    must('ip', ['-n', node, 'addr', 'add', `10.231.${o}.1/24`, 'dev', 'pod0']);
    must('ip', ['-n', pod, 'addr', 'add', `10.231.${o}.2/24`, 'dev', 'eth0']);
    // The outside host: 10.99.o.2 (exempted by the operator) and 10.98.o.2 (not), one link.
    must('ip', ['-n', node, 'link', 'add', 'uplink', 'type', 'veth', 'peer', 'name', 'eth0', 'netns', out]);
    for (const net of ['10.99', '10.98']) {
      must('ip', ['-n', node, 'addr', 'add', `${net}.${o}.1/24`, 'dev', 'uplink']);
      must('ip', ['-n', out, 'addr', 'add', `${net}.${o}.2/24`, 'dev', 'eth0']);
    }
    for (const [ns, dev] of [
      [node, 'pod0'],
      [node, 'uplink'],
      [pod, 'eth0'],
      [out, 'eth0'],
    ] as const)
      must('ip', ['-n', ns, 'link', 'set', dev, 'up']);
    must('ip', ['-n', pod, 'route', 'add', 'default', 'via', `10.231.${o}.1`]);
    // Un-NATted replies to the pod need the way back (the exempted network routes the pods).
    must('ip', ['-n', out, 'route', 'add', `10.231.${o}.0/24`, 'via', `10.99.${o}.1`]);

    // The operator's exemption, before podipam ever runs on the node.
    const exemption = `-A POSTROUTING -d 10.99.${o}.0/24 -j RETURN`;
    must('ip', ['netns', 'exec', node, 'iptables', '-t', 'nat', ...exemption.split(' ')]);
    const created = runCliSync(datastore, ['pool', 'create', `p-${tag}`, '--cidr', `10.231.${o}.0/24`]);
    assert.equal(created.code, 0, created.stdout + created.stderr);
    for (let i = 0; i < 2; i++) {
      const r = inNode(['masquerade', 'sync']);
      assert.equal(r.status, 0, r.stdout + r.stderr);
      assert.match(r.stdout, /IPv4\s+iptables\s+synced/, r.stdout);
    }
    // The traffic itself: exempted keeps the pod's address, the rest is masqueraded.
    assert.equal(await sourceSeenBy(out, `10.99.${o}.2`, 7001, pod), `10.231.${o}.2`, "the operator's exemption is pre-empted: the pod was masqueraded");
    assert.equal(
      await sourceSeenBy(out, `10.98.${o}.2`, 7002, pod),
      `10.98.${o}.1`,
      'traffic outside the pools and the exemption leaves with the node address',
    );

    const rules = postrouting();
    const jumps = rules.filter((l) => l.endsWith('-j PODIPAM-MASQ'));
    assert.equal(jumps.length, 1, `one jump after two syncs:\n${rules.join('\n')}`);
    assert.equal(rules.indexOf(exemption), 0, `the operator's exemption stays first:\n${rules.join('\n')}`);
    assert.equal(rules.at(-1), jumps[0], `the jump is appended after it:\n${rules.join('\n')}`);

    const removed = inNode(['masquerade', 'remove']);
    assert.equal(removed.status, 0, removed.stdout + removed.stderr);
    assert.deepEqual(postrouting(), [exemption], 'remove takes the jump and leaves the operator rule');
    assert.doesNotMatch(must('ip', ['netns', 'exec', node, 'iptables', '-t', 'nat', '-S']), /PODIPAM/);
  } finally {
    for (const ns of [pod, out, node]) sh('ip', ['netns', 'del', ns]);
    dir.remove();
  }
});
