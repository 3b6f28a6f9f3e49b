/**
 * What a handle holds, read consistently: the handle record, then the handle and its blocks
 * in one atomic batched read, repeated (bounded) until the handle did not change in between.
 */
import { addrOfOrdinal, ordinalsOf } from '../../alloc/block.js';
import { blockGateway } from '../../alloc/block-addressing.js';
import { prefixContainsPrefix, parsePrefix } from '../../ip/index.js';
import { decodeBlock, decodeHandle, blockKey, handleKey, POOL_PREFIX, decodePool, ContentionError, type Assignment } from '../records/index.js';
import type { IpamContext } from './ipam-context.js';
import { readKeys } from './read-keys.js';

/** The addresses `handle` holds (IPv4 first), or undefined when the handle does not exist. */
export async function addressesOfHandle(ctx: IpamContext, handle: string): Promise<Assignment[] | undefined> {
  let entry = await ctx.store.get(handleKey(handle));
  for (let attempt = 1; attempt <= ctx.maxAttempts; attempt++) {
    if (!entry) return undefined;
    const rec = decodeHandle(entry);
    const keys = [...rec.blocks.keys()].map((c) => blockKey(parsePrefix(c)));
    const read = await readKeys(ctx.store, [handleKey(handle), ...keys]);
    const now = read.get(handleKey(handle));
    if (now?.rev !== entry.rev) {
      entry = now;
      continue;
    }
    const pools = ctx.cache.snapshot?.pools ?? (await ctx.store.list(POOL_PREFIX)).map(decodePool);
    const out: Assignment[] = [];
    for (const k of keys) {
      const e = read.get(k);
      if (!e) continue;
      const b = decodeBlock(e);
      const pool = pools.find((p) => prefixContainsPrefix(p.cidr, b.cidr));
      for (const o of ordinalsOf(b, handle)) {
        out.push({ addr: addrOfOrdinal(b.cidr, o), pool: pool?.name ?? '', prefixLen: b.cidr.len, gateway: blockGateway(b.cidr), block: b.cidr });
      }
    }
    return out.sort((a, b) => a.addr.family - b.addr.family || (a.addr.value < b.addr.value ? -1 : 1));
  }
  throw new ContentionError(`read handle "${handle}"`, ctx.maxAttempts, [handleKey(handle)]);
}
