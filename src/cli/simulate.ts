/**
 * `podipam simulate [--server URL] --nodes N --pods M [--churn R]`: flags → the load
 * generator of src/simulate/ (which drives a running `podipam serve` through its HTTP API) →
 * a summary line (or --json). What to do when the server cannot be driven is said here, in
 * the command's own words.
 */
import { CNI_NAME } from '../model/cni-name.js';
import type { Command } from 'commander';
import { UsageError } from './usage-error.js';
import { commandLineTokenWarning, findAdminToken } from './admin-token.js';
import { defaultDataDir } from './datastore-url.js';
import { parseIntFlag } from './parse-flag.js';

const SETUP_HINT = {
  'token-refused': 'set $PODIPAM_ADMIN_TOKEN, or give --data-dir of that server',
  'read-only': 'set $PODIPAM_ADMIN_TOKEN, or give --data-dir of that server (its serve.token)',
  'no-pools': 'create one first (podipam pool create NAME --cidr CIDR)',
} as const;

export function registerSimulate(program: Command): void {
  program
    .command('simulate')
    .description('drive a running `podipam serve` through its API: nodes join, pods are added and deleted')
    .option('--server <url>', 'the server to drive', 'http://127.0.0.1:7420')
    .option('--data-dir <dir>', "the server's data directory, whose serve.token is sent for writes (default: as serve's)")
    .requiredOption('--nodes <n>', 'nodes to join (1-100000)')
    .requiredOption('--pods <m>', 'pods to add, spread round robin over the nodes (0-1000000)')
    .option('--churn <r>', 'then delete and re-add this fraction of the pods (0-10)', '0')
    .option('--concurrency <c>', 'API calls in flight (1-256)', '8')
    .option('--rate <n>', 'at most this many API calls per second (0 = unlimited)', '0')
    .option('--network <name>', "network name in the pods' handles", 'sim')
    .option('--node-prefix <p>', 'node names are <p>-1 … <p>-N (numbers zero-padded to the width of N)', 'sim')
    .option('--token <token>', 'admin or install bearer token (visible in /proc: prefer $PODIPAM_ADMIN_TOKEN or --data-dir)')
    .option('--seed <n>', 'seed for the churn choices')
    .option('--cleanup', 'delete the pods, nodes and blocks this run created at the end (a node that existed before is left alone)')
    .option('--progress', 'draw a progress bar even when stderr is not a terminal')
    .option('--json', 'print the result as JSON')
    .action(async (opts: Record<string, string | boolean | undefined>) => {
      let server: string;
      // A URL with ?token= (the dashboard URL serve prints) still works, with a warning (see below).
      let urlToken: string | undefined;
      try {
        const u = new URL(String(opts.server));
        urlToken = u.searchParams.get('token') ?? undefined;
        u.search = '';
        u.hash = '';
        server = u.toString().replace(/\/+$/, '');
      } catch {
        throw new UsageError(`invalid --server ${JSON.stringify(opts.server)}: expected a URL such as http://127.0.0.1:7420`);
      }
      const churn = Number(opts.churn);
      if (!Number.isFinite(churn) || churn < 0 || churn > 10 || String(opts.churn).trim() === '') {
        throw new UsageError(`invalid --churn ${JSON.stringify(opts.churn)}: must be a number from 0 to 10 (a fraction of --pods)`);
      }
      const prefix = String(opts.nodePrefix);
      if (!/^[a-z0-9]([-a-z0-9]{0,40}[a-z0-9])?$/.test(prefix))
        throw new UsageError(`invalid --node-prefix ${JSON.stringify(prefix)}: use lower-case letters, digits and "-"`);
      const network = String(opts.network);
      if (!CNI_NAME.test(network)) throw new UsageError(`invalid --network ${JSON.stringify(network)}: not a CNI network name`);
      const nodes = parseIntFlag('--nodes', String(opts.nodes), { min: 1, max: 100_000 });
      // A token on the command line is readable by every local user: warn, and find it ourselves by default.
      const dataDir = (opts.dataDir as string | undefined) ?? defaultDataDir();
      if (opts.token !== undefined) process.stderr.write(commandLineTokenWarning('--token', dataDir));
      else if (urlToken !== undefined) process.stderr.write(commandLineTokenWarning('--server URL?token=', dataDir));
      const found = findAdminToken((opts.token as string | undefined) ?? urlToken, dataDir);
      const { simulate, SimulateSetupError } = await import('../simulate/simulate.js');
      const { createProgress } = await import('./progress.js');
      const run = simulate({
        server,
        token: found.token,
        tokenSource: found.source,
        nodes,
        pods: parseIntFlag('--pods', String(opts.pods), { min: 0, max: 1_000_000 }),
        churn,
        concurrency: parseIntFlag('--concurrency', String(opts.concurrency), { min: 1, max: 256 }),
        rate: parseIntFlag('--rate', String(opts.rate), { min: 0, max: 1_000_000 }),
        network,
        nodePrefix: prefix,
        cleanup: opts.cleanup === true,
        progress: (total) => createProgress({ total, label: 'simulate', force: opts.progress === true }),
        seed: opts.seed === undefined ? undefined : parseIntFlag('--seed', String(opts.seed), { min: 0, max: 2 ** 32 - 1 }),
      });
      const result = await run.catch((e: unknown) => {
        if (!(e instanceof SimulateSetupError)) throw e;
        throw new Error(`${e.message}: ${SETUP_HINT[e.reason]}`);
      });
      if (opts.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
      else {
        const ops = result.nodes + result.added + result.deleted + result.failed;
        process.stdout.write(
          `simulate: ${result.nodes} nodes joined, ${result.added} pods added, ${result.deleted} deleted, ${result.failed} failed ` +
            `in ${result.seconds.toFixed(1)} s (${(ops / Math.max(result.seconds, 0.001)).toFixed(0)} calls/s); ${result.live} pods alive\n`,
        );
        for (const e of result.errors) process.stderr.write(`podipam: ${e}\n`);
      }
      if (result.failed > 0) throw new Error(`${result.failed} API call(s) failed (the first are listed above)`);
    });
}
