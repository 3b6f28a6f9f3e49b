/**
 * CNI GC for the cluster back end: release this node's handles of one network that the
 * runtime no longer lists. Candidates come from the blocks affine to the node (re-read fresh)
 * and from the handles the node remembers writing, so the cost follows the node's size, not
 * the cluster's; each candidate's handle record is then read and released only if it belongs
 * to this node and network; a record whose attachment (network, containerId, ifname) has its
 * id in `keep` is kept whatever id it is stored under (old dotted ids). An address this node
 * borrowed from another node's block and then forgot (its hint lost) is not found here —
 * `podipam ipam check` and `ipam release` cover it. The node agent's warm handles
 * (src/model/reserved-network.ts) are never candidates, whatever `network` says: their
 * addresses are the agent's to return, and some are in use by live pods. Nor are sticky holds
 * (records with `stickyUntil`, sticky-hold-id.ts): they belong to no attachment, and expire
 * through `podipam serve`'s GC.
 */
import { crashPoint } from '../../util/crash-point.js';
import { readKeys, type IpamContext, loadNodeBlocks } from '../views/index.js';
import { releaseByHandle, type Released } from '../txn/index.js';
import { decodeHandle, handleKey, HANDLE_PREFIX } from '../records/index.js';
import { cniHandleId } from '../../model/handle-id.js';
import { isWarmHandle } from '../../model/reserved-network.js';
import { checkNodeName } from '../../model/node-name.js';

export interface NodeGcResult {
  readonly released: readonly Released[];
  /** Handles that could not be released, with the reason; GC kept going past them. */
  readonly failed: readonly { readonly handle: string; readonly error: Error }[];
}

/** Releases `node`'s handles of `network` not in `keep` (handle IDs). Keeps going after failures. */
export async function gcNode(ctx: IpamContext, node: string, network: string, keep: ReadonlySet<string>): Promise<NodeGcResult> {
  checkNodeName('node name', node);
  // The runtime's CNI GC unless the caller says otherwise (history-stamp.ts).
  const gc: IpamContext = { ...ctx, why: ctx.why ?? 'cni-gc' };
  const view = ctx.cache.node(node);
  await loadNodeBlocks(ctx.store, view);
  crashPoint('cluster.gc.listed');
  const candidates = new Set<string>(view.handles.keys());
  for (const { block } of view.blocks.values()) for (const h of block.allocations.values()) candidates.add(h);
  for (const h of keep) candidates.delete(h);
  for (const h of candidates) if (isWarmHandle(h)) candidates.delete(h);
  const released: Released[] = [];
  const failed: { handle: string; error: Error }[] = [];
  const records = await readKeys(ctx.store, [...candidates].map(handleKey));
  for (const [key, entry] of records) {
    if (!entry) continue;
    const handle = key.slice(HANDLE_PREFIX.length);
    try {
      const rec = decodeHandle(entry);
      if (rec.node !== node || rec.network !== network) continue;
      // A sticky hold belongs to no attachment: it is kept for the pod's next incarnation until its stickyUntil (serve's GC).
      if (rec.stickyUntil !== undefined) continue;
      // A record under an old dotted id is judged by the attachment it names (legacy-handle.ts).
      if (rec.containerId !== undefined && rec.ifname !== undefined && keep.has(cniHandleId(network, rec.containerId, rec.ifname))) continue;
      released.push(...(await releaseByHandle(gc, handle, node)));
      crashPoint('cluster.gc.released');
    } catch (e) {
      failed.push({ handle, error: e instanceof Error ? e : new Error(String(e)) });
    }
  }
  return { released, failed };
}
