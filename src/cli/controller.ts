import type { Command } from 'commander';
import { datastoreUrl } from './datastore-url.js';
import { UsageError } from './usage-error.js';
import { cliLogger } from './cli-logger.js';
import { parseIntFlag } from './parse-flag.js';

interface ControllerOpts {
  clusterCidr?: string;
  nodeMaskSize?: string;
  nodeMaskSizeV6?: string;
  serviceCidr?: string;
  workers: string;
  pollInterval: string;
  resyncInterval: string;
  kubeconfig?: string;
  inCluster?: boolean;
  once?: boolean;
}

/** Resolves on the first SIGTERM or SIGINT. */
function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const on = (sig: NodeJS.Signals): void => {
      process.off('SIGTERM', on);
      process.off('SIGINT', on);
      resolve(sig);
    };
    process.on('SIGTERM', on);
    process.on('SIGINT', on);
  });
}

/**
 * Registers `podipam controller`: the node-CIDR controller. Runs until SIGTERM/SIGINT (or,
 * with --once, processes the pending nodes and exits: 0 when none failed). With --kubeconfig
 * or --in-cluster it also mirrors Kubernetes Node objects into the datastore and patches
 * spec.podCIDR(s) as kube-controller-manager does.
 */
export function registerController(program: Command): void {
  program
    .command('controller')
    .description("give every node a pod CIDR per family out of the cluster CIDRs (kube-controller-manager's node IPAM)")
    .option('--cluster-cidr <cidrs>', 'cluster CIDR(s), comma-separated; one or more per family, used in order')
    .option('--node-mask-size <n>', 'node CIDR prefix length for IPv4 (default 24), or for IPv6 in an IPv6-only cluster')
    .option('--node-mask-size-v6 <n>', 'node CIDR prefix length for IPv6 (default 64)')
    .option('--service-cidr <cidrs>', 'service CIDR(s), comma-separated, never handed to nodes')
    .option('--workers <n>', 'nodes processed at once', '8')
    .option('--poll-interval <ms>', 'how often the controller checks whether a full resync is due (node changes arrive by a watch)', '250')
    .option('--resync-interval <ms>', 'how often occupancy is rebuilt and orphan claims swept', '30000')
    .option('--kubeconfig <file>', 'mirror Kubernetes nodes through this kubeconfig and patch their spec.podCIDRs')
    .option('--in-cluster', 'as --kubeconfig, with the in-cluster service account')
    .option('--once', 'process pending nodes, print a summary and exit')
    .action(async (opts: ControllerOpts, cmd: Command) => {
      const { controllerConfigFromFlags } = await import('./controller-flags.js');
      let config;
      try {
        config = controllerConfigFromFlags(opts);
      } catch (e) {
        throw e instanceof TypeError ? new UsageError(e.message) : e;
      }
      const workers = parseIntFlag('--workers', opts.workers, { min: 1, max: 256 });
      const pollIntervalMs = parseIntFlag('--poll-interval', opts.pollInterval, { min: 10, max: 3_600_000 });
      const resyncIntervalMs = parseIntFlag('--resync-interval', opts.resyncInterval, { min: 100, max: 86_400_000 });
      if (opts.kubeconfig && opts.inCluster) throw new UsageError('give --kubeconfig or --in-cluster, not both');
      if (opts.once && (opts.kubeconfig || opts.inCluster)) throw new UsageError('--once works on the datastore only: drop --kubeconfig/--in-cluster');

      const { openStore } = await import('../store/index.js');
      const { NodeCidrController } = await import('../controller/node-cidr-controller.js');
      const { formatPrefix } = await import('../ip/index.js');
      const logger = await cliLogger(cmd, 'controller');
      const store = await openStore(datastoreUrl(cmd));
      let adapter: import('../controller/kube-adapter.js').KubeAdapter | undefined;
      const controller = new NodeCidrController({
        store,
        config,
        workers,
        pollIntervalMs,
        resyncIntervalMs,
        log: logger,
        onChange: (name) => adapter?.notify(name),
      });
      try {
        if (opts.once) {
          const s = await controller.runOnce();
          process.stdout.write(`${JSON.stringify(s)}\n`);
          if (s.failed.length > 0) process.exitCode = 1;
          return;
        }
        const masks = config.clusterCidrs.map((c) => `${formatPrefix(c)}→/${config.nodeMaskSize[c.family]}`).join(', ');
        logger.info({}, `starting on ${store.url}: ${masks}`);
        await controller.start();
        if (opts.kubeconfig || opts.inCluster) {
          const { KubeAdapter } = await import('../controller/kube-adapter.js');
          adapter = new KubeAdapter({ store, controller, kubeconfig: opts.kubeconfig, log: logger.child({ component: 'kube' }) });
          await adapter.start();
        }
        const sig = await untilSignal();
        logger.info({ signal: sig }, `stopping (${sig})`);
      } finally {
        await adapter?.stop();
        await controller.stop();
        await store.close();
      }
    });
}
