/**
 * One runtime reconciliation pass from the command line (`podipam gc`, `podipam ipam check
 * --runtime-endpoint`): the runtime's sandboxes listed twice, `listMs` apart, this node's
 * allocations (local files under `dataDirs`; with `datastore`, the cluster records of `node`)
 * judged by src/reconcile's planner, and — unless `dryRun` — the proven ones freed. No ADD/DEL
 * in flight is known here (no agent): the grace alone covers creations under way.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { UsageError } from './usage-error.js';
import { parseDuration } from './parse-flag.js';
import type { PassOutcome } from '../reconcile/runtime-reconciler.js';

export interface RuntimePassFlags {
  readonly runtimeEndpoint: string;
  readonly runtimeListInterval: string;
  readonly grace: string;
  readonly dataDir: string;
}

/** The pass's options from its flags; UsageError naming the flag. */
export function runtimePassOptions(f: RuntimePassFlags): { endpoint: string; listMs: number; graceMs: number; dataDirs: string[] } {
  const listMs = parseDuration('--runtime-list-interval', f.runtimeListInterval);
  if (listMs < 100) throw new UsageError(`invalid --runtime-list-interval ${JSON.stringify(f.runtimeListInterval)}: at least 100ms`);
  const graceMs = parseDuration('--grace', f.grace);
  const dataDirs = f.dataDir === '' ? [] : f.dataDir.split(',');
  const bad = dataDirs.find((d) => !d.startsWith('/'));
  if (bad !== undefined) throw new UsageError(`invalid --data-dir ${JSON.stringify(f.dataDir)}: ${JSON.stringify(bad)} is not an absolute path`);
  return { endpoint: f.runtimeEndpoint, listMs, graceMs, dataDirs };
}

/** Runs the pass (see the module comment); rejects naming why when the runtime or a source fails. */
export async function runtimePass(
  o: ReturnType<typeof runtimePassOptions> & { readonly datastore?: string; readonly node: string; readonly dryRun: boolean },
): Promise<PassOutcome> {
  const [{ criRuntime, criSocketPath }, { RuntimeReconciler }, { localAllocations }, { clusterAllocations }, { silentLog }] = await Promise.all([
    import('../reconcile/cri-runtime.js'),
    import('../reconcile/runtime-reconciler.js'),
    import('../reconcile/local-allocations.js'),
    import('../reconcile/cluster-allocations.js'),
    import('../log/logger.js'),
  ]);
  let socket: string;
  try {
    socket = criSocketPath('--runtime-endpoint', o.endpoint);
  } catch (e) {
    throw new UsageError((e as Error).message, { cause: e });
  }
  const runtime = criRuntime(socket);
  const store = o.datastore === undefined ? undefined : await (await import('../store/index.js')).openStore(o.datastore, { create: false });
  try {
    const sources = o.dataDirs.map((d) => localAllocations(d));
    if (store) {
      const { ClusterIpam } = await import('../cluster/index.js');
      const ipam = new ClusterIpam(store, { writer: 'cli' });
      sources.push(clusterAllocations(o.datastore!, o.node, (fn) => fn(ipam)));
    }
    const r = new RuntimeReconciler({
      endpoint: o.endpoint,
      runtime,
      sources: () => sources,
      inFlight: () => new Set(),
      graceMs: o.graceMs,
      intervalMs: o.listMs,
      log: silentLog,
      ...(o.dryRun ? { dryRun: true } : {}),
    });
    await r.pass();
    await sleep(o.listMs);
    return await r.pass();
  } finally {
    runtime.close();
    await store?.close();
  }
}
