/**
 * The CLI's contract, every command run through bin/podipam as an operator runs it, with its
 * exit codes: 0 done, 1 refused by the datastore's state (unknown name, pool in use), 2 bad
 * command-line input (named in one line on stderr, never a stack). Covers pool
 * create|list|disable|enable|delete, node add|list|delete, ipam
 * show|check|release|config|reserve|unreserve — including the leak path: a handle record
 * lost, `ipam check` reports the leak, `ipam release --ip` frees it, the pool can then go —
 * and `controller --once`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { openStore } from '../../src/store/index.js';
import { PODIPAM_BIN, clusterCall, runCliSync, runPluginSync } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';
import { handleKey } from './serve-keys.js';
import { cniHandleId } from '../../src/model/handle-id.js';

/** The handles the plugin writes for containers c1 and c2 of network net (handle-id.ts). */
const H1 = cniHandleId('net', 'c1', 'eth0');
const H2 = cniHandleId('net', 'c2', 'eth0');
const re = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Asserts exit code `code` and, for errors, one `podipam:` line on stderr and no stack trace. */
function expect(r: Run, code: number, what: string): Run {
  assert.equal(r.code, code, `${what}: exit ${r.code}, stdout ${r.stdout}, stderr ${r.stderr}`);
  if (code !== 0) {
    assert.match(r.stderr, /^podipam: /, `${what}: stderr names the problem: ${r.stderr}`);
    assert.doesNotMatch(r.stderr, /\n\s+at /, `${what}: a stack trace on stderr`);
  }
  return r;
}

test(
  'CLI contract: pools, nodes, ipam show/check/release/config/reserve/unreserve (leak path included), controller --once — exit codes 0/1/2',
  { timeout: 120_000 },
  async () => {
    const dir = makeTempDir('cli-contract');
    const db = `sqlite:${join(dir.path, 'podipam.db')}`;
    const cli = (...args: string[]): Run => runCliSync(db, args);
    try {
      // pool create / list / disable / enable
      assert.match(
        expect(cli('pool', 'create', 'v4', '--cidr', '10.90.0.0/24', '--block-size', '28'), 0, 'pool create v4').stdout,
        /^pool "v4" created: 10\.90\.0\.0\/24, blocks of \/28, nodes all\(\)$/m,
      );
      expect(cli('pool', 'create', 'v6', '--cidr', 'fd00:90::/120'), 0, 'pool create v6');
      assert.match(expect(cli('pool', 'create', 'bad', '--cidr', '10.90.0.0/33'), 2, 'pool create, bad CIDR').stderr, /invalid pool cidr "10\.90\.0\.0\/33"/);
      expect(cli('pool', 'create', 'v4', '--cidr', '10.91.0.0/24'), 1, 'pool create, name taken');
      assert.match(expect(cli('pool', 'list'), 0, 'pool list').stdout, /^v4\s+10\.90\.0\.0\/24\s+\/28\s+all\(\)\s+enabled$/m);
      assert.match(expect(cli('pool', 'disable', 'v6'), 0, 'pool disable').stdout, /pool "v6" disabled/);
      assert.equal(
        JSON.parse(expect(cli('pool', 'list', '--json'), 0, 'pool list --json').stdout).items.find((p: { name: string }) => p.name === 'v6').disabled,
        true,
      );
      assert.match(expect(cli('pool', 'enable', 'v6'), 0, 'pool enable').stdout, /pool "v6" enabled/);
      expect(cli('pool', 'enable', 'nope'), 1, 'pool enable, unknown pool');

      // node add / list; a name Kubernetes would refuse is a usage error
      assert.match(expect(cli('node', 'add', 'node-a', '--label', 'zone=a'), 0, 'node add').stdout, /node "node-a" added/);
      assert.match(expect(cli('node', 'add', 'Node_A'), 2, 'node add, bad name').stderr, /invalid node name "Node_A"/);
      assert.deepEqual(
        JSON.parse(expect(cli('node', 'list', '--json'), 0, 'node list --json').stdout).items.map((n: { name: string; labels: unknown; podCIDRs: unknown }) => [
          n.name,
          n.labels,
          n.podCIDRs,
        ]),
        [['node-a', { zone: 'a' }, []]],
      );
      assert.match(expect(cli('node', 'list'), 0, 'node list').stdout, /^node-a\s+<pending>\s+zone=a\s/m);

      // controller --once gives node-a its CIDRs and says so; bad flags are usage errors
      const once = expect(cli('controller', '--once', '--cluster-cidr', '10.250.0.0/16,fd00:250::/56'), 0, 'controller --once');
      assert.deepEqual(JSON.parse(once.stdout), { nodes: 1, assigned: 1, waiting: [], failed: [] });
      assert.deepEqual(JSON.parse(cli('node', 'list', '--json').stdout).items[0].podCIDRs, ['10.250.0.0/24', 'fd00:250::/64']);
      assert.deepEqual(JSON.parse(expect(cli('controller', '--once', '--cluster-cidr', '10.250.0.0/16,fd00:250::/56'), 0, 'controller --once again').stdout), {
        nodes: 1,
        assigned: 0,
        waiting: [],
        failed: [],
      });
      assert.match(expect(cli('controller', '--once', '--cluster-cidr', 'bogus'), 2, 'controller, bad CIDR').stderr, /invalid --cluster-cidr "bogus"/);
      expect(cli('controller', '--once', '--cluster-cidr', '10.250.0.0/16', '--kubeconfig', '/nonexistent'), 2, 'controller --once with --kubeconfig');

      // ipam config: shown, changed, kept; bad values are usage errors
      assert.equal(expect(cli('ipam', 'config'), 0, 'ipam config').stdout, 'strictAffinity: false\nautoAllocateBlocks: true\nmaxBlocksPerHost: 0\n');
      expect(cli('ipam', 'config', '--max-blocks-per-host', '3'), 0, 'ipam config --max-blocks-per-host');
      assert.deepEqual(JSON.parse(expect(cli('ipam', 'config', '--json'), 0, 'ipam config --json').stdout), {
        strictAffinity: false,
        autoAllocateBlocks: true,
        maxBlocksPerHost: 3,
      });
      assert.match(
        expect(cli('ipam', 'config', '--strict-affinity', 'maybe'), 2, 'ipam config, bad bool').stderr,
        /invalid --strict-affinity "maybe": use true or false/,
      );
      expect(cli('ipam', 'config', '--max-blocks-per-host', 'x'), 2, 'ipam config, bad integer');

      // ipam reserve / unreserve
      assert.match(
        expect(cli('ipam', 'reserve', 'gw', '--cidr', '10.90.0.1', '--cidr', 'fd00:90::ff'), 0, 'ipam reserve').stdout,
        /reservation "gw": 10\.90\.0\.1\/32, fd00:90::ff\/128/,
      );
      expect(cli('ipam', 'reserve', 'bad', '--cidr', 'nope'), 2, 'ipam reserve, bad CIDR');
      assert.match(expect(cli('ipam', 'unreserve', 'gw'), 0, 'ipam unreserve').stdout, /reservation "gw" deleted/);
      assert.match(expect(cli('ipam', 'unreserve', 'gw'), 1, 'ipam unreserve, unknown').stderr, /reservation "gw" does not exist/);

      // Two pods through the plugin (cluster mode), then ipam show counts them.
      const cache = join(dir.path, 'cache');
      const ips = ['c1', 'c2'].map((id) => {
        const r = runPluginSync(PODIPAM_BIN, clusterCall('net', db, cache, 'ADD', id, 'node-a'));
        assert.equal(r.code, 0, `ADD ${id}: ${r.stdout}${r.stderr}`);
        return (JSON.parse(r.stdout) as { ips: { address: string }[] }).ips.map((i) => i.address.split('/')[0]!);
      });
      const shown = JSON.parse(expect(cli('ipam', 'show', '--json', '--blocks'), 0, 'ipam show --json --blocks').stdout) as {
        items: { name: string; allocated: number }[];
        blocks: { node: string }[];
      };
      assert.deepEqual(
        shown.items.map((p) => [p.name, p.allocated]),
        [
          ['v4', 2],
          ['v6', 2],
        ],
      );
      assert.ok(shown.blocks.length >= 2 && shown.blocks.every((b) => b.node === 'node-a'));
      assert.match(expect(cli('ipam', 'show'), 0, 'ipam show').stdout, /^v4\s+10\.90\.0\.0\/24\s+208\s+2\s/m); // 16 blocks of /28, 13 usable addresses each
      assert.match(expect(cli('ipam', 'check'), 0, 'ipam check, clean').stdout, /^Check complete; found 0 problems\.$/m);

      // pool delete is refused while addresses are allocated
      assert.match(expect(cli('pool', 'delete', 'v4'), 1, 'pool delete, in use').stderr, /2 addresses are allocated/);
      expect(cli('pool', 'delete', 'nope'), 1, 'pool delete, unknown');

      // The leak path: c1's handle record is lost (a crashed writer, a hand edit); its addresses leak.
      const store = await openStore(db);
      try {
        const h = await store.get(handleKey(H1));
        assert.ok(h, 'the handle record of c1 exists');
        assert.ok((await store.txn([{ key: h.key, rev: h.rev }], [{ type: 'delete', key: h.key }])).succeeded);
      } finally {
        await store.close();
      }
      const leaky = expect(cli('ipam', 'check'), 1, 'ipam check, leaks (exit 1: cron and monitoring see them)');
      for (const ip of ips[0]!)
        assert.match(
          leaky.stdout,
          new RegExp(
            `^leak: ${ip.replace(/\./g, '\\.')} in block \\S+ is held by handle "${re(H1)}", which does not exist \\(podipam ipam release --ip ${ip.replace(/\./g, '\\.')} --handle ${re(H1)}\\)$`,
            'm',
          ),
        );
      assert.match(leaky.stdout, /^Check complete; found 2 problems\.$/m);
      const leaks = JSON.parse(expect(cli('ipam', 'check', '--json'), 1, 'ipam check --json, leaks').stdout) as {
        leaks: { ip: string; handle: string }[];
        problems: unknown[];
      };
      assert.deepEqual(leaks.leaks.map((l) => [l.ip, l.handle]).sort(), ips[0]!.map((ip) => [ip, H1]).sort());
      assert.deepEqual(leaks.problems, []);
      // The release the check suggests frees them; released again, they are "not allocated".
      // Named with another handle (H2 is c2's, live): the addresses are not its, nothing is freed.
      const wrong = expect(cli('ipam', 'release', '--ip', ips[0]![0]!, '--handle', H2), 0, 'ipam release --ip --handle, another holder');
      assert.match(wrong.stdout, new RegExp(`^${ips[0]![0]!.replace(/\./g, '\\.')} was not allocated to handle "${re(H2)}"$`, 'm'));
      const freed = expect(
        cli('ipam', 'release', ...ips[0]!.flatMap((ip) => ['--ip', ip]), '--handle', H1),
        0,
        'ipam release --ip --handle (the leak, as check suggests)',
      );
      for (const ip of ips[0]!) assert.match(freed.stdout, new RegExp(`^released ${ip.replace(/\./g, '\\.')} \\(handle "${re(H1)}"\\)$`, 'm'));
      assert.match(expect(cli('ipam', 'release', '--ip', ips[0]![0]!), 0, 'ipam release --ip, free').stdout, /was not allocated/);
      assert.deepEqual(JSON.parse(cli('ipam', 'check', '--json').stdout), { leaks: [], problems: [] });

      // ipam release --handle (c2), usage errors
      const byHandle = expect(cli('ipam', 'release', '--handle', H2), 0, 'ipam release --handle');
      assert.equal(byHandle.stdout.split('\n').filter((l) => l.startsWith('released ')).length, 2);
      assert.match(expect(cli('ipam', 'release', '--handle', H2), 0, 'ipam release --handle, empty').stdout, new RegExp(`handle "${re(H2)}" holds nothing`));
      expect(cli('ipam', 'release'), 2, 'ipam release, neither --ip nor --handle');
      assert.match(
        expect(cli('ipam', 'release', '--ip', '10.90.0.5', '--handle', 'x'), 0, 'ipam release, both: only while x holds it').stdout,
        /^10\.90\.0\.5 was not allocated to handle "x"$/m,
      );
      assert.match(expect(cli('ipam', 'release', '--ip', 'bogus'), 2, 'ipam release, bad IP').stderr, /invalid IP address "bogus"/);
      assert.deepEqual(
        JSON.parse(cli('ipam', 'show', '--json').stdout).items.map((p: { allocated: number }) => p.allocated),
        [0, 0],
      );

      // Nothing allocated: the pool goes.
      assert.match(expect(cli('pool', 'delete', 'v4'), 0, 'pool delete').stdout, /v4/);
      assert.deepEqual(
        JSON.parse(cli('pool', 'list', '--json').stdout).items.map((p: { name: string }) => p.name),
        ['v6'],
      );

      // node delete frees the node's CIDRs; an unknown node is refused
      assert.match(expect(cli('node', 'delete', 'node-a'), 0, 'node delete').stdout, /node "node-a" deleted \(freed 10\.250\.0\.0\/24, fd00:250::\/64\)/);
      assert.deepEqual(JSON.parse(cli('node', 'list', '--json').stdout), { items: [] });
      assert.match(expect(cli('node', 'delete', 'node-a'), 1, 'node delete, unknown').stderr, /node "node-a" not found/);

      // The program itself: unknown command and missing argument → 2, help → 0.
      assert.equal(cli('bogus').code, 2);
      assert.equal(cli('pool', 'delete').code, 2);
      assert.equal(cli('--help').code, 0);
    } finally {
      dir.remove();
    }
  },
);
