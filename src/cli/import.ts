/**
 * `podipam import host-local DIR [--network NAME] [--node N]`: adopts the reservations of an
 * existing host-local data directory into the cluster store, so a cluster can move from
 * host-local to podipam's cluster mode without restarting its pods. Each file `<ip>` holding
 * `containerId\r\nifname` becomes an allocation of that address under the handle
 * `<network>:<containerId>:<ifname>` (handle-id.ts) — the handle the cluster-mode DEL of that container will
 * compute — in a block affine to the node. Later ADDs never hand the address out again.
 *
 * `--dry-run` runs the same assignments on a copy of the store: what it reports "failed"
 * the import refuses too. Re-running is safe: an address already held by the same handle is skipped. An address held
 * by another handle is reported and the import goes on; the exit code is 1 if anything failed.
 */
import { DEFAULT_NODE_NAME_HINT, defaultNodeName } from '../model/node-name.js';
import { HostLocalDirError, type HostLocalReservation, readHostLocalDir } from '../local/read-host-local-dir.js';
import type { Command } from 'commander';
import { cniHandleId } from '../model/handle-id.js';
import { formatAddr } from '../ip/index.js';
import { openCommandStore } from './datastore-url.js';
import type { Store } from '../store/index.js';
import { createProgress } from './progress.js';
import { UsageError } from './usage-error.js';
import { registerImportCalico } from './import-calico.js';
import { registerImportWhereabouts } from './import-whereabouts.js';

/** The cluster handle of a reservation: what the cluster-mode plugin's DEL computes. */
export function handleOf(r: Pick<HostLocalReservation, 'network' | 'containerId' | 'ifname'>): string {
  return cniHandleId(r.network, r.containerId, r.ifname);
}

export function registerImport(program: Command): void {
  const imp = program.command('import').description('adopt addresses allocated by other IPAM plugins into the cluster store');
  imp
    .command('host-local')
    .argument('<dir>', "a host-local data directory: one network's directory (/var/lib/cni/networks/NET) or the dataDir holding them")
    .description('adopt every reservation of a host-local data directory under the handle <network>:<containerId>:<ifname>')
    .option('--network <name>', 'the network name (default: the directory name, or every network under a dataDir)')
    .option('--node <name>', `the node whose pods hold these addresses (default: ${DEFAULT_NODE_NAME_HINT})`)
    .option('--dry-run', 'run every check of the import on a copy of the store and report; write nothing')
    .option('--json', 'print the result as JSON')
    .option('--progress', 'draw a progress bar even when stderr is not a terminal')
    .action(async (dir: string, opts: ImportOptions, cmd: Command) => {
      const failed = await importHostLocal(dir, opts, cmd);
      // Exit code 1 (runCli maps a thrown error to 1) after the full report is printed.
      if (failed > 0) throw new Error(`${failed} reservation(s) could not be adopted (see the lines marked "failed")`);
    });
  registerImportCalico(imp);
  registerImportWhereabouts(imp);
}

interface ImportOptions {
  network?: string;
  node?: string;
  dryRun?: boolean;
  json?: boolean;
  progress?: boolean;
}

/**
 * Assigns each handle its addresses (all of one container's addresses in one call, so a
 * dual-stack pod's pair lands together) through the cluster service's specific-address path —
 * the one `CNI_ARGS IP=` takes. Yields one outcome per handle; a failure does not stop the rest.
 * A dry run is this same loop on a copy of the store (copyToMemory), so it refuses exactly
 * what the import would.
 */
async function* adopt(
  store: Store,
  node: string,
  reservations: readonly HostLocalReservation[],
): AsyncGenerator<{ handle: string; ips: string[]; outcome: 'adopted' | 'already' | 'failed'; error?: string }> {
  const { ClusterIpam } = await import('../cluster/index.js');
  const byHandle = new Map<string, HostLocalReservation[]>();
  for (const r of reservations) byHandle.set(handleOf(r), [...(byHandle.get(handleOf(r)) ?? []), r]);
  // Stamped in the history as the CLI's, for an import (src/cluster/records/history-stamp.ts).
  const ipam = new ClusterIpam(store, { writer: 'cli', why: 'import' });
  for (const [handle, rs] of byHandle) {
    const ips = rs.map((r) => formatAddr(r.ip));
    const first = rs[0] as HostLocalReservation;
    try {
      const before = await ipam.addressesOf(handle);
      await ipam.assign({
        node,
        handle,
        attrs: { network: first.network, containerId: first.containerId, ifname: first.ifname },
        ips: rs.map((r) => r.ip),
        // host-local's subnet is not the block: a pod may hold what is a block's network, gateway or broadcast address.
        adopt: true,
      });
      const held = new Set((before ?? []).map((a) => formatAddr(a.addr)));
      yield { handle, ips, outcome: ips.every((ip) => held.has(ip)) ? 'already' : 'adopted' };
    } catch (e) {
      // A store that cannot be reached fails every handle the same way: stop at once.
      if ((e as Error).name === 'StoreUnavailableError') throw e;
      yield { handle, ips, outcome: 'failed', error: (e as Error).message };
    }
  }
}

/** readHostLocalDir, its refusals as usage errors (exit 2) naming the flag at fault. */
function readHostLocal(dir: string, network: string | undefined): ReturnType<typeof readHostLocalDir> {
  try {
    return readHostLocalDir(dir, network);
  } catch (e) {
    if (e instanceof HostLocalDirError) throw new UsageError(e.field ? `--${e.field} ${e.problem}` : e.problem, { cause: e });
    throw e;
  }
}

/** Imports and prints the report; returns the number of addresses that failed. */
async function importHostLocal(dir: string, opts: ImportOptions, cmd: Command): Promise<number> {
  const node = opts.node ?? defaultNodeName();
  const { reservations, skipped } = readHostLocal(dir, opts.network);
  for (const s of skipped) process.stderr.write(`podipam: skipping ${s}\n`);
  const results: { ip: string; handle: string; outcome: 'adopted' | 'already' | 'failed' | 'dry-run'; error?: string }[] = [];
  // A dry run reads the store (creating none) and adopts into a copy of it: the same checks, nothing written.
  const real = await openCommandStore(cmd, opts.dryRun ? 'read' : 'write');
  const progress = createProgress({ total: reservations.length, label: 'import', force: opts.progress });
  try {
    const store = opts.dryRun ? await (await import('../store/copy-to-memory.js')).copyToMemory(real) : real;
    for await (const r of adopt(store, node, reservations)) {
      const outcome = opts.dryRun && r.outcome === 'adopted' ? 'dry-run' : r.outcome;
      for (const ip of r.ips) results.push({ ip, handle: r.handle, outcome, ...(r.error ? { error: r.error } : {}) });
      progress.tick(r.ips.length, r.outcome === 'failed' ? `failed ${r.handle}` : undefined);
    }
  } finally {
    progress.finish();
    await real.close();
  }
  const failed = results.filter((r) => r.outcome === 'failed');
  if (opts.json) {
    process.stdout.write(
      `${JSON.stringify({ node, adopted: results.filter((r) => r.outcome === 'adopted').length, already: results.filter((r) => r.outcome === 'already').length, failed: failed.length, skipped, results }, null, 2)}\n`,
    );
  } else {
    for (const r of results) {
      process.stdout.write(`${r.ip.padEnd(16)} ${r.handle}  ${r.outcome}${r.error ? `: ${r.error}` : ''}\n`);
    }
    const legacy = reservations.filter((r) => r.legacy).length;
    process.stdout.write(
      `${results.length} reservation(s) on node ${node}: ${results.filter((r) => r.outcome === 'adopted').length} adopted, ` +
        `${opts.dryRun ? `${results.filter((r) => r.outcome === 'dry-run').length} would be adopted (dry run, nothing written), ` : ''}` +
        `${results.filter((r) => r.outcome === 'already').length} already held, ${failed.length} failed, ${skipped.length} file(s) skipped` +
        `${legacy ? `; ${legacy} legacy file(s) without an ifname taken as eth0` : ''}\n`,
    );
  }
  return failed.length;
}
