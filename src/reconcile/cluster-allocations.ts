/**
 * The cluster back end's allocations of one node (ClusterIpam.nodeAttachments: the node's
 * handle records naming an attachment), freed by handle while the record is the one listed
 * (ClusterIpam.releaseAttachmentAsSeen, through the write gate), stamped `runtime-absent` with
 * its evidence in the history.
 */
import type { ClusterIpam } from '../cluster/index.js';
import { formatAddr } from '../ip/addr.js';
import type { AllocationSource, SourcedAllocation } from './allocation-source.js';

interface ClusterAllocation extends SourcedAllocation {
  readonly handle: string;
  readonly rev: number;
}

/**
 * The source for `node` on the datastore `name`; `run` lends a ClusterIpam (the agent: its
 * node queue; the CLI: one opened for the pass).
 */
export function clusterAllocations(name: string, node: string, run: <T>(fn: (ipam: ClusterIpam) => Promise<T>) => Promise<T>): AllocationSource {
  const source = `cluster ${name}`;
  return {
    name: source,
    list: () =>
      run(async (ipam) =>
        (await ipam.nodeAttachments(node)).map((a): ClusterAllocation => ({
          id: `${source}|${a.handle}@${a.rev}`,
          source,
          network: a.network,
          containerId: a.containerId,
          ifname: a.ifname,
          ...(a.since === undefined ? {} : { since: a.since }),
          addresses: [...a.blocks].map(([cidr, n]) => `${n} in ${cidr}`),
          handle: a.handle,
          rev: a.rev,
        })),
      ),
    release: (a, evidence) =>
      run(async (ipam) => {
        const c = a as ClusterAllocation;
        const released = await ipam.withReason('runtime-absent', evidence).releaseAttachmentAsSeen(c.handle, c.rev);
        return (released ?? []).map((r) => formatAddr(r.addr));
      }),
  };
}
