import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Command } from 'commander';
import { anchorOf, cliReference } from './cli-reference.js';

function tree(): Command {
  const root = new Command('podipam').description('root').option('--datastore <url>', 'the store');
  const pool = root.command('pool').description('pools');
  pool
    .command('create')
    .description('create a pool')
    .argument('<name>', 'pool name')
    .option('--cidr <cidr>', 'the CIDR | with a bar')
    .option('--node-selector <sel>', 'nodes', 'all()');
  root.command('secret', { hidden: true }).description('not shown');
  return root;
}

test('cliReference: a section per visible command, with usage, arguments, options and defaults', () => {
  const page = cliReference(tree());
  assert.match(page, /\n## podipam pool create\n\ncreate a pool\n\n```\npodipam pool create \[options\] <name>\n```/);
  assert.match(page, /\| `name` \| pool name \|/);
  assert.match(page, /\| `--cidr <cidr>` \| the CIDR \\\| with a bar \| {2}\|/);
  assert.match(page, /\| `--node-selector <sel>` \| nodes \| `"all\(\)"` \|/);
  assert.match(page, /\[`create`\]\(#podipam-pool-create\)/);
  assert.doesNotMatch(page, /secret|not shown/);
  assert.equal(cliReference(tree()), page, 'the same tree gives the same text');
});

test('anchorOf: the heading anchor of a command path', () => {
  assert.equal(anchorOf(['install-cni']), 'podipam-install-cni');
  assert.equal(anchorOf(['ipam', 'history']), 'podipam-ipam-history');
});
