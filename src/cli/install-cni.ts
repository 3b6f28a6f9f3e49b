/**
 * `podipam install-cni` and `podipam uninstall-cni` (see src/install/): the DaemonSet's init
 * container and the one-host install. Flags are checked here, once; the library does the files.
 */
import { DEFAULT_NODE_NAME_HINT, defaultNodeName } from '../model/node-name.js';
import type { Command } from 'commander';
import { datastoreUrl } from './datastore-url.js';
import { UsageError } from './usage-error.js';

interface InstallFlags {
  binDir: string;
  confDir: string;
  backend: string;
  interface?: string;
  name: string;
  priority: string;
  bridge: string;
  ipMasq: boolean;
  agentSocket?: string;
  subnet: string;
  hostLocalDir?: string;
  nodeName?: string;
  shim?: string;
  dryRun?: boolean;
  force?: boolean;
}

const NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$/; // libcni's network name rule, bounded

export function registerInstallCni(program: Command): void {
  program
    .command('install-cni')
    .description('install the CNI binary as <bin-dir>/podipam and a network config in <conf-dir> (atomic, idempotent, never over files it did not write)')
    .option('--bin-dir <dir>', 'CNI binary directory', '/opt/cni/bin')
    .option('--conf-dir <dir>', 'CNI network config directory', '/etc/cni/net.d')
    .option(
      '--backend <kind>',
      'IPAM in the config: local (host-local compatible), cluster (block IPAM on --datastore) or agent (cluster, served by the node agent)',
      'agent',
    )
    .option(
      '--interface <plugin>',
      'interface plugin: ptp (default for cluster and agent: a veth per pod, routed; bridge cannot hold several blocks) or bridge (default for local)',
    )
    .option('--name <name>', 'network name (also the config file name)', 'podipam')
    .option('--priority <nn>', 'config file name prefix; runtimes take the first config in name order', '10')
    .option('--bridge <name>', 'with --interface bridge: the Linux bridge name', 'cni0')
    .option(
      '--no-ip-masq',
      'local: no ipMasq in the config (cluster and agent configs never masquerade: podipam masquerade / the agent do, relative to every pool)',
    )
    .option('--agent-socket <path>', 'agent: the agent socket (default: $PODIPAM_AGENT_SOCKET, else /run/podipam/agent.sock)')
    .option('--subnet <cidrs>', 'local: subnets, comma separated, or usePodCidr (the node CIDR from the datastore)', 'usePodCidr')
    .option('--host-local-dir <dir>', "local: reservation directory (host-local's dataDir; default /var/lib/cni/networks)")
    .option('--node-name <name>', `agent/cluster/usePodCidr: this node (default: ${DEFAULT_NODE_NAME_HINT})`)
    .option('--shim <file>', 'the executable to install (default: the shim built with this package)')
    .option('--dry-run', 'print what would be done, change nothing')
    .option('--force', 'take over files in the way that podipam did not write')
    .action(async (f: InstallFlags, cmd: Command) => {
      const lib = await import('../install/index.js');
      const backend = oneOf('--backend', f.backend, lib.BACKENDS);
      const iface = f.interface === undefined ? lib.defaultInterface(backend) : oneOf('--interface', f.interface, lib.INTERFACES);
      const refused = lib.interfaceRefusal(backend, iface);
      if (refused !== undefined) throw new UsageError(refused);
      if (iface !== 'bridge' && cmd.getOptionValueSource('bridge') === 'cli')
        throw new UsageError(`--bridge ${JSON.stringify(f.bridge)} applies to --interface bridge only; this config uses ${iface}`);
      if (!NAME.test(f.name))
        throw new UsageError(`invalid --name ${JSON.stringify(f.name)}: letters, digits, '_', '.', '-', starting with a letter or digit, at most 63`);
      if (!/^[0-9]{1,3}$/.test(f.priority)) throw new UsageError(`invalid --priority ${JSON.stringify(f.priority)}: one to three digits, e.g. 10`);
      if (!/^[a-zA-Z0-9_.-]{1,15}$/.test(f.bridge))
        throw new UsageError(`invalid --bridge ${JSON.stringify(f.bridge)}: a Linux interface name, at most 15 characters`);
      const subnets = f.subnet
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '');
      if (subnets.length === 0) throw new UsageError('invalid --subnet "": give CIDRs or usePodCidr');
      const needsStore = backend !== 'local' || subnets.includes('usePodCidr');
      // As every command: --datastore, else $PODIPAM_DATASTORE, else SQLite in the data directory
      // (right for one host, where serve and the agent use the same default).
      const datastore = datastoreUrl(cmd);
      const shim = f.shim ?? lib.findShim();
      if (shim === undefined) {
        throw new Error(`no CNI shim built: looked for ${lib.SHIM_CANDIDATES.join(' and ')}; run \`npm run build\` (needs a C compiler) or give --shim FILE`);
      }
      const dryRun = f.dryRun === true;
      const options = {
        binDir: f.binDir,
        confDir: f.confDir,
        shim,
        priority: f.priority,
        dryRun,
        force: f.force === true,
        conflist: {
          name: f.name,
          backend,
          interface: iface,
          bridge: f.bridge,
          ipMasq: f.ipMasq,
          agentSocket: f.agentSocket ?? process.env.PODIPAM_AGENT_SOCKET ?? lib.DEFAULT_AGENT_SOCKET,
          datastore: needsStore ? datastore : undefined,
          nodeName: f.nodeName ?? defaultNodeName(),
          subnets,
          dataDir: f.hostLocalDir,
        },
      };
      const steps = lib.installCni(options);
      for (const s of steps) process.stdout.write(`podipam install-cni: ${lib.stepLine(s, dryRun)}\n`);
      if (dryRun) process.stdout.write(`podipam install-cni: dry run, nothing changed; the config would be:\n${lib.conflistText(options.conflist)}`);
      else if (steps.every((s) => s.action === 'unchanged' || s.action === 'warn'))
        process.stdout.write('podipam install-cni: already installed, nothing changed\n');
    });

  program
    .command('uninstall-cni')
    .description('remove exactly what install-cni wrote (files changed since are kept and reported)')
    .option('--bin-dir <dir>', 'CNI binary directory, as given to install-cni (checked against the install record)', '/opt/cni/bin')
    .option('--conf-dir <dir>', 'CNI network config directory (holds the install record)', '/etc/cni/net.d')
    .option('--name <name>', "remove only this network's config (the binary goes with the last one); default: everything")
    .option('--dry-run', 'print what would be removed, change nothing')
    .option('--force', 'also remove recorded files that changed since install')
    .action(async (f: { binDir: string; confDir: string; name?: string; dryRun?: boolean; force?: boolean }) => {
      const lib = await import('../install/index.js');
      const dryRun = f.dryRun === true;
      if (f.name !== undefined && !NAME.test(f.name))
        throw new UsageError(`invalid --name ${JSON.stringify(f.name)}: letters, digits, '_', '.', '-', starting with a letter or digit, at most 63`);
      const steps = lib.uninstallCni({
        binDir: f.binDir,
        confDir: f.confDir,
        ...(f.name !== undefined ? { name: f.name } : {}),
        dryRun,
        force: f.force === true,
      });
      for (const s of steps) process.stdout.write(`podipam uninstall-cni: ${lib.stepLine(s, dryRun)}\n`);
      if (steps.length === 0) process.stdout.write(`podipam uninstall-cni: nothing installed in ${f.confDir}\n`);
      if (steps.some((s) => s.action === 'keep')) process.exitCode = 1;
    });
}

function oneOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(value)) throw new UsageError(`invalid ${flag} ${JSON.stringify(value)}: expected one of ${allowed.join(', ')}`);
  return value as T;
}
