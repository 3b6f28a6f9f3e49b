/**
 * What the warm pool (src/warm) keeps in the cluster datastore, through the cluster back end
 * and nothing else: the names of a node's warm handles (the addresses themselves are assigned
 * and released with the allocator's own assign/releaseAddresses), the records it writes beside
 * them (the pod records, src/warm/warm-handle.ts), and the cached pool list its start reads.
 * Record keys never fall under the allocator's own prefixes (pools, blocks, affinities, handles,
 * reservations, config): such a write is refused before anything is written.
 */
import type { Entry, Op } from '../store/index.js';
import { loadSnapshot } from './cluster-snapshot.js';
import type { IpamContext } from './ipam-context.js';
import { AFFINITY_PREFIX, BLOCK_PREFIX, CONFIG_KEY, HANDLE_PREFIX, IPSET_PREFIX, POOL_PREFIX, RESERVATION_PREFIX } from './keys.js';
import type { Pool } from './pool-record.js';

/** One record write: `value` undefined deletes the key. */
export interface WarmRecordWrite {
  readonly key: string;
  readonly value: string | undefined;
}

const OWN = [POOL_PREFIX, BLOCK_PREFIX, AFFINITY_PREFIX, HANDLE_PREFIX, RESERVATION_PREFIX, IPSET_PREFIX];

/** A record key under one of the allocator's own prefixes; carries the key. */
export class WarmRecordKeyError extends RangeError {
  override readonly name = 'WarmRecordKeyError';
  constructor(readonly key: string) {
    super(`warm record key ${JSON.stringify(key)} is the cluster allocator's own (under ${[...OWN, CONFIG_KEY].join(', ')})`);
  }
}

function checkRecordKey(key: string): string {
  if (key === '' || key === CONFIG_KEY || OWN.some((p) => key.startsWith(p))) throw new WarmRecordKeyError(key);
  return key;
}

/** The handles whose name starts with `prefix` (a node's warm handles: warmHandlePrefix(node)), by name. */
export async function listWarmHandles(ctx: IpamContext, prefix: string): Promise<string[]> {
  return (await ctx.store.list(HANDLE_PREFIX + prefix)).map((e) => e.key.slice(HANDLE_PREFIX.length));
}

/** The records whose key starts with `prefix` (a node's pod records), in key order. */
export async function readWarmRecords(ctx: IpamContext, prefix: string): Promise<{ key: string; value: string }[]> {
  return (await ctx.store.list(checkRecordKey(prefix))).map((e: Entry) => ({ key: e.key, value: e.value }));
}

/** Puts and deletes the records in one transaction (a key given twice: its last write). */
export async function writeWarmRecords(ctx: IpamContext, writes: readonly WarmRecordWrite[]): Promise<void> {
  const last = new Map<string, string | undefined>();
  for (const w of writes) last.set(checkRecordKey(w.key), w.value);
  if (last.size === 0) return;
  const ops: Op[] = [...last].map(([key, value]) => (value === undefined ? { type: 'delete', key } : { type: 'put', key, value }));
  await ctx.store.txn([], ops);
}

/**
 * The pools, from the allocator's own cached snapshot (loaded on first use, refreshed by the
 * allocator when a refusal needs proof): a warm pool's start costs no pool listing.
 */
export async function cachedPools(ctx: IpamContext): Promise<readonly Pool[]> {
  ctx.cache.snapshot ??= await loadSnapshot(ctx.store);
  return ctx.cache.snapshot.pools;
}
