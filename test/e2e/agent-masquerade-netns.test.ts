/**
 * The agent's masquerade (src/agent/masquerade-loop.ts), with the agent run inside a network
 * namespace of the test standing for the node (the host's nat table is never touched): it
 * writes the PODIPAM-MASQ chains (IPv4 and IPv6) from the datastore's pools on start, follows
 * pools created and deleted within its period, reports it in `agent status`, and leaves the
 * chains when it stops (pods keep their NAT across an agent restart; `podipam masquerade remove`
 * takes them away). Without iptables on its PATH it still serves every pod start and reports
 * the failure (status and a warning) instead. Missing prerequisites FAIL the test.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AgentStatus } from '../../src/agent/agent-stats.js';
import { requireShim, SHIM_BIN, startAgent } from '../helpers/agent.js';
import { sh } from '../helpers/netns.js';
import { PODIPAM_BIN, runCliSync, runPluginSync } from '../helpers/plugin.js';
import { requireCommand, requireRoot } from '../helpers/prereq.js';
import { makeTempDir } from '../helpers/tmp.js';

function nodeNamespace(tag: string): { ns: string; nat: (tool: string) => string; done: () => void } {
  const ns = `pdmasq-${tag}`;
  const r = sh('ip', ['netns', 'add', ns]);
  assert.ok(r.ok, `ip netns add ${ns}: ${r.out}`);
  sh('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
  return {
    ns,
    nat: (tool) => {
      const out = sh('ip', ['netns', 'exec', ns, tool, '-t', 'nat', '-S']);
      assert.ok(out.ok, `${tool} -t nat -S in ${ns}: ${out.out}`);
      return out.out;
    },
    done: () => void sh('ip', ['netns', 'del', ns]),
  };
}

async function waitFor(what: string, agentLog: () => string, probe: () => Promise<string | undefined>): Promise<void> {
  let last: string | undefined;
  for (let i = 0; i < 200; i++) {
    last = await probe();
    if (last === undefined) return;
    await sleep(50);
  }
  assert.fail(`${what} after 10 s: ${last}\nagent log:\n${agentLog()}`);
}

test(
  'the agent keeps the node masquerade from the pools: on start, on a pool created or deleted; status reports it; the chains outlive the agent',
  { timeout: 120_000 },
  async () => {
    requireRoot('network namespaces');
    requireCommand('ip', ['-V'], 'iproute2');
    for (const c of ['iptables', 'ip6tables', 'iptables-restore', 'ip6tables-restore']) requireCommand(c, ['--version'], 'iptables');
    requireShim();
    const tag = `${process.pid.toString(36)}${randomBytes(2).toString('hex')}`.slice(-8);
    const dir = makeTempDir('agent-masq');
    const node = nodeNamespace(tag);
    const datastore = `sqlite:${join(dir.path, 'podipam.db')}`;
    const octet = 16 + (randomBytes(1)[0]! % 200);
    const cli = (args: readonly string[]): string => {
      const r = runCliSync(datastore, args);
      assert.equal(r.code, 0, `podipam ${args.join(' ')}: ${r.stdout}${r.stderr}`);
      return r.stdout;
    };
    try {
      cli(['pool', 'create', `a-${tag}`, '--cidr', `10.231.${octet}.0/24`]);
      cli(['pool', 'create', `six-${tag}`, '--cidr', `fd00:231:${octet.toString(16)}::/64`]);
      const agent = await startAgent(
        join(dir.path, 'agent.sock'),
        ['--masquerade', '--datastore', datastore, '--node', `node-${tag}`, '--masquerade-interval', '200ms', '--metrics-listen', '127.0.0.1:7421'],
        {},
        { netns: node.ns },
      );
      try {
        const masq = async (): Promise<NonNullable<AgentStatus['masquerade']>> => {
          const m = (await agent.status()).masquerade;
          assert.ok(m !== undefined, 'the agent status has no masquerade section');
          return m;
        };
        const cidrsOf = async (): Promise<string> => {
          const m = await masq();
          return `${m.state} ${m.families.map((f) => `${f.family}:${f.cidrs.join(',')}`).join(' ')}`;
        };
        const want1 = `synced 4:10.231.${octet}.0/24 6:fd00:231:${octet.toString(16)}::/64`;
        await waitFor(
          `masquerade not ${want1}`,
          () => agent.log(),
          async () => ((await cidrsOf()) === want1 ? undefined : await cidrsOf()),
        );
        const v4 = node.nat('iptables');
        assert.match(v4, /^-A POSTROUTING .*-j PODIPAM-MASQ$/m, v4);
        assert.match(v4, new RegExp(`^-A PODIPAM-MASQ -d 10\\.231\\.${octet}\\.0/24 .*-j RETURN$`, 'm'), v4);
        assert.match(v4, new RegExp(`^-A PODIPAM-MASQ -s 10\\.231\\.${octet}\\.0/24 .*-j MASQUERADE$`, 'm'), v4);
        const v6 = node.nat('ip6tables');
        assert.match(v6, new RegExp(`^-A PODIPAM-MASQ -s fd00:231:${octet.toString(16)}::/64 .*-j MASQUERADE$`, 'm'), v6);
        assert.equal(v4.match(/-j PODIPAM-MASQ$/gm)?.length, 1, `one jump, however many syncs:\n${v4}`);

        // A pool created, then one deleted: the chains follow within the period.
        cli(['pool', 'create', `b-${tag}`, '--cidr', `10.232.${octet}.0/24`]);
        const want2 = `synced 4:10.231.${octet}.0/24,10.232.${octet}.0/24 6:fd00:231:${octet.toString(16)}::/64`;
        await waitFor(
          `masquerade not ${want2}`,
          () => agent.log(),
          async () => ((await cidrsOf()) === want2 ? undefined : await cidrsOf()),
        );
        assert.match(node.nat('iptables'), new RegExp(`-s 10\\.232\\.${octet}\\.0/24 .*-j MASQUERADE`));
        cli(['pool', 'delete', `a-${tag}`]);
        const want3 = `synced 4:10.232.${octet}.0/24 6:fd00:231:${octet.toString(16)}::/64`;
        await waitFor(
          `masquerade not ${want3}`,
          () => agent.log(),
          async () => ((await cidrsOf()) === want3 ? undefined : await cidrsOf()),
        );
        const after = node.nat('iptables');
        assert.doesNotMatch(after, new RegExp(`10\\.231\\.${octet}\\.`), `the deleted pool's rules are gone:\n${after}`);
        assert.equal(after.match(/-j PODIPAM-MASQ$/gm)?.length, 1, after);

        const text = spawnSync(PODIPAM_BIN, ['agent', 'status', '--socket', agent.socket], { encoding: 'utf8', timeout: 20_000 });
        assert.equal(text.status, 0, text.stderr);
        assert.match(text.stdout, new RegExp(`^masquerade: synced at .*IPv4 synced \\(from 10\\.232\\.${octet}\\.0/24\\)`, 'm'), text.stdout);
        // The metric, scraped inside the node namespace (where the agent listens).
        const scrape = spawnSync(
          'ip',
          ['netns', 'exec', node.ns, process.execPath, '-e', "fetch('http://127.0.0.1:7421/metrics').then(async (r) => process.stdout.write(await r.text()))"],
          { encoding: 'utf8', timeout: 20_000 },
        );
        assert.equal(scrape.status, 0, scrape.stderr);
        assert.match(scrape.stdout, /^podipam_agent_masquerade_synced\{family="ipv4"\} 1$/m, scrape.stdout);
        assert.match(scrape.stdout, /^podipam_agent_masquerade_synced\{family="ipv6"\} 1$/m);
        assert.equal(await agent.stop(), 0, agent.log());
      } finally {
        await agent.kill();
      }
      // Stopping the agent leaves the chains (an agent restart must not un-NAT the node's pods).
      assert.match(node.nat('iptables'), /-j PODIPAM-MASQ$/m);
      const removed = spawnSync('ip', ['netns', 'exec', node.ns, PODIPAM_BIN, 'masquerade', 'remove'], { encoding: 'utf8', timeout: 30_000 });
      assert.equal(removed.status, 0, removed.stdout + removed.stderr);
      assert.match(removed.stdout, /IPv4\s+iptables\s+removed/);
      for (const tool of ['iptables', 'ip6tables']) assert.doesNotMatch(node.nat(tool), /PODIPAM/, tool);
      const again = spawnSync('ip', ['netns', 'exec', node.ns, PODIPAM_BIN, 'masquerade', 'remove', '--json'], { encoding: 'utf8', timeout: 30_000 });
      assert.equal(again.status, 0, again.stderr);
      assert.deepEqual(
        (JSON.parse(again.stdout) as { items: { state: string }[] }).items.map((f) => f.state),
        ['absent', 'absent'],
        'remove twice: nothing left to remove',
      );
    } finally {
      node.done();
      dir.remove();
    }
  },
);

test('without iptables the agent serves pod starts all the same and reports the masquerade failed', { timeout: 120_000 }, async () => {
  requireRoot('network namespaces');
  requireCommand('ip', ['-V'], 'iproute2');
  requireShim();
  const tag = `${process.pid.toString(36)}${randomBytes(2).toString('hex')}`.slice(-8);
  const dir = makeTempDir('agent-masq-noipt');
  const node = nodeNamespace(tag);
  const datastore = `sqlite:${join(dir.path, 'podipam.db')}`;
  const octet = 16 + (randomBytes(1)[0]! % 200);
  try {
    const pool = runCliSync(datastore, ['pool', 'create', `p-${tag}`, '--cidr', `10.233.${octet}.0/24`]);
    assert.equal(pool.code, 0, pool.stderr);
    // A PATH with nothing on it: no iptables, no iptables-restore.
    const empty = join(dir.path, 'empty-bin');
    sh('mkdir', ['-p', empty]);
    const agent = await startAgent(
      join(dir.path, 'agent.sock'),
      ['--masquerade', '--datastore', datastore, '--node', `node-${tag}`, '--masquerade-interval', '200ms'],
      { PATH: empty },
      { netns: node.ns },
    );
    try {
      await waitFor(
        'masquerade not failed',
        () => agent.log(),
        async () => {
          const m = (await agent.status()).masquerade;
          return m?.state === 'failed' ? undefined : JSON.stringify(m);
        },
      );
      const m = (await agent.status()).masquerade!;
      assert.match(m.error ?? '', /IPv4: iptables-restore not found on PATH/, JSON.stringify(m));
      assert.deepEqual(
        m.families.map((f) => [f.family, f.state]),
        [
          [4, 'failed'],
          [6, 'skipped'],
        ],
        'IPv6 has no pool: nothing to do without ip6tables',
      );
      const add = runPluginSync(SHIM_BIN, {
        command: 'ADD',
        containerId: `c${tag}`,
        ifname: 'eth0',
        config: { cniVersion: '1.0.0', name: `masq-${tag}`, ipam: { type: 'podipam', agent: agent.socket, datastore, nodeName: `node-${tag}` } },
        env: { PODIPAM_PLUGIN: '' },
      });
      assert.equal(add.code, 0, `a pod start failed for want of iptables: ${add.stdout} ${add.stderr}`);
      assert.match(add.stdout, new RegExp(`"address": ?"10\\.233\\.${octet}\\.\\d+/\\d+"`));
      // Reported once (a warning), not once per period.
      await sleep(600);
      const warnings = agent
        .log()
        .split('\n')
        .filter((l) => l.includes('iptables-restore not found'));
      assert.equal(warnings.length, 1, agent.log());
      assert.ok((await agent.status()).masquerade!.failures >= 3, 'it keeps trying every period');
    } finally {
      await agent.kill();
    }
  } finally {
    node.done();
    dir.remove();
  }
});
