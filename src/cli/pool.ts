/**
 * `podipam pool create|list|delete|enable|disable`: IP pools of the cluster back end.
 */
import type { Command } from 'commander';
import { withClusterIpam } from './ipam.js';
import { parseOptionalIntFlag } from './parse-flag.js';
import { outputFormat, printData, printTable, withOutputOptions } from './output.js';

/** Registers `podipam pool …`. */
export function registerPool(program: Command): void {
  const pool = program.command('pool').description('IP pools for cluster (block) IPAM');

  pool
    .command('create')
    .description('create a pool (its CIDR and block size cannot change later)')
    .argument('<name>', 'pool name (lower case, digits, "-", ".")')
    .requiredOption('--cidr <cidr>', 'the pool CIDR, e.g. 10.244.0.0/16 or fd00:244::/64')
    .option('--block-size <n>', 'block prefix length (default 26 for IPv4, 122 for IPv6; 20-32 / 116-128)')
    .option('--node-selector <sel>', 'nodes the pool serves: all() or key=value[,key!=value…]', 'all()')
    .option('--disabled', 'create it disabled (no new assignments)')
    .action(async (name: string, opts: { cidr: string; blockSize?: string; nodeSelector: string; disabled?: boolean }, cmd: Command) => {
      const blockSize = parseOptionalIntFlag('--block-size', opts.blockSize);
      const p = await withClusterIpam(cmd, 'write', (ipam) => ipam.createPool({ name, cidr: opts.cidr, blockSize, nodeSelector: opts.nodeSelector, disabled: opts.disabled ?? false }));
      const { formatPrefix } = await import('../ip/index.js');
      process.stdout.write(`pool "${p.name}" created: ${formatPrefix(p.cidr)}, blocks of /${p.blockSize}, nodes ${p.nodeSelector.text}${p.disabled ? ', disabled' : ''}\n`);
    });

  withOutputOptions(pool.command('list').description('list pools (-o wide: also the blocks each pool cuts into and its capacity)'), '{"items": [pool…]}').action(
    async (opts: { json?: boolean; output?: string }, cmd: Command) => {
      const format = outputFormat(opts);
      const [{ poolText }, { blockCount, poolUsableCount }] = await Promise.all([import('../cluster/pool-record.js'), import('../alloc/block-layout.js')]);
      const pools = await withClusterIpam(cmd, 'read', (ipam) => ipam.listPools());
      const items = pools.map(poolText);
      if (printData(format, { items })) return;
      const rows = pools.map((p, i) => ({ ...(items[i] as (typeof items)[number]), slots: blockCount(p.cidr, p.blockSize), capacity: poolUsableCount(p.cidr, p.blockSize) }));
      printTable(rows, [
        { header: 'NAME', value: (p) => p.name },
        { header: 'CIDR', value: (p) => p.cidr },
        { header: 'BLOCK', value: (p) => `/${p.blockSize}` },
        { header: 'NODE-SELECTOR', value: (p) => p.nodeSelector },
        { header: 'STATE', value: (p) => (p.deleting ? 'deleting' : p.disabled ? 'disabled' : 'enabled') },
        ...(format === 'wide' ? [{ header: 'BLOCKS', value: (p: (typeof rows)[number]) => p.slots }, { header: 'CAPACITY', value: (p: (typeof rows)[number]) => p.capacity }] : []),
      ]);
    },
  );

  pool
    .command('delete')
    .description('delete a pool (refused while any of its addresses is allocated)')
    .argument('<name>', 'pool name')
    .action(async (name: string, _opts: unknown, cmd: Command) => {
      await withClusterIpam(cmd, 'write', (ipam) => ipam.deletePool(name));
      process.stdout.write(`pool "${name}" deleted\n`);
    });

  for (const [verb, disabled] of [['disable', true], ['enable', false]] as const) {
    pool
      .command(verb)
      .description(disabled ? 'stop new assignments from a pool (existing ones stay)' : 'allow new assignments from a pool again')
      .argument('<name>', 'pool name')
      .action(async (name: string, _opts: unknown, cmd: Command) => {
        await withClusterIpam(cmd, 'write', (ipam) => ipam.setPoolDisabled(name, disabled));
        process.stdout.write(`pool "${name}" ${verb}d\n`);
      });
  }
}
