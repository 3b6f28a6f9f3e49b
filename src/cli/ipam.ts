/**
 * `podipam ipam show|check|release|config|reserve|unreserve|history` (history: history.ts): utilisation (or, with
 * `show --pod NS/NAME`, what one pod holds), consistency checks and repairs of the cluster
 * back end. Also the plumbing the cluster command groups
 * share (`pool` uses it): open the datastore named by --datastore / $PODIPAM_DATASTORE, run
 * the service, close in `finally`; bad command-line input (TypeError/RangeError from
 * validation) becomes a UsageError (exit 2).
 */
import { warmIdleTest } from '../warm/warm-usage.js';
import type { Command } from 'commander';
import type { ClusterIpam } from '../cluster/index.js';
import { openCommandStore, type StoreAccess } from './datastore-url.js';
import type { Store } from '../store/index.js';
import { reportWarmAnswers, warmTimeoutMs, withWarmTimeout } from './warm-answers-report.js';
import { outputFormat, printData, printTable, withOutputOptions } from './output.js';
import { BLOCKS_PER_HOST_SAFETY_CAP, MAX_BLOCKS_PER_HOST } from '../cluster/records/index.js';
import { UsageError } from './usage-error.js';
import { boolOption, parseDuration, parseIntFlag } from './parse-flag.js';
import { isEngineError } from '../util/engine-error.js';
import { registerHistory } from './history.js';

/**
 * Opens the store (a `read` creates none: see openCommandStore), runs `fn` with a ClusterIpam
 * on it, closes the store whatever happens.
 */
export async function withClusterIpam<T>(cmd: Command, access: StoreAccess, fn: (ipam: ClusterIpam, store: Store) => Promise<T>): Promise<T> {
  const { ClusterIpam } = await import('../cluster/index.js');
  const store = await openCommandStore(cmd, access);
  try {
    // The history stamps this command's transactions as the CLI's (src/cluster/records/history-stamp.ts).
    return await fn(new ClusterIpam(store, { writer: 'cli' }), store);
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

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** `ipam show --pod NS/NAME`: one row per handle of the pod (src/cluster/views/handles-of-pod.ts). */
async function showPod(cmd: Command, format: ReturnType<typeof outputFormat>, podText: string): Promise<void> {
  const { parsePodRef } = await import('../model/pod-ref.js');
  const pod = usage(() => parsePodRef('--pod', podText));
  const items = await withClusterIpam(cmd, 'read', (c) => c.handlesOfPod(pod.namespace, pod.name));
  if (printData(format, { items })) return;
  if (items.length === 0) {
    process.stdout.write(`pod ${pod.namespace}/${pod.name} holds no address (no handle record names it)\n`);
    return;
  }
  printTable(items, [
    { header: 'POD', value: (h) => h.pod },
    { header: 'HANDLE', value: (h) => h.handle },
    { header: 'ADDRESSES', value: (h) => h.addresses.map((a) => a.ip).join(',') || null },
    { header: 'NETWORK', value: (h) => h.network },
    { header: 'IFNAME', value: (h) => h.ifname },
    { header: 'NODE', value: (h) => h.node },
    { header: 'BLOCKS', value: (h) => [...new Set(h.addresses.map((a) => a.block))].join(',') || null },
    { header: 'POOLS', value: (h) => [...new Set(h.addresses.map((a) => a.pool))].join(',') || null },
  ]);
}

/** `ipam check --runtime-endpoint`: a dry runtime reconciliation pass on this node (src/cli/runtime-pass.ts). */
async function runtimeSuspects(cmd: Command, o: { runtimeEndpoint: string; node?: string; runtimeListInterval: string; grace: string; dataDir: string }) {
  const [{ runtimePass, runtimePassOptions }, { datastoreUrl }, { hostname }] = await Promise.all([
    import('./runtime-pass.js'),
    import('./datastore-url.js'),
    import('node:os'),
  ]);
  const node = o.node ?? hostname();
  const { plan, freed } = await runtimePass({ ...runtimePassOptions(o), datastore: datastoreUrl(cmd), node, dryRun: true });
  const row = (a: { network: string; containerId: string; ifname: string; addresses: readonly string[]; source: string }) => ({
    network: a.network,
    containerId: a.containerId,
    ifname: a.ifname,
    addresses: a.addresses,
    source: a.source,
  });
  return {
    node,
    endpoint: o.runtimeEndpoint,
    provable: freed.map((f) => ({ ...row({ ...f }), ageSeconds: Math.floor(f.ageMs / 1000) })),
    suspected: plan.suspected.map((s) => ({ ...row(s.allocation), reason: s.reason })),
    ...(plan.refused !== undefined ? { refused: plan.refused } : {}),
  };
}

/** Registers `podipam ipam …`. */
export function registerIpam(program: Command): void {
  const ipam = program.command('ipam').description('cluster IPAM: utilisation, consistency check, release');

  withOutputOptions(
    ipam
      .command('show')
      .description("allocated addresses per pool (and per block with --blocks or -o wide); IDLE: held idle by node agents' warm pools")
      .option('--blocks', 'also list every block with its node')
      .option('--pod <namespace/name>', 'instead: every handle of this pod with its addresses, network and node'),
    '{"items": [pool…]}, with --blocks also "blocks": [block…]; with --pod {"items": [handle…]}',
  ).action(async (opts: { blocks?: boolean; pod?: string; json?: boolean; output?: string }, cmd: Command) => {
    const format = outputFormat(opts);
    if (opts.pod !== undefined) return showPod(cmd, format, opts.pod);
    // Idle = held by a node agent's warm pool for later pods (src/warm/warm-usage.ts).
    const u = await withClusterIpam(cmd, 'read', async (c) => c.usage({ isIdle: await warmIdleTest(c.store) }));
    if (printData(format, opts.blocks ? { items: u.pools, blocks: u.blocks } : { items: u.pools })) return;
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
    if (opts.blocks || format === 'wide') {
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

  withOutputOptions(
    ipam
      .command('check')
      .description(
        "report leaked allocations, inconsistent records, and addresses two holders claim (blocks, handles, each node agent's idle addresses, cooldown, sticky reservations and pods) (read-only); exit code 1 when anything is found",
      )
      .option(
        '--view-max-age <duration>',
        "an agent's published holder view older than this is stale (its disagreements are listed as unsettled, not found); default: 3 × the agent's own refresh period + 10s",
      )
      .option(
        '--runtime-endpoint <endpoint>',
        "also ask this node's container runtime over CRI (e.g. unix:///run/containerd/containerd.sock) for its sandboxes: this node's allocations it lacks are suspected leaks (those `podipam gc` would free count as found); frees nothing",
      )
      .option('--node <name>', 'with --runtime-endpoint: the node whose cluster records are judged (default: the host name)')
      .option('--runtime-list-interval <duration>', 'with --runtime-endpoint: time between the two sandbox listings', '5s')
      .option('--grace <duration>', 'with --runtime-endpoint: an allocation younger than this is only suspected', '4m')
      .option('--data-dir <dirs>', 'with --runtime-endpoint: the local back end\'s data directories, comma-separated ("" for none)', '/var/lib/cni/networks'),
    '{"leaks": [...], "problems": [...], "holders": [...], "unsettled": [...], "stickyHolds": [...], "borrowed": [...] (each of the last four when any), "runtime": {"node", "endpoint", "provable": [...], "suspected": [...]} (with --runtime-endpoint)}',
  ).action(
    async (
      opts: {
        json?: boolean;
        output?: string;
        viewMaxAge?: string;
        runtimeEndpoint?: string;
        node?: string;
        runtimeListInterval: string;
        grace: string;
        dataDir: string;
      },
      cmd: Command,
    ) => {
      const format = outputFormat(opts);
      const viewMaxAgeMs = opts.viewMaxAge === undefined ? undefined : parseDuration('--view-max-age', opts.viewMaxAge);
      const runtime = opts.runtimeEndpoint === undefined ? undefined : await runtimeSuspects(cmd, { ...opts, runtimeEndpoint: opts.runtimeEndpoint });
      const r = await withClusterIpam(cmd, 'read', (c) => c.check({ viewMaxAgeMs }));
      const holders = r.holders ?? [];
      const n = r.leaks.length + r.problems.length + holders.length + (runtime?.provable.length ?? 0);
      // Non-zero when anything is found, so cron jobs and monitoring see it (0 clean, 1 found, 2 usage).
      if (n > 0) {
        // The report is on stdout; stderr says why the exit status is 1 (what cron mails).
        process.stderr.write(
          `podipam: ipam check found ${r.leaks.length} leak(s), ${holders.length} address(es) with a wrong holder and ${r.problems.length} other problem(s)\n`,
        );
        process.exitCode = 1;
      }
      const data = {
        leaks: r.leaks,
        problems: r.problems,
        ...(r.holders ? { holders: r.holders } : {}),
        ...(r.unsettled ? { unsettled: r.unsettled } : {}),
        ...(r.stickyHolds ? { stickyHolds: r.stickyHolds } : {}),
        ...(r.borrowed ? { borrowed: r.borrowed } : {}),
        ...(runtime ? { runtime } : {}),
      };
      if (printData(format, data)) return;
      for (const l of r.leaks)
        process.stdout.write(
          `leak: ${l.ip} in block ${l.block} is held by handle "${l.handle}", which does not exist (podipam ipam release --ip ${l.ip} --handle ${l.handle})\n`,
        );
      for (const p of r.problems) process.stdout.write(`problem (${p.kind}): ${p.message}\n`);
      for (const h of holders) process.stdout.write(`holder (${h.kind}): node ${h.node}: ${h.message}\n`);
      // Informational: what an agent may not have answered yet (re-run after its next refresh).
      for (const u of r.unsettled ?? []) process.stdout.write(`unsettled (${u.kind}): node ${u.node}, ${u.address}: ${u.reason}\n`);
      // Informational: a sticky pod's addresses kept for its next incarnation (not a problem).
      for (const h of r.stickyHolds ?? []) {
        process.stdout.write(
          `sticky-hold: "${h.handle}" keeps ${h.addresses.join(', ') || 'nothing'} for pod ${h.namespace ?? '?'}/${h.pod ?? '?'} until ${h.stickyUntil}${h.expired ? " (expired: podipam serve's GC releases it)" : ''}\n`,
        );
      }
      // Informational: a gone node's block kept for other nodes' pods (GC reports, never frees, these).
      for (const b of r.borrowed ?? []) {
        const pods = b.pods.map((p) => `${p.pod ?? p.handle} on node "${p.node}" (${p.address})`).join(', ');
        process.stdout.write(
          `borrowed: block ${b.block} (${b.node === null ? 'no node: kept by GC' : `node "${b.node}", deleted`}) keeps addresses of other nodes' pods: ${pods}\n`,
        );
      }
      for (const p of runtime?.provable ?? [])
        process.stdout.write(
          `runtime-leak: node ${runtime!.node}: ${p.containerId}/${p.ifname} (${p.network}: ${p.addresses.join(', ')}) has no sandbox in two answers of ${runtime!.endpoint}, ${p.ageSeconds} s old (podipam gc --runtime-endpoint ${runtime!.endpoint} frees it)\n`,
        );
      // Informational: not listed by the runtime, not (yet) proven gone.
      for (const s of runtime?.suspected ?? [])
        process.stdout.write(
          `suspected-leak: node ${runtime!.node}: ${s.containerId}/${s.ifname} (${s.network}: ${s.addresses.join(', ')}) not among the runtime's sandboxes: ${s.reason}\n`,
        );
      if (runtime?.refused) process.stdout.write(`runtime: nothing provable: ${runtime.refused}\n`);
      process.stdout.write(`Check complete; found ${n} problem${n === 1 ? '' : 's'}.\n`);
    },
  );

  ipam
    .command('release')
    .description('free addresses by address or by handle (both: those addresses only while that handle holds them)')
    .option('--ip <ip>', 'an address to free, whoever holds it (repeatable)', collect, [] as string[])
    .option('--handle <handle>', 'free everything this handle holds; with --ip, only the given addresses it still holds')
    .option(
      '--force',
      "also free idle addresses of a node agent's warm pool (only for a node whose agent is gone: a running agent may hand one out until its watch sees the release)",
    )
    .action(async (opts: { ip: string[]; handle?: string; force?: boolean }, cmd: Command) => {
      if (opts.ip.length === 0 && opts.handle === undefined) throw new UsageError('give --ip (repeatable), --handle, or both');
      const { formatAddr, parseAddr } = await import('../ip/index.js');
      const { isWarmHandle } = await import('../model/reserved-network.js');
      const { warmHandleNode } = await import('../warm/warm-handle.js');
      const addrs = usage(() => opts.ip.map((t) => parseAddr(t)));
      const heldBy = opts.handle === undefined ? undefined : new Set([opts.handle]);
      const released = await withClusterIpam(cmd, 'write', async (ipam) => {
        if (!opts.force) {
          // An idle warm address is the agent's to give back: freed behind it, it stays in its idle
          // queue until the agent's watch sees the release, and a pod could get it meanwhile.
          const warm = opts.handle !== undefined && isWarmHandle(opts.handle) ? [`handle "${opts.handle}"`] : [];
          for (const a of addrs) {
            const h = await ipam.holderOfAddress(a);
            if (h !== undefined && isWarmHandle(h.handle))
              warm.push(`${formatAddr(a)} (idle in node ${warmHandleNode(h.handle) ?? h.node}'s warm pool, handle "${h.handle}")`);
          }
          if (warm.length > 0) {
            throw new UsageError(
              `not released: ${warm.join(', ')}: an idle warm-pool address is given back by its node agent, not freed behind it (a running agent could hand it to a pod until it sees the release). ` +
                'To take it out of service: podipam ipam reserve NAME --cidr ADDRESS (the agent returns reserved idle addresses within seconds). ' +
                "Only if that node's agent is gone for good: add --force.",
            );
          }
        }
        const c = ipam.withReason('release');
        return addrs.length === 0 ? c.releaseHandle(opts.handle as string) : c.releaseAddresses(addrs, heldBy);
      });
      for (const r of released) process.stdout.write(`released ${formatAddr(r.addr)} (handle "${r.handle}")\n`);
      const freed = new Set(released.map((r) => formatAddr(r.addr)));
      for (const a of addrs)
        if (!freed.has(formatAddr(a)))
          process.stdout.write(`${formatAddr(a)} was not allocated${opts.handle === undefined ? '' : ` to handle "${opts.handle}"`}\n`);
      if (opts.handle !== undefined && addrs.length === 0 && released.length === 0) process.stdout.write(`handle "${opts.handle}" holds nothing\n`);
    });

  withOutputOptions(
    ipam
      .command('config')
      .description('show or change IPAM settings')
      .option('--strict-affinity <bool>', "never borrow addresses from another node's block (true|false)")
      .option('--auto-allocate-blocks <bool>', "claim new blocks when a node's blocks are full (true|false)")
      .option('--max-blocks-per-host <n>', `blocks a node may own per family, 1-${MAX_BLOCKS_PER_HOST}; 0 = unset: at most ${BLOCKS_PER_HOST_SAFETY_CAP}`),
    '{"strictAffinity": …, "autoAllocateBlocks": …, "maxBlocksPerHost": …}',
  ).action(async (opts: { strictAffinity?: string; autoAllocateBlocks?: string; maxBlocksPerHost?: string; json?: boolean; output?: string }, cmd: Command) => {
    const format = outputFormat(opts);
    const patch = {
      ...(opts.strictAffinity !== undefined ? { strictAffinity: boolOption('--strict-affinity', opts.strictAffinity) } : {}),
      ...(opts.autoAllocateBlocks !== undefined ? { autoAllocateBlocks: boolOption('--auto-allocate-blocks', opts.autoAllocateBlocks) } : {}),
      ...(opts.maxBlocksPerHost !== undefined
        ? { maxBlocksPerHost: parseIntFlag('--max-blocks-per-host', opts.maxBlocksPerHost, { min: 0, max: MAX_BLOCKS_PER_HOST }) }
        : {}),
    };
    const cfg = await withClusterIpam(cmd, Object.keys(patch).length > 0 ? 'write' : 'read', (c) =>
      Object.keys(patch).length > 0 ? c.updateSettings(patch) : c.getSettings(),
    );
    const shown = { strictAffinity: cfg.strictAffinity, autoAllocateBlocks: cfg.autoAllocateBlocks, maxBlocksPerHost: cfg.maxBlocksPerHost };
    if (printData(format, shown)) return;
    for (const [k, v] of Object.entries(shown)) process.stdout.write(`${k}: ${v}\n`);
  });

  withWarmTimeout(
    ipam
      .command('reserve')
      .description('reserve addresses or CIDRs so they are never handed out (existing allocations stay; idle warm-pool addresses are given back)')
      .argument('<name>', 'reservation name')
      .requiredOption('--cidr <cidr>', 'an address or CIDR to reserve (repeatable)', collect, [] as string[]),
  ).action(async (name: string, opts: { cidr: string[]; warmTimeout?: string }, cmd: Command) => {
    const timeoutMs = warmTimeoutMs(opts.warmTimeout);
    const { formatPrefix } = await import('../ip/index.js');
    await withClusterIpam(cmd, 'write', async (c, store) => {
      const r = await c.putReservation(name, opts.cidr);
      process.stdout.write(`reservation "${r.name}": ${r.cidrs.map(formatPrefix).join(', ')}\n`);
      await reportWarmAnswers(store, `reservation "${r.name}"`, { space: r.cidrs }, { timeoutMs });
    });
  });

  ipam
    .command('unreserve')
    .description('delete a reservation')
    .argument('<name>', 'reservation name')
    .action(async (name: string, _opts: unknown, cmd: Command) => {
      await withClusterIpam(cmd, 'write', (c) => c.deleteReservation(name));
      process.stdout.write(`reservation "${name}" deleted\n`);
    });

  registerHistory(ipam);
}

function percent(n: number, of: bigint): string {
  if (of === 0n) return '-';
  const p = Number((BigInt(n) * 10000n) / of) / 100;
  return `${p.toFixed(p < 10 ? 2 : 1)}%`;
}
