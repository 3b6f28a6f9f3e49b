/**
 * Paged allocation listings for the API, on top of the cluster's records: the addresses of
 * one handle, of one node's blocks, of one pool, or of every block — in pages of at most
 * `limit`, resumed after a cursor. Reads only the blocks a page needs, in datastore key order.
 */
import { addrOfOrdinal, type Block } from '../alloc/block.js';
import { decodeBlock } from '../cluster/block-record.js';
import { decodeHandle } from '../cluster/handle-record.js';
import { BLOCK_PREFIX, affinityPrefix, blockKey, parseAffinityKey } from '../cluster/keys.js';
import { handleKey } from '../cluster/keys.js';
import { listAll } from '../store/list-all.js';
import { formatAddr, formatPrefix, parsePrefix, prefixContainsPrefix, type Prefix } from '../ip/index.js';
import { compareKeys } from '../store/key-order.js';
import type { Entry, Store } from '../store/index.js';
import { badField } from './http-error.js';

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

const PAGE = 100;

/** The allocations of one block, by ordinal. */
export function blockRows(block: Block): AllocationRow[] {
  return sortedAllocations(block).map(([o, handle]) => row(block, o, handle));
}

/** Reads and decodes one block; undefined when absent. */
export async function readBlock(store: Store, cidr: Prefix): Promise<Block | undefined> {
  const e = await store.get(blockKey(cidr));
  return e ? decodeBlock(e) : undefined;
}

/** One page of allocations matching the filter. HttpError 400 for a malformed cursor. */
export async function listAllocations(store: Store, f: AllocationFilter): Promise<AllocationPage> {
  const cursor = parseCursor(f.after);
  const items: AllocationRow[] = [];
  for await (const block of candidateBlocks(store, f, cursor?.key)) {
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
async function* candidateBlocks(store: Store, f: AllocationFilter, fromKey: string | undefined): AsyncGenerator<Block> {
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
  const bad = (): Error => badField('after', `invalid query parameter "after" ${JSON.stringify(after)}: pass the "next" value of the previous page`);
  const hash = after.lastIndexOf('#');
  if (hash < 0 || !/^[0-9]+$/.test(after.slice(hash + 1))) throw bad();
  try {
    return { key: blockKey(parsePrefix(after.slice(0, hash))), ordinal: Number(after.slice(hash + 1)) };
  } catch {
    throw bad();
  }
}
