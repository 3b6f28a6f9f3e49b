/**
 * `podipam ipam show|check|release|config|reserve|unreserve`: utilisation, consistency
 * checks and repairs of the cluster back end. Also the plumbing the cluster command groups
 * share (`pool` uses it): open the datastore named by --datastore / $PODIPAM_DATASTORE, run
 * the service, close in `finally`; bad command-line input (TypeError/RangeError from
 * validation) becomes a UsageError (exit 2).
 */
import { warmIdleTest } from '../agent/warm-usage.js';
import type { Command } from 'commander';
import type { ClusterIpam } from '../cluster/index.js';
import { datastoreUrl } from './datastore-url.js';
import { printJson, printTable } from './output.js';
import { UsageError } from './usage-error.js';
import { isEngineError } from '../util/engine-error.js';

/** Opens the store, runs `fn` with a ClusterIpam on it, closes the store whatever happens. */
export async function withClusterIpam<T>(cmd: Command, fn: (ipam: ClusterIpam) => Promise<T>): Promise<T> {
  const [{ openStore }, { ClusterIpam }] = await Promise.all([import('../store/index.js'), import('../cluster/index.js')]);
  const store = await openStore(datastoreUrl(cmd));
  try {
    return await fn(new ClusterIpam(store));
  } catch (e) {
    throw (e instanceof TypeError || e instanceof RangeError) && !isEngineError(e) ? new UsageError(e.message) : e;
  } finally {
    await store.close();
  }
}

/** Runs a parser of command-line input, turning its TypeError/RangeError into a UsageError. */
export function usage<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    throw (e instanceof TypeError || e instanceof RangeError) && !isEngineError(e) ? new UsageError(e.message) : e;
  }
}

/** Parses a decimal integer option; UsageError naming the option and value. */
export function intOption(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  if (!/^-?[0-9]+$/.test(text)) throw new UsageError(`invalid ${name} ${JSON.stringify(text)}: not an integer`);
  return Number(text);
}

/** Parses "true"/"false"; UsageError naming the option and value. */
export function boolOption(name: string, text: string | undefined): boolean | undefined {
  if (text === undefined) return undefined;
  if (text === 'true') return true;
  if (text === 'false') return false;
  throw new UsageError(`invalid ${name} ${JSON.stringify(text)}: use true or false`);
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** Registers `podipam ipam …`. */
export function registerIpam(program: Command): void {
  const ipam = program.command('ipam').description('cluster IPAM: utilisation, consistency check, release');

  ipam
    .command('show')
    .description('allocated addresses per pool (and per block with --blocks); IDLE: held idle by node agents\' warm pools')
    .option('--blocks', 'also list every block with its node')
    .option('--json', 'print JSON: {"pools": [...], "blocks": [...]}')
    .action(async (opts: { blocks?: boolean; json?: boolean }, cmd: Command) => {
      // Idle = held by a node agent's warm pool for later pods (src/agent/warm-usage.ts).
      const u = await withClusterIpam(cmd, async (c) => c.usage({ isIdle: await warmIdleTest(c.store) }));
      if (opts.json) return printJson(opts.blocks ? u : { pools: u.pools });
      printTable(u.pools, [
        { header: 'POOL', value: (p) => p.name },
        { header: 'CIDR', value: (p) => p.cidr },
        { header: 'CAPACITY', value: (p) => p.capacity },
        { header: 'ALLOCATED', value: (p) => p.allocated },
        { header: 'USED', value: (p) => percent(p.allocated, p.capacity) },
        { header: 'IDLE', value: (p) => p.idle },
        { header: 'BLOCKS', value: (p) => p.blocks },
        { header: 'STATE', value: (p) => (p.deleting ? 'deleting' : p.disabled ? 'disabled' : 'enabled') },
      ]);
      if (opts.blocks) {
        process.stdout.write('\n');
        printTable(u.blocks, [
          { header: 'BLOCK', value: (b) => b.cidr },
          { header: 'POOL', value: (b) => b.pool || null },
          { header: 'NODE', value: (b) => b.node },
          { header: 'CAPACITY', value: (b) => b.capacity },
          { header: 'ALLOCATED', value: (b) => b.allocated },
          { header: 'IDLE', value: (b) => b.idle },
        ]);
      }
    });

  ipam
    .command('check')
    .description('report leaked allocations and inconsistent records (read-only); exit code 1 when anything is found')
    .option('--json', 'print JSON: {"leaks": [...], "problems": [...]}')
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const r = await withClusterIpam(cmd, (c) => c.check());
      // Non-zero when anything is found, so cron jobs and monitoring see it (0 clean, 1 found, 2 usage).
      if (r.leaks.length + r.problems.length > 0) {
        // The report is on stdout; stderr says why the exit status is 1 (what cron mails).
        process.stderr.write(`podipam: ipam check found ${r.leaks.length} leak(s) and ${r.problems.length} other problem(s)\n`);
        process.exitCode = 1;
      }
      if (opts.json) return printJson({ leaks: r.leaks, problems: r.problems });
      for (const l of r.leaks) process.stdout.write(`leak: ${l.ip} in block ${l.block} is held by handle "${l.handle}", which does not exist (podipam ipam release --ip ${l.ip} --handle ${l.handle})\n`);
      for (const p of r.problems) process.stdout.write(`problem (${p.kind}): ${p.message}\n`);
      const n = r.leaks.length + r.problems.length;
      process.stdout.write(`Check complete; found ${n} problem${n === 1 ? '' : 's'}.\n`);
    });

  ipam
    .command('release')
    .description('free addresses by address or by handle (both: those addresses only while that handle holds them)')
    .option('--ip <ip>', 'an address to free, whoever holds it (repeatable)', collect, [] as string[])
    .option('--handle <handle>', 'free everything this handle holds; with --ip, only the given addresses it still holds')
    .action(async (opts: { ip: string[]; handle?: string }, cmd: Command) => {
      if (opts.ip.length === 0 && opts.handle === undefined) throw new UsageError('give --ip (repeatable), --handle, or both');
      const { formatAddr, parseAddr } = await import('../ip/index.js');
      const addrs = usage(() => opts.ip.map((t) => parseAddr(t)));
      const heldBy = opts.handle === undefined ? undefined : new Set([opts.handle]);
      const released = await withClusterIpam(cmd, (c) => (addrs.length === 0 ? c.releaseHandle(opts.handle as string) : c.releaseAddresses(addrs, heldBy)));
      for (const r of released) process.stdout.write(`released ${formatAddr(r.addr)} (handle "${r.handle}")\n`);
      const freed = new Set(released.map((r) => formatAddr(r.addr)));
      for (const a of addrs) if (!freed.has(formatAddr(a))) process.stdout.write(`${formatAddr(a)} was not allocated${opts.handle === undefined ? '' : ` to handle "${opts.handle}"`}\n`);
      if (opts.handle !== undefined && addrs.length === 0 && released.length === 0) process.stdout.write(`handle "${opts.handle}" holds nothing\n`);
    });

  ipam
    .command('config')
    .description('show or change IPAM settings')
    .option('--strict-affinity <bool>', 'never borrow addresses from another node\'s block (true|false)')
    .option('--auto-allocate-blocks <bool>', 'claim new blocks when a node\'s blocks are full (true|false)')
    .option('--max-blocks-per-host <n>', 'blocks a node may own per family (0 = unset, cap 20)')
    .option('--json', 'print JSON')
    .action(async (opts: { strictAffinity?: string; autoAllocateBlocks?: string; maxBlocksPerHost?: string; json?: boolean }, cmd: Command) => {
      const patch = {
        ...(opts.strictAffinity !== undefined ? { strictAffinity: boolOption('--strict-affinity', opts.strictAffinity) } : {}),
        ...(opts.autoAllocateBlocks !== undefined ? { autoAllocateBlocks: boolOption('--auto-allocate-blocks', opts.autoAllocateBlocks) } : {}),
        ...(opts.maxBlocksPerHost !== undefined ? { maxBlocksPerHost: intOption('--max-blocks-per-host', opts.maxBlocksPerHost) } : {}),
      };
      const cfg = await withClusterIpam(cmd, (c) => (Object.keys(patch).length > 0 ? c.updateSettings(patch) : c.getSettings()));
      const shown = { strictAffinity: cfg.strictAffinity, autoAllocateBlocks: cfg.autoAllocateBlocks, maxBlocksPerHost: cfg.maxBlocksPerHost };
      if (opts.json) return printJson(shown);
      for (const [k, v] of Object.entries(shown)) process.stdout.write(`${k}: ${v}\n`);
    });

  ipam
    .command('reserve')
    .description('reserve addresses or CIDRs so they are never handed out (existing allocations stay)')
    .argument('<name>', 'reservation name')
    .requiredOption('--cidr <cidr>', 'an address or CIDR to reserve (repeatable)', collect, [] as string[])
    .action(async (name: string, opts: { cidr: string[] }, cmd: Command) => {
      const r = await withClusterIpam(cmd, (c) => c.putReservation(name, opts.cidr));
      const { formatPrefix } = await import('../ip/index.js');
      process.stdout.write(`reservation "${r.name}": ${r.cidrs.map(formatPrefix).join(', ')}\n`);
    });

  ipam
    .command('unreserve')
    .description('delete a reservation')
    .argument('<name>', 'reservation name')
    .action(async (name: string, _opts: unknown, cmd: Command) => {
      await withClusterIpam(cmd, (c) => c.deleteReservation(name));
      process.stdout.write(`reservation "${name}" deleted\n`);
    });
}

function percent(n: number, of: bigint): string {
  if (of === 0n) return '-';
  const p = Number((BigInt(n) * 10000n) / of) / 100;
  return `${p.toFixed(p < 10 ? 2 : 1)}%`;
}
