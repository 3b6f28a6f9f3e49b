/**
 * `podipam import whereabouts FILE|-`: adopts Whereabouts' allocations (its IPPool and
 * OverlappingRangeIPReservation objects, as `kubectl get … -o json` prints them) into the
 * cluster store, so pods keep their addresses when their network moves from Whereabouts to
 * podipam's cluster mode. Parsing is src/import/whereabouts/parse-whereabouts.ts (pure); the
 * check and the writes are the one applier, through the runner every importer shares
 * (import-run.ts: --dry-run, --skip-conflicts, -o table|json, exit 1 on conflicts).
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { BLOCK_SIZE_RANGE } from '../alloc/block-layout.js';
import type { WhereaboutsPoolMapping } from '../import/whereabouts/parse-whereabouts.js';
import { reservedNetwork } from '../model/reserved-network.js';
import { type ImportRunFlags, importOutputFormat, runImport, withImportRunOptions } from './import-run.js';
import { parseIntFlag } from './parse-flag.js';
import { UsageError } from './usage-error.js';

const KUBECTL = 'kubectl get ippools.whereabouts.cni.cncf.io,overlappingrangeipreservations.whereabouts.cni.cncf.io -A -o json';

interface WhereaboutsFlags extends ImportRunFlags {
  network?: string;
  pool: string[];
  blockSize: string[];
}

const collect = (v: string, prev: string[]): string[] => [...prev, v];

/** Adds `whereabouts` under the `import` command. */
export function registerImportWhereabouts(imp: Command): void {
  withImportRunOptions(
    imp
      .command('whereabouts')
      .argument('<file>', `the output of \`${KUBECTL}\`, or - for stdin`)
      .description(
        "adopt Whereabouts' allocations under the handle <network>:<containerID>:<ifname>. Whereabouts records no node: " +
          'the blocks it fills have no affinity (no node claims them; the pods keep their addresses until their DEL)',
      )
      .option('--network <name>', "the CNI network name the pods' DELs carry (default: each IPPool name's network-name prefix; required when a pool has none)")
      .option(
        '--pool <[from=]name>',
        'put a range into the existing podipam pool NAME instead of creating one; FROM (an IPPool name or range CIDR) picks the range, none: every range (repeatable)',
        collect,
        [] as string[],
      )
      .option(
        '--block-size <n>',
        'block size of the pools created: 20-30 for IPv4, 116-126 for IPv6 (repeatable, one per family; default /26 and /122)',
        collect,
        [] as string[],
      ),
  ).action(async (file: string, opts: WhereaboutsFlags, cmd: Command) => {
    importOutputFormat(opts.output);
    const { parseWhereabouts, WhereaboutsFormatError } = await import('../import/whereabouts/parse-whereabouts.js');
    if (opts.network !== undefined) {
      const reserved = reservedNetwork('--network', opts.network);
      if (reserved !== undefined) throw new UsageError(reserved);
    }
    const doc = readDocument(file);
    let plan;
    try {
      plan = parseWhereabouts(doc, {
        ...(opts.network === undefined ? {} : { network: opts.network }),
        pools: poolMappings(opts.pool),
        blockSize: blockSizes(opts.blockSize),
      });
    } catch (e) {
      if (e instanceof WhereaboutsFormatError) throw new UsageError(`${file === '-' ? 'stdin' : file}: ${e.message}`, { cause: e });
      throw e;
    }
    for (const a of plan.addresses) {
      const reserved = a.holder.network === undefined ? undefined : reservedNetwork('network', a.holder.network);
      if (reserved !== undefined) throw new UsageError(`${file === '-' ? 'stdin' : file}: ${reserved}`);
    }
    await runImport(cmd, plan, opts);
  });
}

function readDocument(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (e) {
    throw new UsageError(`cannot read ${file === '-' ? 'stdin' : file}: ${(e as Error).message}`, { cause: e });
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    throw new UsageError(`${file === '-' ? 'stdin' : file} is not JSON (${(e as Error).message}): give the output of \`${KUBECTL}\``, { cause: e });
  }
}

function poolMappings(values: readonly string[]): WhereaboutsPoolMapping[] {
  return values.map((v) => {
    const eq = v.lastIndexOf('=');
    const to = eq < 0 ? v : v.slice(eq + 1);
    const from = eq < 0 ? undefined : v.slice(0, eq);
    if (to === '' || from === '') throw new UsageError(`invalid --pool ${JSON.stringify(v)}: expected NAME or FROM=NAME`);
    return from === undefined ? { to } : { from, to };
  });
}

function blockSizes(values: readonly string[]): { 4?: number; 6?: number } {
  const out: { 4?: number; 6?: number } = {};
  for (const v of values) {
    const n = parseIntFlag('--block-size', v, { min: BLOCK_SIZE_RANGE[4][0], max: BLOCK_SIZE_RANGE[6][1] });
    const fam = n <= BLOCK_SIZE_RANGE[4][1] ? 4 : n >= BLOCK_SIZE_RANGE[6][0] ? 6 : undefined;
    if (fam === undefined) throw new UsageError(`invalid --block-size ${v}: expected 20-30 (IPv4) or 116-126 (IPv6)`);
    if (out[fam] !== undefined) throw new UsageError(`--block-size given twice for IPv${fam}: ${out[fam]} and ${n}`);
    out[fam] = n;
  }
  return out;
}
