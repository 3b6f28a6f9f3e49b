/**
 * The attachments a node's pods hold in the cluster back end, for runtime reconciliation
 * (src/reconcile): every handle record of `node` naming a container id and an interface — not
 * the agent's warm handles (src/model/reserved-network.ts: the agent returns those), not sticky
 * holds (they belong to no attachment). Candidates come from the blocks affine to the node
 * (re-read fresh) and the handles the node remembers writing, as CNI GC finds them
 * (gc-node.ts); an address the node borrowed and then forgot is `ipam check`'s to find.
 * Each is freed only while its handle record is the one listed (its revision compared in the
 * release's own transaction): an attachment written again meanwhile keeps its addresses.
 */
import { releaseByHandleIf, type Released } from './release.js';
import { readKeys, type IpamContext, loadNodeBlocks } from '../views/index.js';
import { decodeHandle, handleKey, HANDLE_PREFIX } from '../records/index.js';
import { isWarmHandle } from '../../model/reserved-network.js';
import { checkNodeName } from '../../model/node-name.js';

/** One attachment of the node: its handle record as read. */
export interface NodeAttachment {
  readonly handle: string;
  /** The record's revision: the release compares it. */
  readonly rev: number;
  readonly network: string;
  readonly containerId: string;
  readonly ifname: string;
  /** When the record was created (ms), when it says (records of older writers do not). */
  readonly since?: number;
  /** Addresses it holds, by block CIDR → count. */
  readonly blocks: ReadonlyMap<string, number>;
}

/** `node`'s attachments (see the module comment). Records that do not decode are skipped (ipam check reports them). */
export async function nodeAttachments(ctx: IpamContext, node: string): Promise<NodeAttachment[]> {
  checkNodeName('node name', node);
  const view = ctx.cache.node(node);
  await loadNodeBlocks(ctx.store, view);
  const candidates = new Set<string>(view.handles.keys());
  for (const { block } of view.blocks.values()) for (const h of block.allocations.values()) candidates.add(h);
  const out: NodeAttachment[] = [];
  for (const [key, entry] of await readKeys(ctx.store, [...candidates].filter((h) => !isWarmHandle(h)).map(handleKey))) {
    if (!entry) continue;
    let rec: ReturnType<typeof decodeHandle>;
    try {
      rec = decodeHandle(entry);
    } catch {
      continue;
    }
    if (rec.node !== node || rec.stickyUntil !== undefined || rec.containerId === undefined || rec.ifname === undefined || rec.network === undefined) continue;
    const since = rec.since === undefined ? undefined : Date.parse(rec.since);
    out.push({
      handle: key.slice(HANDLE_PREFIX.length),
      rev: entry.rev,
      network: rec.network,
      containerId: rec.containerId,
      ifname: rec.ifname,
      ...(since === undefined ? {} : { since }),
      blocks: rec.blocks,
    });
  }
  return out.sort((a, b) => (a.handle < b.handle ? -1 : a.handle > b.handle ? 1 : 0));
}

/**
 * Frees what `handle` holds while its record is still at `rev` (the one nodeAttachments read),
 * stamped with the context's reason: the addresses freed, or undefined when the record changed
 * (nothing freed). Same errors as releaseByHandle.
 */
export function releaseAttachmentAsSeen(ctx: IpamContext, handle: string, rev: number): Promise<Released[] | undefined> {
  return releaseByHandleIf(ctx, handle, [{ key: handleKey(handle), rev }]);
}
