import { CniCode, CniError } from './errors.js';
import type { IpamBackend, NetConf } from './ipam-backend.js';
import { goField } from './go-decode.js';

/**
 * Picks the allocation back end from the `ipam` section, importing only that one:
 * - `agent` set → the node agent (a later issue; code 7 for now);
 * - `datastore` set and neither `ranges` nor a top-level `subnet` → the cluster (block) back end;
 * - otherwise → `local`, the host-local compatible back end (which may still read the
 *   datastore for `"subnet": "usePodCidr"`).
 */
export async function selectBackend(conf: NetConf): Promise<IpamBackend> {
  const ipam = conf.ipam;
  const agent = goField(ipam, 'agent');
  if (agent !== undefined) {
    throw new CniError(CniCode.InvalidConfig, `ipam.agent ${JSON.stringify(agent)}: the agent back end is not supported yet`);
  }
  const hasRanges = goField(ipam, 'ranges') !== undefined || goField(ipam, 'subnet') !== undefined;
  if (goField(ipam, 'datastore') !== undefined && !hasRanges) {
    const { createClusterBackend } = await import('../cluster/cluster-backend.js');
    return createClusterBackend(conf);
  }
  const { createLocalBackend } = await import('../local/local-backend.js');
  return createLocalBackend();
}
