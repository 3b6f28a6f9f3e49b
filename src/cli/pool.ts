/**
 * `podipam pool create|list|show|resize|drain|undrain|set|delete|enable|disable`: IP pools of
 * the cluster back end.
 */
import type { Command } from 'commander';
import type { PoolHeld } from '../cluster/index.js';
import { type Pool, parseReuseAfter, reuseAfterText } from '../cluster/records/index.js';
import type { Store } from '../store/index.js';
import { reportWarmAnswers, warmTimeoutMs, withWarmTimeout } from './warm-answers-report.js';
import { withClusterIpam } from './ipam.js';
import { boolOption, parseDuration, parseOptionalIntFlag } from './parse-flag.js';
import { UsageError } from './usage-error.js';
import { outputFormat, printData, printTable, withOutputOptions } from './output.js';

/** `--reuse-after`, checked before anything connects: UsageError naming the flag and value. */
function reuseAfterFlag(text: string): string {
  try {
    parseReuseAfter(text);
  } catch (e) {
    throw new UsageError(
      `invalid --reuse-after ${JSON.stringify(text)}: ${e instanceof Error ? e.message.replace(/^invalid pool reuseAfter "[^"]*": /, '') : String(e)}`,
      { cause: e },
    );
  }
  return text;
}

function reuseAfterNote(ms: number): string {
  return ms > 0 ? `, released addresses quarantined for ${reuseAfterText(ms)}` : '';
}

/** --window: a UsageError naming the flag and value. */
async function windowFlag(text: string): Promise<number> {
  const { parseWindow } = await import('../history/pool-forecasts.js');
  try {
    return parseWindow('--window', text);
  } catch (e) {
    throw new UsageError((e as Error).message, { cause: e });
  }
}

/** Registers `podipam pool …`. */
export function registerPool(program: Command): void {
  const pool = program.command('pool').description('IP pools for cluster (block) IPAM');

  pool
    .command('create')
    .description('create a pool (pool resize and pool set change it later)')
    .argument('<name>', 'pool name (lower case, digits, "-", ".")')
    .requiredOption('--cidr <cidr>', 'the pool CIDR, e.g. 10.244.0.0/16 or fd00:244::/64')
    .option('--block-size <n>', 'block prefix length (default 26 for IPv4, 122 for IPv6; 20-32 / 116-128)')
    .option('--node-selector <sel>', 'nodes the pool serves: all() or key=value[,key!=value…]', 'all()')
    .option('--disabled', 'create it disabled (no new assignments)')
    .option(
      '--reuse-after <duration>',
      'reuse quarantine: an address released anywhere is handed to no pod anywhere for this long (e.g. 30s; at most 1h; default 0, off)',
    )
    .action(async (name: string, opts: { cidr: string; blockSize?: string; nodeSelector: string; disabled?: boolean; reuseAfter?: string }, cmd: Command) => {
      const blockSize = parseOptionalIntFlag('--block-size', opts.blockSize);
      const reuseAfter = opts.reuseAfter === undefined ? undefined : reuseAfterFlag(opts.reuseAfter);
      const p = await withClusterIpam(cmd, 'write', (ipam) =>
        ipam.createPool({
          name,
          cidr: opts.cidr,
          blockSize,
          nodeSelector: opts.nodeSelector,
          disabled: opts.disabled ?? false,
          ...(reuseAfter !== undefined ? { reuseAfter } : {}),
        }),
      );
      const { formatPrefix } = await import('../ip/index.js');
      process.stdout.write(
        `pool "${p.name}" created: ${formatPrefix(p.cidr)}, blocks of /${p.blockSize}, nodes ${p.nodeSelector.text}${p.disabled ? ', disabled' : ''}${reuseAfterNote(p.reuseAfterMs)}\n`,
      );
    });

  withOutputOptions(
    pool
      .command('list')
      .description(
        'list pools (-o wide: also the blocks each pool cuts into, its capacity, the addresses held, and its trend and time to full from the allocation history)',
      )
      .option('--window <duration>', 'with -o wide: the history the trend is fitted to (10s to 30d)', '6h')
      .option('--history-db <file>', "with -o wide: serve's history file (default: the datastore's own)"),
    '{"items": [pool…]}',
  ).action(async (opts: { json?: boolean; output?: string; window: string; historyDb?: string }, cmd: Command) => {
    const format = outputFormat(opts);
    const [{ poolText }, { blockCount, poolUsableCount }] = await Promise.all([import('../cluster/records/index.js'), import('../alloc/block-layout.js')]);
    const wide = format === 'wide';
    const windowMs = wide ? await windowFlag(opts.window) : 0;
    const [pools, usage] = await withClusterIpam(cmd, 'read', async (ipam) => [await ipam.listPools(), wide ? await ipam.usage() : undefined] as const);
    const items = pools.map(poolText);
    if (printData(format, { items })) return;
    const used = new Map((usage?.pools ?? []).map((u) => [u.name, u.allocated]));
    const rows = pools.map((p, i) => ({
      ...(items[i] as (typeof items)[number]),
      slots: blockCount(p.cidr, p.blockSize),
      capacity: poolUsableCount(p.cidr, p.blockSize),
      used: used.get(p.name) ?? 0,
    }));
    const { poolTrends } = await import('./pool-trends.js');
    const trends = wide
      ? await poolTrends(
          cmd,
          opts,
          rows.map((r) => ({ name: r.name, capacity: Number(r.capacity), allocated: r.used })),
          windowMs,
        )
      : undefined;
    type Row = (typeof rows)[number];
    printTable(rows, [
      { header: 'NAME', value: (p) => p.name },
      { header: 'CIDR', value: (p) => p.cidr },
      { header: 'BLOCK', value: (p) => `/${p.blockSize}` },
      { header: 'NODE-SELECTOR', value: (p) => p.nodeSelector },
      { header: 'STATE', value: (p) => (p.deleting ? 'deleting' : p.draining ? 'draining' : p.disabled ? 'disabled' : 'enabled') },
      ...(trends
        ? [
            { header: 'BLOCKS', value: (p: Row) => p.slots },
            { header: 'CAPACITY', value: (p: Row) => p.capacity },
            { header: 'USED', value: (p: Row) => p.used },
            { header: 'TREND', value: (p: Row) => trends.cells.get(p.name)?.trend ?? '-' },
            { header: 'FULL-IN', value: (p: Row) => trends.cells.get(p.name)?.fullIn ?? '-' },
          ]
        : []),
    ]);
    if (trends && trends.footnote !== '') process.stdout.write(`\n${trends.footnote}\n`);
  });

  withOutputOptions(
    pool.command('show').description('one pool: its settings, state and what it still holds').argument('<name>', 'pool name'),
    '{pool…, "allocated": N, "inUse": N, "idle": N, "blocks": N, "nodes": [{"node", "pods": [{"pod"?, "handle", "addresses"}], "warm"?: {"handles", "idle"}}]}',
  ).action(async (name: string, opts: { json?: boolean; output?: string }, cmd: Command) => {
    const format = outputFormat(opts);
    const held = await withClusterIpam(cmd, 'read', (ipam) => ipam.poolHeld(name));
    if (printData(format, await heldData(held))) return;
    const { poolState } = await import('../cluster/records/index.js');
    const { formatPrefix } = await import('../ip/index.js');
    const p = held.pool;
    const lines = [
      `pool "${p.name}": ${formatPrefix(p.cidr)}, blocks of /${p.blockSize}${p.formerBlockSizes.length > 0 ? ` (older blocks of /${p.formerBlockSizes.join(', /')})` : ''}, nodes ${p.nodeSelector.text}${reuseAfterNote(p.reuseAfterMs)}`,
      `state: ${poolState(p)}${p.disabled && (p.draining || p.deleting) ? ' (and disabled)' : ''}${p.shrinkingFrom ? `, shrinking from ${formatPrefix(p.shrinkingFrom)} (unfinished: run the resize again)` : ''}`,
      `held: ${held.allocated} address${held.allocated === 1 ? '' : 'es'} in ${held.blocks} block${held.blocks === 1 ? '' : 's'}${held.idle > 0 ? ` (${held.inUse} in use, ${held.idle} idle in warm pools)` : ''}`,
    ];
    process.stdout.write(lines.join('\n') + '\n');
  });

  pool
    .command('resize')
    .description('grow a pool in place (a CIDR containing the old one) or shrink it (a CIDR inside: refused while addresses are allocated outside it)')
    .argument('<name>', 'pool name')
    .requiredOption('--cidr <cidr>', 'the new pool CIDR')
    .action(async (name: string, opts: { cidr: string }, cmd: Command) => {
      const r = await withClusterIpam(cmd, 'write', (ipam) => ipam.resizePool(name, opts.cidr));
      const { formatPrefix } = await import('../ip/index.js');
      const what = r.kind === 'grow' ? 'grown' : r.kind === 'shrink' ? 'shrunk' : 'unchanged';
      process.stdout.write(
        `pool "${name}" ${what}: ${formatPrefix(r.pool.cidr)}${r.removedBlocks > 0 ? `, ${r.removedBlocks} empty block${r.removedBlocks === 1 ? '' : 's'} outside it removed` : ''}\n`,
      );
    });

  withOutputOptions(
    withWarmTimeout(
      pool
        .command('drain')
        .description('stop new addresses and blocks from a pool (existing ones stay until their pods go) and print what it still holds')
        .argument('<name>', 'pool name')
        .option('--wait', 'follow until the pool holds nothing')
        .option('--timeout <duration>', 'with --wait: give up after this long (exit 1; default 10m)'),
    ),
    'the same as pool show',
  ).action(async (name: string, opts: { wait?: boolean; timeout?: string; warmTimeout?: string; json?: boolean; output?: string }, cmd: Command) => {
    const format = outputFormat(opts);
    if (opts.timeout !== undefined && !opts.wait) throw new UsageError('--timeout is only used with --wait');
    const timeoutMs = opts.timeout === undefined ? 600_000 : parseDuration('--timeout', opts.timeout);
    const warmMs = warmTimeoutMs(opts.warmTimeout);
    await withClusterIpam(cmd, 'write', async (ipam, store) => {
      const p = await ipam.setPoolDraining(name, true);
      await warmAnswers(store, p, { timeoutMs: warmMs, toStderr: format === 'json' || format === 'yaml' });
      const deadline = Date.now() + timeoutMs;
      let last = -1;
      for (;;) {
        const held = await ipam.poolHeld(name);
        if (held.allocated !== last) {
          if (!printData(format, await heldData(held))) process.stdout.write(heldText(held));
          last = held.allocated;
        }
        if (!opts.wait || held.allocated === 0) return;
        if (Date.now() >= deadline)
          throw new Error(
            `pool "${name}" still holds ${held.allocated} address${held.allocated === 1 ? '' : 'es'} after ${opts.timeout ?? '10m'} (it stays draining)`,
          );
        await new Promise((r) => setTimeout(r, Math.min(1000, Math.max(0, deadline - Date.now()))));
      }
    });
  });

  pool
    .command('undrain')
    .description('let a drained pool hand out addresses again')
    .argument('<name>', 'pool name')
    .action(async (name: string, _opts: unknown, cmd: Command) => {
      const p = await withClusterIpam(cmd, 'write', (ipam) => ipam.setPoolDraining(name, false));
      process.stdout.write(`pool "${name}" no longer draining${p.disabled ? ' (it is still disabled: pool enable)' : ''}\n`);
    });

  withWarmTimeout(
    pool
      .command('set')
      .description('change a serving pool: block size of future blocks (existing blocks keep theirs), node selector, disabled')
      .argument('<name>', 'pool name')
      .option('--block-size <n>', 'prefix length of blocks claimed from now on (within 4 of every size its blocks have)')
      .option('--node-selector <sel>', 'nodes the pool serves: all() or key=value[,key!=value…]')
      .option('--disabled <bool>', 'true or false')
      .option(
        '--reuse-after <duration>',
        'reuse quarantine: an address released anywhere is handed to no pod anywhere for this long (e.g. 30s; at most 1h; 0 turns it off)',
      ),
  ).action(
    async (name: string, opts: { blockSize?: string; nodeSelector?: string; disabled?: string; reuseAfter?: string; warmTimeout?: string }, cmd: Command) => {
      const blockSize = parseOptionalIntFlag('--block-size', opts.blockSize);
      const disabled = boolOption('--disabled', opts.disabled);
      const warmMs = warmTimeoutMs(opts.warmTimeout);
      const reuseAfter = opts.reuseAfter === undefined ? undefined : reuseAfterFlag(opts.reuseAfter);
      if (blockSize === undefined && opts.nodeSelector === undefined && disabled === undefined && reuseAfter === undefined)
        throw new UsageError('nothing to set: give --block-size, --node-selector, --disabled or --reuse-after');
      await withClusterIpam(cmd, 'write', async (ipam, store) => {
        const p = await ipam.setPoolSettings(name, {
          ...(blockSize !== undefined ? { blockSize } : {}),
          ...(opts.nodeSelector !== undefined ? { nodeSelector: opts.nodeSelector } : {}),
          ...(disabled !== undefined ? { disabled } : {}),
          ...(reuseAfter !== undefined ? { reuseAfter } : {}),
        });
        process.stdout.write(
          `pool "${p.name}": blocks of /${p.blockSize}${p.formerBlockSizes.length > 0 ? ` from now on (existing blocks of /${p.formerBlockSizes.join(', /')} keep their size)` : ''}, nodes ${p.nodeSelector.text}${p.disabled ? ', disabled' : ''}${reuseAfterNote(p.reuseAfterMs)}\n`,
        );
        const { takesOutOfService } = await import('../warm/warm-answers.js');
        if (takesOutOfService({ disabled, nodeSelector: opts.nodeSelector })) await warmAnswers(store, p, { timeoutMs: warmMs });
      });
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

  for (const [verb, disabled] of [
    ['disable', true],
    ['enable', false],
  ] as const) {
    const c = pool
      .command(verb)
      .description(
        disabled ? 'stop new assignments from a pool (existing ones stay; idle warm-pool addresses are given back)' : 'allow new assignments from a pool again',
      )
      .argument('<name>', 'pool name');
    if (disabled) withWarmTimeout(c);
    c.action(async (name: string, opts: { warmTimeout?: string }, cmd: Command) => {
      const warmMs = warmTimeoutMs(opts.warmTimeout);
      await withClusterIpam(cmd, 'write', async (ipam, store) => {
        const p = await ipam.setPoolDisabled(name, disabled);
        process.stdout.write(`pool "${name}" ${verb}d\n`);
        if (disabled) await warmAnswers(store, p, { timeoutMs: warmMs });
      });
    });
  }
}

/** Waits for the node agents to apply `p`'s change (warm-answers-report.ts, poolChangeScope). */
async function warmAnswers(store: Store, p: Pool, o: { timeoutMs: number; toStderr?: boolean }): Promise<void> {
  const { poolChangeScope } = await import('../warm/warm-answers.js');
  await reportWarmAnswers(store, `pool "${p.name}"`, await poolChangeScope(store, p), o);
}

async function heldData(h: PoolHeld): Promise<unknown> {
  const { poolText } = await import('../cluster/records/index.js');
  return { ...poolText(h.pool), allocated: h.allocated, inUse: h.inUse, idle: h.idle, blocks: h.blocks, nodes: h.nodes };
}

const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

/** Pods and warm pools apart: a warm pool's idle addresses are no pod's, and nothing waits on a pod for them. */
function heldText(h: PoolHeld): string {
  const pods = h.nodes.reduce((n, x) => n + x.pods.length, 0);
  const split = h.idle > 0 ? `: ${h.inUse} in use by ${plural(pods, 'pod')}, ${h.idle} idle in warm pools (no pod's: the node agents return them)` : '';
  const head = `pool "${h.pool.name}" ${h.pool.draining ? 'draining' : 'serving'}: ${plural(h.allocated, 'address', 'addresses')} still held${split}${h.allocated === 0 ? ' (pool delete removes it)' : ''}`;
  const lines = [head];
  for (const n of h.nodes) {
    const idle = n.warm ? `; ${plural(n.warm.idle.length, 'idle address', 'idle addresses')} held by node ${n.node}'s warm pool` : '';
    lines.push(`  node ${n.node}: ${plural(n.pods.length, 'pod')}${idle}`);
    for (const p of n.pods) lines.push(`    ${p.pod ?? p.handle}  ${p.addresses.join(', ')}`);
    if (n.warm) lines.push(`    warm pool, idle (${n.warm.handles.join(', ')})  ${n.warm.idle.join(', ')}`);
  }
  return lines.join('\n') + '\n';
}
