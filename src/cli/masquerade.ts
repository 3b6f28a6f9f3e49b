/**
 * `podipam masquerade sync|remove|rules`: the node's masquerade for the cluster and agent back
 * ends (src/masq/): traffic from the pod pools to anything outside every pool leaves with the
 * node's address, pod-to-pod traffic never does. The agent keeps it in sync on its own
 * (`podipam agent`, unless --no-masquerade); `sync` is for a node without the agent (the
 * cluster back end) or after a pool change, `remove` undoes it, `rules` prints what sync would
 * write. Exit 1 when a family that has pools could not be written.
 */
import type { Command } from 'commander';
import { withClusterIpam } from './ipam.js';
import { outputFormat, printData, printTable, withOutputOptions } from './output.js';

export function registerMasquerade(program: Command): void {
  const masq = program
    .command('masquerade')
    .description('the node masquerade of the cluster and agent back ends: pod traffic to outside every pod pool is source-NATted, pod-to-pod never');

  withOutputOptions(
    masq
      .command('sync')
      .description(
        "write the PODIPAM-MASQ nat chains (iptables, ip6tables) from the datastore's pools, and the jump to them appended to POSTROUTING, after the operator's own rules (idempotent)",
      ),
    '{"items": [family…]}',
  ).action(async (opts: { json?: boolean; output?: string }, cmd: Command) => {
    const format = outputFormat(opts);
    const pools = await withClusterIpam(cmd, 'read', (ipam) => ipam.listPools());
    const { syncMasquerade } = await import('../masq/masquerade-iptables.js');
    report(format, await syncMasquerade(pools.map((p) => p.cidr)));
  });

  withOutputOptions(
    masq.command('remove').description('remove the PODIPAM-MASQ chains and their POSTROUTING jumps (after uninstall-cni, or to turn the masquerade off)'),
    '{"items": [family…]}',
  ).action(async (opts: { json?: boolean; output?: string }) => {
    const format = outputFormat(opts);
    const { removeMasquerade } = await import('../masq/masquerade-iptables.js');
    report(format, await removeMasquerade());
  });

  masq
    .command('rules')
    .description("print the iptables-restore input sync would write for the datastore's pools (changes nothing)")
    .action(async (_opts: unknown, cmd: Command) => {
      const pools = await withClusterIpam(cmd, 'read', (ipam) => ipam.listPools());
      const { chainRestoreText, masqueradeFamilies } = await import('../masq/masquerade-rules.js');
      for (const f of masqueradeFamilies(pools.map((p) => p.cidr))) process.stdout.write(`# ${f.tool}-restore --noflush\n${chainRestoreText(f)}`);
    });
}

function report(format: import('./output.js').OutputFormat, items: readonly import('../masq/masquerade-iptables.js').FamilyOutcome[]): void {
  if (items.some((f) => f.state === 'failed')) process.exitCode = 1;
  if (printData(format, { items })) return;
  printTable(items, [
    { header: 'FAMILY', value: (f) => `IPv${f.family}` },
    { header: 'TOOL', value: (f) => f.tool },
    { header: 'STATE', value: (f) => f.state },
    { header: 'POOLS', value: (f) => (f.cidrs.length > 0 ? f.cidrs.join(',') : undefined) },
    { header: 'ERROR', value: (f) => f.error },
  ]);
}
