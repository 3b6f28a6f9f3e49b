/**
 * `podipam gc --runtime-endpoint unix:///run/containerd/containerd.sock [--dry-run]`: one pass
 * of runtime reconciliation (src/reconcile) for a node without an agent — the plain plugin in
 * local or cluster mode — for a systemd timer or a CronJob. It lists the runtime's sandboxes
 * twice, `--runtime-list-interval` apart, and frees (with `--dry-run`: lists) exactly the
 * allocations of this node older than `--grace` that both answers lack: the local back end's
 * files under `--data-dir`, and, with --datastore or $PODIPAM_DATASTORE, the cluster back end's
 * records of `--node`. A runtime that does not answer, answers an error or an implausible list
 * frees nothing: exit 1 (refused: exit 3), naming why.
 */
import type { Command } from 'commander';
import { hostname } from 'node:os';
import { outputFormat, printData, printTable, withOutputOptions } from './output.js';

interface GcFlags {
  runtimeEndpoint?: string;
  dryRun?: boolean;
  runtimeListInterval: string;
  grace: string;
  dataDir: string;
  node?: string;
  json?: boolean;
  output?: string;
}

export function registerGc(program: Command): void {
  withOutputOptions(
    program
      .command('gc')
      .description(
        "free this node's allocations whose sandbox the container runtime no longer has (one runtime reconciliation pass over CRI; for nodes without `podipam agent --runtime-endpoint`)",
      )
      .requiredOption('--runtime-endpoint <endpoint>', "the runtime's CRI endpoint, e.g. unix:///run/containerd/containerd.sock")
      .option('--dry-run', 'list what would be freed; free nothing')
      .option('--runtime-list-interval <duration>', 'time between the two sandbox listings', '5s')
      .option(
        '--grace <duration>',
        "never free an allocation younger than this (at least the longest sandbox creation: 2 × kubelet's --runtime-request-timeout, 2m)",
        '4m',
      )
      .option('--data-dir <dirs>', 'the local back end\'s data directories, comma-separated ("" for none)', '/var/lib/cni/networks')
      .option('--node <name>', 'with a datastore: the node whose cluster records are judged (default: the host name)'),
    '{"dryRun": bool, "items": [freed…], "suspected": [...], "refused"?: "…"}',
  ).action(async (flags: GcFlags, cmd: Command) => {
    const format = outputFormat(flags);
    const { runtimePass, runtimePassOptions } = await import('./runtime-pass.js');
    const options = runtimePassOptions({ ...flags, runtimeEndpoint: flags.runtimeEndpoint! });
    const datastore = cmd.optsWithGlobals<{ datastore?: string }>().datastore ?? process.env.PODIPAM_DATASTORE;
    const { plan, freed } = await runtimePass({
      ...options,
      ...(datastore !== undefined ? { datastore } : {}),
      node: flags.node ?? hostname(),
      dryRun: flags.dryRun === true,
    });
    const suspected = plan.suspected.map(({ allocation: a, reason }) => ({
      source: a.source,
      network: a.network,
      containerId: a.containerId,
      ifname: a.ifname,
      addresses: a.addresses,
      reason,
    }));
    const items = freed.map((f) => ({
      source: f.source,
      network: f.network,
      containerId: f.containerId,
      ifname: f.ifname,
      addresses: f.addresses,
      ageSeconds: Math.floor(f.ageMs / 1000),
      lists: f.lists.map((t) => new Date(t).toISOString()),
    }));
    if (plan.refused !== undefined) process.exitCode = 3;
    if (printData(format, { dryRun: flags.dryRun === true, items, suspected, ...(plan.refused !== undefined ? { refused: plan.refused } : {}) })) return;
    if (plan.refused !== undefined) process.stderr.write(`podipam: nothing freed: ${plan.refused}\n`);
    const verb = flags.dryRun ? 'would free' : 'freed';
    if (items.length === 0) process.stdout.write(`${verb} nothing\n`);
    else
      printTable(items, [
        { header: verb.toUpperCase(), value: (f) => `${f.containerId}/${f.ifname}` },
        { header: 'NETWORK', value: (f) => f.network },
        { header: 'ADDRESSES', value: (f) => f.addresses.join(',') },
        { header: 'AGE', value: (f) => `${f.ageSeconds}s` },
        { header: 'SOURCE', value: (f) => f.source },
      ]);
    for (const s of suspected)
      process.stdout.write(`suspected: ${s.containerId}/${s.ifname} (${s.network}, ${s.addresses.join(',')}) in ${s.source}: ${s.reason}\n`);
  });
}
