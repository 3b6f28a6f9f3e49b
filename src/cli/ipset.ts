/**
 * `podipam ipset create|list|show|delete`: fixed address sets of the cluster back end. Pods
 * annotated `podipam.io/ip-set: NAME` take a free address of the set; no other pod gets one.
 */
import type { Command } from 'commander';
import { withClusterIpam } from './ipam.js';
import { parseOptionalIntFlag } from './parse-flag.js';
import { outputFormat, printData, printTable, withOutputOptions } from './output.js';
import { UsageError } from './usage-error.js';

/** Registers `podipam ipset …`. */
export function registerIpSet(program: Command): void {
  const ipset = program.command('ipset').description('fixed address sets for pods annotated podipam.io/ip-set (cluster IPAM)');

  ipset
    .command('create')
    .description("create a set of a pool's addresses, reserved for the pods that name it")
    .argument('<name>', 'set name (lower case, digits, "-", ".")')
    .requiredOption('--pool <pool>', 'the pool holding the addresses')
    .option('--addresses <list>', 'comma-separated addresses, ranges A-B and CIDRs, all inside the pool')
    .option('--count <n>', "the pool's N lowest free addresses (not held, reserved or in another set)")
    .action(async (name: string, opts: { pool: string; addresses?: string; count?: string }, cmd: Command) => {
      if ((opts.addresses === undefined) === (opts.count === undefined)) throw new UsageError('give either --addresses or --count');
      const count = parseOptionalIntFlag('--count', opts.count);
      const spec =
        opts.addresses !== undefined
          ? {
              ranges: opts.addresses
                .split(',')
                .map((s) => s.trim())
                .filter((s) => s !== ''),
            }
          : { count: count as number };
      if (spec.ranges?.length === 0) throw new UsageError('invalid --addresses "": give at least one address, range or CIDR');
      const set = await withClusterIpam(cmd, 'write', (ipam) => ipam.createIpSet(name, opts.pool, spec));
      const { formatIpSetRange } = await import('../cluster/records/index.js');
      process.stdout.write(
        `ip-set "${set.name}" created in pool "${set.pool}": ${set.addrs.size()} address${set.addrs.size() === 1n ? '' : 'es'} ${set.addrs.ranges.map(formatIpSetRange).join(', ')}\n`,
      );
    });

  withOutputOptions(ipset.command('list').description('list ip-sets with how many of their addresses are held'), '{"items": [ip-set…]}').action(
    async (opts: { json?: boolean; output?: string }, cmd: Command) => {
      const format = outputFormat(opts);
      const items = await withClusterIpam(cmd, 'read', (ipam) => ipam.listIpSets());
      if (printData(format, { items })) return;
      printTable(items, [
        { header: 'NAME', value: (s) => s.name },
        { header: 'POOL', value: (s) => s.pool },
        { header: 'SIZE', value: (s) => s.size },
        { header: 'HELD', value: (s) => s.held },
        { header: 'ADDRESSES', value: (s) => s.ranges.join(',') },
      ]);
    },
  );

  withOutputOptions(
    ipset.command('show').description('each address of an ip-set: free, or held by which pod').argument('<name>', 'set name'),
    'the ip-set with "addresses"',
  ).action(async (name: string, opts: { json?: boolean; output?: string }, cmd: Command) => {
    const format = outputFormat(opts);
    const set = await withClusterIpam(cmd, 'read', (ipam) => ipam.showIpSet(name));
    if (printData(format, set)) return;
    process.stdout.write(`ip-set "${set.name}" in pool "${set.pool}": ${set.held} of ${set.size} held\n`);
    printTable(set.addresses, [
      { header: 'ADDRESS', value: (a) => a.address },
      { header: 'STATE', value: (a) => (a.handle === undefined ? 'free' : 'held') },
      { header: 'POD', value: (a) => (a.pod ? `${a.namespace ?? ''}/${a.pod}` : '') },
      { header: 'NODE', value: (a) => a.node ?? '' },
      { header: 'HANDLE', value: (a) => a.handle ?? '' },
    ]);
  });

  ipset
    .command('delete')
    .description('delete an ip-set (refused while any of its addresses is held); its addresses return to the pool')
    .argument('<name>', 'set name')
    .action(async (name: string, _opts: unknown, cmd: Command) => {
      await withClusterIpam(cmd, 'write', (ipam) => ipam.deleteIpSet(name));
      process.stdout.write(`ip-set "${name}" deleted\n`);
    });
}
