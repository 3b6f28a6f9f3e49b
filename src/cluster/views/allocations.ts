/**
 * Paged allocation listings on the cluster's records: the addresses of one handle, of one
 * node's blocks, of one pool, or of every block — in pages of at most `limit`, resumed after a
 * cursor. Reads only the blocks a page needs, in datastore key order. Plus one block's
 * allocations.
 */
import { addrOfOrdinal, type Block } from '../../alloc/block.js';
import { usableCount } from '../../alloc/block-addressing.js';
import { formatAddr, formatPrefix, parsePrefix, prefixContainsPrefix, type Prefix } from '../../ip/index.js';
import type { Entry } from '../../store/index.js';
import { compareKeys } from '../../store/key-order.js';
import { listAll } from '../../store/list-all.js';
import { decodeBlock, decodeHandle, affinityPrefix, BLOCK_PREFIX, blockKey, handleKey, parseAffinityKey } from '../records/index.js';
import type { IpamContext } from './ipam-context.js';

export interface AllocationRow {
  readonly ip: string;
  readonly handle: string;
  readonly block: string;
  /** The block's node (the pod's node, unless the address was borrowed from another node's block). */
  readonly node: string | null;
}

export interface AllocationPage {
  readonly items: readonly AllocationRow[];
  /** Pass as `after` for the next page; absent on the last page. */
  readonly next?: string;
}

export interface AllocationFilter {
  readonly pool?: Prefix;
  readonly node?: string;
  readonly handle?: string;
  readonly limit: number;
  /** Cursor from a previous page: "<block cidr>#<ordinal>". */
  readonly after?: string;
}

/** One block and what it holds, by ordinal. */
export interface BlockAllocations {
  readonly cidr: Prefix;
  readonly node: string | null;
  /** Usable addresses in the block. */
  readonly capacity: bigint;
  readonly allocations: readonly AllocationRow[];
}

/** An `after` cursor that is not one of ours; `field` is "after". */
export class InvalidCursorError extends TypeError {
  override readonly name = 'InvalidCursorError';
  readonly field = 'after';
  constructor(readonly cursor: string) {
    super(`invalid query parameter "after" ${JSON.stringify(cursor)}: pass the "next" value of the previous page`);
  }
}

const PAGE = 100;

/** One block's allocations; undefined when the block does not exist. */
export async function blockAllocations(ctx: IpamContext, cidr: Prefix): Promise<BlockAllocations | undefined> {
  const e = await ctx.store.get(blockKey(cidr));
  if (!e) return undefined;
  const block = decodeBlock(e);
  return {
    cidr: block.cidr,
    node: block.affinity,
    capacity: usableCount(block.cidr),
    allocations: sortedAllocations(block).map(([o, handle]) => row(block, o, handle)),
  };
}

/** One page of allocations matching the filter. InvalidCursorError for a malformed cursor. */
export async function listAllocations(ctx: IpamContext, f: AllocationFilter): Promise<AllocationPage> {
  const cursor = parseCursor(f.after);
  const items: AllocationRow[] = [];
  for await (const block of candidateBlocks(ctx, f, cursor?.key)) {
    if (f.pool !== undefined && !(block.cidr.family === f.pool.family && prefixContainsPrefix(f.pool, block.cidr))) continue;
    if (f.node !== undefined && block.affinity !== f.node) continue;
    const sameBlock = cursor !== undefined && blockKey(block.cidr) === cursor.key;
    for (const [o, handle] of sortedAllocations(block)) {
      if (f.handle !== undefined && handle !== f.handle) continue;
      if (sameBlock && o <= (cursor as { ordinal: number }).ordinal) continue;
      if (items.length === f.limit) {
        const last = items[items.length - 1] as AllocationRow;
        return { items, next: cursorOf(last) };
      }
      items.push(row(block, o, handle));
    }
  }
  return { items };
}

function row(block: Block, o: number, handle: string): AllocationRow {
  return { ip: formatAddr(addrOfOrdinal(block.cidr, o)), handle, block: formatPrefix(block.cidr), node: block.affinity };
}

function sortedAllocations(block: Block): [number, string][] {
  return [...block.allocations].sort((a, b) => a[0] - b[0]);
}

/** Blocks in key order from `fromKey` on (inclusive): a handle's blocks, a node's, or all. */
async function* candidateBlocks(ctx: IpamContext, f: AllocationFilter, fromKey: string | undefined): AsyncGenerator<Block> {
  const store = ctx.store;
  let keys: string[] | undefined;
  if (f.handle !== undefined) {
    const h = await store.get(handleKey(f.handle));
    keys = h ? [...decodeHandle(h).blocks.keys()].map((c) => blockKey(parsePrefix(c))) : [];
  } else if (f.node !== undefined) {
    keys = (await listAll(store, affinityPrefix(f.node))).flatMap((e) => {
      const a = parseAffinityKey(e.key);
      return a ? [blockKey(a.cidr)] : [];
    });
  }
  if (keys) {
    keys.sort(compareKeys);
    for (const k of keys) {
      if (fromKey !== undefined && compareKeys(k, fromKey) < 0) continue;
      const e = await store.get(k);
      if (e) yield decodeBlock(e);
    }
    return;
  }
  let after: string | undefined = fromKey;
  if (fromKey !== undefined) {
    const e = await store.get(fromKey);
    if (e) yield decodeBlock(e);
  }
  // Bounded by the number of blocks: every full page moves `after` on.
  for (;;) {
    const page = await store.list(BLOCK_PREFIX, { limit: PAGE, after });
    for (const e of page) yield decodeBlock(e);
    if (page.length < PAGE) return;
    after = (page[page.length - 1] as Entry).key;
  }
}

function cursorOf(r: AllocationRow): string {
  const cidr = parsePrefix(r.block);
  const ip = parsePrefix(`${r.ip}/${cidr.family === 4 ? 32 : 128}`);
  return `${r.block}#${ip.base - cidr.base}`;
}

function parseCursor(after: string | undefined): { key: string; ordinal: number } | undefined {
  if (after === undefined) return undefined;
  const hash = after.lastIndexOf('#');
  if (hash < 0 || !/^[0-9]+$/.test(after.slice(hash + 1))) throw new InvalidCursorError(after);
  try {
    return { key: blockKey(parsePrefix(after.slice(0, hash))), ordinal: Number(after.slice(hash + 1)) };
  } catch {
    throw new InvalidCursorError(after);
  }
}
