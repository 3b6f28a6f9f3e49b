import { CniCode, CniError } from '../cni/errors.js';
import type { BackendHost, BackendKind, IpamBackend } from './ipam-backend.js';
import type { NetConf } from '../cni/types.js';
import { goField, isObject } from '../cni/go-decode.js';
import { ipamKeys } from './ipam-keys.js';
import { reservedNetwork } from '../model/reserved-network.js';

/**
 * Picks the allocation back end from the `ipam` section, importing only that one:
 * - `agent` set: the node agent serves the call (run-plugin.ts forwards it before dispatch,
 *   deciding with `agentOf`, dispatch.ts);
 *   inside the agent, or when the agent cannot be reached, the other keys pick the back end as
 *   below — a config with only `agent` is the agent's warm pool (given in `host.warm`):
 *   code 7 inside an agent started without one, code 11 in a process that is not the agent;
 * - `datastore` set and neither `ranges` nor a top-level `subnet` → the cluster (block) back end;
 * - otherwise → `local`, the host-local compatible back end (which may still read the
 *   datastore for `"subnet": "usePodCidr"`).
 * The two datastore back ends (cluster, the agent's warm pool) refuse the network name reserved
 * for the warm pool's handles (code 7, src/model/reserved-network.ts); the local back end writes
 * no handle and takes every name host-local takes.
 * `chosen.backend` is set to the one picked (BackendKind), for the agent's status and metrics.
 */
export async function selectBackend(
  conf: NetConf,
  env: NodeJS.ProcessEnv = process.env,
  host?: BackendHost,
  chosen: { backend?: BackendKind } = {},
): Promise<IpamBackend> {
  const ipam = conf.ipam;
  const { agent, hasRanges, hasDatastore } = ipamKeys(ipam);
  const reserved = (agent !== undefined || hasDatastore) && !hasRanges ? reservedNetwork('name', conf.name) : undefined;
  if (reserved !== undefined) throw new CniError(CniCode.InvalidConfig, reserved);
  if (agent !== undefined) {
    if (typeof agent !== 'string' || !agent.startsWith('/')) {
      throw new CniError(CniCode.InvalidConfig, `ipam.agent ${JSON.stringify(agent)}: must be the absolute path of the agent's unix socket`);
    }
    if (!hasRanges && !hasDatastore) {
      chosen.backend = 'warm';
      if (host?.warm) return host.warm;
      if (host) {
        throw new CniError(
          CniCode.InvalidConfig,
          `ipam.agent ${JSON.stringify(agent)}: this agent runs no warm pool (start it with --datastore and --min-idle/--max-idle/--capacity), or give "ranges" (local) or "datastore" (cluster) as well`,
        );
      }
      throw new CniError(
        CniCode.TryAgainLater,
        `ipam.agent ${JSON.stringify(agent)}: the warm pool lives in the podipam agent, which did not answer on that socket`,
      );
    }
  }
  if (hasDatastore && !hasRanges) {
    chosen.backend = 'cluster';
    const { createClusterBackend } = clusterModule ?? (clusterModule = await import('./cluster-backend.js'));
    return createClusterBackend(conf, env, host?.cluster, host?.pods);
  }
  chosen.backend = usesPodCidr(ipam) ? 'usePodCidr' : 'local';
  const { createLocalBackend } = localModule ?? (localModule = await import('./local-backend.js'));
  return createLocalBackend(host?.local ?? {});
}

/** Loaded once per process: the agent selects a back end for every pod, and an `await import` of a loaded module still costs a trip through the loader. */
let localModule: typeof import('./local-backend.js') | undefined;
let clusterModule: typeof import('./cluster-backend.js') | undefined;

/**
 * A range (`ranges[i][j].subnet`, or the legacy `subnet`) asks for the node's pod CIDR (the
 * tokens src/plugin/range-sets.ts resolves); read without loading that module.
 */
function usesPodCidr(ipam: Readonly<Record<string, unknown>>): boolean {
  const token = (v: unknown): boolean => v === 'usePodCidr' || v === 'usePodCidrIPv6';
  const ranges = goField(ipam, 'ranges');
  if (ranges === undefined) return token(goField(ipam, 'subnet'));
  return Array.isArray(ranges) && ranges.some((set) => Array.isArray(set) && set.some((r) => isObject(r) && token(goField(r, 'subnet'))));
}
