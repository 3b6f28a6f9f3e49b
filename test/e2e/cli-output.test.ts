/**
 * kubectl's output conventions through bin/podipam: `-o json|yaml|wide` beside `--json`, one
 * JSON shape for lists (`{"items": […]}`, as the API answers) in `pool list`, `node list` and
 * `ipam show`; a bad `-o` value names the flag and the value. And `ipam config
 * --max-blocks-per-host` takes what its help says and refuses more, naming flag, value and cap.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import yaml from 'js-yaml';
/** The bound of maxBlocksPerHost (MAX_BLOCKS_PER_HOST in src/cluster/records/ipam-config.ts). */
const MAX_BLOCKS_PER_HOST = 1_000_000;
import { runCliSync } from '../helpers/plugin.js';
import { makeTempDir } from '../helpers/tmp.js';

test('-o json|yaml|wide and --json: lists are {"items": […]} in pool list, node list, ipam show', { timeout: 120_000 }, () => {
  const dir = makeTempDir('cli-output');
  const db = `sqlite:${join(dir.path, 'podipam.db')}`;
  const ok = (...args: string[]): string => {
    const r = runCliSync(db, args);
    assert.equal(r.code, 0, `${args.join(' ')}: exit ${r.code}, ${r.stderr}`);
    return r.stdout;
  };
  try {
    ok('pool', 'create', 'v4', '--cidr', '10.90.0.0/24', '--block-size', '28');
    ok('pool', 'create', 'v6', '--cidr', 'fd00:90::/64');
    ok('node', 'add', 'node-a', '--label', 'zone=a');
    for (const [args, names] of [
      [
        ['pool', 'list'],
        ['v4', 'v6'],
      ],
      [['node', 'list'], ['node-a']],
      [
        ['ipam', 'show'],
        ['v4', 'v6'],
      ],
    ] as const) {
      const json = JSON.parse(ok(...args, '--json')) as { items: { name: string }[] };
      assert.deepEqual(Object.keys(json), ['items'], `${args.join(' ')} --json`);
      assert.deepEqual(
        json.items.map((i) => i.name),
        names,
      );
      assert.deepEqual(JSON.parse(ok(...args, '-o', 'json')), json, `${args.join(' ')} -o json is --json`);
      assert.deepEqual(yaml.load(ok(...args, '-o', 'yaml')), json, `${args.join(' ')} -o yaml is the same data`);
      const bad = runCliSync(db, [...args, '-o', 'xml']);
      assert.equal(bad.code, 2, bad.stderr);
      assert.match(bad.stderr, /^podipam: invalid -o\/--output "xml": expected json, yaml, wide$/m);
      assert.equal(bad.stdout, '');
    }
    // Exact counts in YAML too: the v6 pool's capacity beyond 2^53 is a decimal string.
    const shown = yaml.load(ok('ipam', 'show', '-o', 'yaml')) as { items: { name: string; capacity: unknown }[] };
    assert.equal(shown.items.find((p) => p.name === 'v6')?.capacity, (2n ** 58n * 62n).toString());
    // --blocks adds the blocks beside the items.
    assert.deepEqual(Object.keys(JSON.parse(ok('ipam', 'show', '--blocks', '--json'))), ['items', 'blocks']);
    // -o wide: more columns (pool list: blocks and capacity; ipam show: the block table).
    assert.match(ok('pool', 'list', '-o', 'wide'), /^NAME\s+CIDR\s+BLOCK\s+NODE-SELECTOR\s+STATE\s+BLOCKS\s+CAPACITY\s+USED\s+TREND\s+FULL-IN$/m);
    assert.match(ok('pool', 'list', '-o', 'wide'), /^v4\s+10\.90\.0\.0\/24\s+\/28\s+all\(\)\s+enabled\s+16\s+208\s+0\s+-\s+-$/m);
    assert.match(ok('pool', 'list', '-o', 'wide'), /^TREND, FULL-IN: no history at \S+ \(podipam serve keeps it/m);
    assert.match(ok('pool', 'list', '-o', 'wide'), /^v6\s+fd00:90::\/64\s+\/122\s+all\(\)\s+enabled\s+2\^58\s+31\*2\^59\s+0\s+-\s+-$/m);
    assert.match(ok('ipam', 'show', '-o', 'wide'), /^BLOCK\s+POOL\s+NODE\s+CAPACITY\s+ALLOCATED\s+IDLE$/m);
    assert.doesNotMatch(ok('ipam', 'show'), /^BLOCK\s/m);
    // --json with another -o is a contradiction, named.
    const both = runCliSync(db, ['pool', 'list', '--json', '-o', 'yaml']);
    assert.equal(both.code, 2);
    assert.match(both.stderr, /--json and -o yaml/);
    // ipam check and ipam config take -o too.
    assert.deepEqual(yaml.load(ok('ipam', 'check', '-o', 'yaml')), { leaks: [], problems: [] });
    assert.deepEqual(yaml.load(ok('ipam', 'config', '-o', 'yaml')), { strictAffinity: false, autoAllocateBlocks: true, maxBlocksPerHost: 0 });
  } finally {
    dir.remove();
  }
});

test(
  'ipam config --max-blocks-per-host: the help states the bound validation applies; beyond it is refused naming flag, value and cap',
  { timeout: 60_000 },
  () => {
    const dir = makeTempDir('cli-max-blocks');
    const db = `sqlite:${join(dir.path, 'podipam.db')}`;
    try {
      const help = runCliSync(db, ['ipam', 'config', '--help']);
      assert.equal(help.code, 0);
      const line = help.stdout.split('\n').find((l) => l.includes('--max-blocks-per-host')) ?? '';
      assert.ok(line.includes(String(MAX_BLOCKS_PER_HOST)), `the help names the cap: ${line}`);
      assert.doesNotMatch(line, /cap 20/, 'no cap the setting does not have');
      // 50 is within the cap (0 = unset leaves the allocator's default of 20).
      assert.equal(runCliSync(db, ['ipam', 'config', '--max-blocks-per-host', '50']).code, 0);
      assert.equal(JSON.parse(runCliSync(db, ['ipam', 'config', '--json']).stdout).maxBlocksPerHost, 50);
      for (const v of [String(MAX_BLOCKS_PER_HOST + 1), '-1']) {
        const r = runCliSync(db, ['ipam', 'config', '--max-blocks-per-host', v]);
        assert.equal(r.code, 2, `${v}: ${r.stderr}`);
        assert.match(r.stderr, new RegExp(`^podipam: invalid --max-blocks-per-host "${v}": must be from 0 to ${MAX_BLOCKS_PER_HOST}$`, 'm'));
      }
      assert.equal(JSON.parse(runCliSync(db, ['ipam', 'config', '--json']).stdout).maxBlocksPerHost, 50, 'a refused value changes nothing');
    } finally {
      dir.remove();
    }
  },
);
