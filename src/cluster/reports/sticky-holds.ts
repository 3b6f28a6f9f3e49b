/**
 * Sticky holds as `ipam check` lists them (informational: a live hold is not a leak, its
 * addresses are kept for a pod's next incarnation) and as `podipam serve`'s GC releases them
 * once their `stickyUntil` has passed — only while the hold's record is the one the check saw
 * (compared in the release transaction), so a hold renewed or taken over meanwhile stays.
 */
import { type Block, addrOfOrdinal } from '../../alloc/block.js';
import { formatAddr, parsePrefix } from '../../ip/index.js';
import { type HandleRecord, blockKey, handleKey } from '../records/index.js';
import type { IpamContext } from '../views/index.js';
import { type Released, releaseByHandleIf } from '../txn/index.js';

export interface StickyHold {
  readonly handle: string;
  /** The hold record's revision (GC releases only that record). */
  readonly rev: number;
  readonly node: string;
  readonly namespace?: string;
  readonly pod?: string;
  readonly network?: string;
  /** ISO time after which GC releases the addresses. */
  readonly stickyUntil: string;
  readonly expired: boolean;
  /** The addresses the hold keeps. */
  readonly addresses: readonly string[];
}

/** The holds among `handles` (records with `stickyUntil`), with their addresses from `blocks` (by key). */
export function stickyHoldsOf(
  handles: ReadonlyMap<string, { readonly rev: number; readonly record: HandleRecord }>,
  blocks: ReadonlyMap<string, Block>,
  now: Date,
): StickyHold[] {
  const out: StickyHold[] = [];
  for (const [handle, { rev, record }] of handles) {
    if (record.stickyUntil === undefined) continue;
    const addresses: string[] = [];
    for (const cidr of record.blocks.keys()) {
      const b = blocks.get(blockKey(parsePrefix(cidr)));
      if (b) for (const [o, h] of b.allocations) if (h === handle) addresses.push(formatAddr(addrOfOrdinal(b.cidr, o)));
    }
    out.push({
      handle,
      rev,
      node: record.node,
      ...(record.namespace !== undefined ? { namespace: record.namespace } : {}),
      ...(record.pod !== undefined ? { pod: record.pod } : {}),
      ...(record.network !== undefined ? { network: record.network } : {}),
      stickyUntil: record.stickyUntil,
      expired: Date.parse(record.stickyUntil) <= now.getTime(),
      addresses,
    });
  }
  return out.sort((a, b) => (a.handle < b.handle ? -1 : 1));
}

/** Frees an expired hold's addresses while its record is still at `hold.rev` (stamped 'sticky-expired'); undefined when it changed (renewed, taken over). */
export async function releaseStickyHold(ctx: IpamContext, hold: Pick<StickyHold, 'handle' | 'rev'>): Promise<Released[] | undefined> {
  return releaseByHandleIf({ ...ctx, why: 'sticky-expired' }, hold.handle, [{ key: handleKey(hold.handle), rev: hold.rev }]);
}
