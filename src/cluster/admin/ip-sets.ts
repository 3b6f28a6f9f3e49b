/**
 * IP-set administration (ip-set-record.ts): create (from ranges, or the N lowest free addresses
 * of a pool), list, show (each address free or held, by which pod), delete (refused while any
 * address is held). Create and delete are config transactions (config-txn.ts): the generation
 * bump makes every assignment planned without (or with) the set fail its compare, and the
 * compares on the blocks holding the set's addresses make sure no address was handed out
 * between our read and our write.
 */
import { excludedRole } from '../../alloc/block-addressing.js';
import { type Block, holderOf, ordinalOf } from '../../alloc/block.js';
import { type Addr, IpRangeSet, formatAddr, prefixContains, prefixOf, rangeFromPrefix, rangeOf } from '../../ip/index.js';
import type { Compare, Entry } from '../../store/index.js';
import { checkResourceName } from '../../model/names.js';
import {
  decodeBlock,
  decodeHandle,
  IpSetConflictError,
  IpSetInUseError,
  BLOCK_PREFIX,
  IPSET_PREFIX,
  RESERVATION_PREFIX,
  blockKey,
  handleKey,
  ipSetKey,
  poolKey,
  type Pool,
  decodePool,
  decodeReservation,
  NotFoundError,
  type IpSet,
  MAX_IP_SET_BLOCKS,
  MAX_IP_SET_SIZE,
  decodeIpSet,
  encodeIpSet,
  formatIpSetRange,
  ipSetBlocks,
  ipSetOf,
  parseIpSetRange,
} from '../records/index.js';
import { configTxn } from '../txn/index.js';
import type { IpamContext } from '../views/index.js';

/** What a set is made of: explicit addresses, or a count of the pool's lowest free ones. */
export type IpSetSpec = { readonly ranges: readonly string[]; readonly count?: undefined } | { readonly count: number; readonly ranges?: undefined };

export interface IpSetAddress {
  readonly address: string;
  /** Undefined when free. */
  readonly handle?: string;
  readonly namespace?: string;
  readonly pod?: string;
  readonly node?: string;
}

export interface IpSetInfo {
  readonly name: string;
  readonly pool: string;
  readonly ranges: readonly string[];
  readonly size: number;
  readonly held: number;
}

export interface IpSetDetail extends IpSetInfo {
  readonly addresses: readonly IpSetAddress[];
}

/**
 * Creates ip-set `name` in `pool`. TypeError/RangeError naming a bad field or value,
 * NotFoundError for an unknown pool, IpSetConflictError when the name exists or an address is
 * reserved, in another set or held (naming the holder). Atomic.
 */
export async function createIpSet(ctx: IpamContext, name: string, poolName: string, spec: IpSetSpec): Promise<IpSet> {
  checkResourceName('ip-set name', name);
  checkResourceName('pool name', poolName);
  const given = spec as { ranges?: unknown; count?: unknown };
  if ((given.ranges === undefined) === (given.count === undefined))
    throw new TypeError('invalid ip-set addresses: give either "ranges" (addresses) or "count", not both nor neither');
  let wanted: IpRangeSet | undefined;
  if (given.ranges !== undefined) {
    if (!Array.isArray(given.ranges) || given.ranges.length === 0)
      throw new TypeError(`invalid ip-set ranges ${JSON.stringify(given.ranges)}: give at least one address, range or CIDR`);
    wanted = new IpRangeSet((given.ranges as string[]).map(parseIpSetRange));
    if (wanted.size() > BigInt(MAX_IP_SET_SIZE)) throw new RangeError(`invalid ip-set ranges: ${wanted.size()} addresses, at most ${MAX_IP_SET_SIZE}`);
  } else if (!Number.isInteger(given.count) || (given.count as number) < 1 || (given.count as number) > MAX_IP_SET_SIZE) {
    throw new RangeError(`invalid ip-set count ${JSON.stringify(given.count)}: an integer from 1 to ${MAX_IP_SET_SIZE}`);
  }
  return configTxn(ctx, `create ip-set "${name}"`, async () => {
    const [poolE, setE, setEntries, resEntries] = await Promise.all([
      ctx.store.get(poolKey(poolName)),
      ctx.store.get(ipSetKey(name)),
      ctx.store.list(IPSET_PREFIX),
      ctx.store.list(RESERVATION_PREFIX),
    ]);
    if (!poolE) throw new NotFoundError('pool', poolName);
    const pool = decodePool(poolE);
    if (pool.deleting) throw new IpSetConflictError(name, `pool "${poolName}" is being deleted`);
    // An ip-set's blocks are of the pool's one size; a pool with blocks of several is refused.
    if (pool.formerBlockSizes.length > 0) {
      throw new IpSetConflictError(
        name,
        `pool "${poolName}" has blocks of several sizes (/${[pool.blockSize, ...pool.formerBlockSizes].join(', /')}) since its block size changed; an ip-set needs a pool of one block size`,
      );
    }
    if (setE) throw new IpSetConflictError(name, 'an ip-set with this name exists');
    const others = setEntries.map(decodeIpSet);
    const reservations = resEntries.map(decodeReservation);
    const unavailable = (a: Addr): string | undefined => {
      const r = reservations.find((x) => x.cidrs.some((c) => prefixContains(c, a)));
      if (r) return `address ${formatAddr(a)} is reserved (reservation "${r.name}")`;
      const other = ipSetOf(others, a);
      if (other) return `address ${formatAddr(a)} belongs to ip-set "${other.name}"`;
      return undefined;
    };
    const addrs = wanted ?? (await lowestFree(ctx, pool, given.count as number, (a) => unavailable(a) === undefined, name));
    for (const r of addrs.ranges) {
      if (r.start.family !== pool.cidr.family || !prefixContains(pool.cidr, r.start) || !prefixContains(pool.cidr, r.end)) {
        throw new RangeError(
          `invalid ip-set address ${JSON.stringify(formatIpSetRange(r))}: not inside pool "${pool.name}" (${formatIpSetRange(rangeFromPrefix(pool.cidr))})`,
        );
      }
    }
    const cidrs = ipSetBlocks(addrs, pool.blockSize);
    if (cidrs.length > MAX_IP_SET_BLOCKS)
      throw new RangeError(`invalid ip-set addresses: they span ${cidrs.length} blocks of pool "${pool.name}", at most ${MAX_IP_SET_BLOCKS}`);
    const blocks = await readBlocks(ctx, cidrs.map(blockKey));
    for (const a of addrs.addrs()) {
      const cidr = prefixOf(a, pool.blockSize);
      const role = excludedRole(cidr, ordinalOf(cidr, a));
      if (role !== undefined) throw new RangeError(`invalid ip-set address ${formatAddr(a)}: it is ${role} (never handed out)`);
      const why = unavailable(a);
      if (why) throw new IpSetConflictError(name, why);
      const block = blocks.get(blockKey(cidr))?.block;
      const holder = block && holderOf(block, ordinalOf(cidr, a));
      if (holder !== undefined) throw new IpSetConflictError(name, `address ${formatAddr(a)} is held by ${await holderText(ctx, holder)}`);
    }
    const set: IpSet = { name, pool: pool.name, addrs };
    const compares: Compare[] = [{ key: poolE.key, rev: poolE.rev }, { key: ipSetKey(name), rev: 0 }, ...[...blocks].map(([key, b]) => ({ key, rev: b.rev }))];
    return { compares, ops: [{ type: 'put', key: ipSetKey(name), value: encodeIpSet(set) }], result: set };
  });
}

/** The `count` lowest addresses of `pool` that are handed-out-able, `ok`, and not held. */
async function lowestFree(ctx: IpamContext, pool: Pool, count: number, ok: (a: Addr) => boolean, name: string): Promise<IpRangeSet> {
  const blocks = new Map<string, Block>();
  for (const e of await ctx.store.list(BLOCK_PREFIX)) {
    const b = decodeBlock(e);
    if (prefixContains(pool.cidr, { family: b.cidr.family, value: b.cidr.base })) blocks.set(e.key, b);
  }
  const found: Addr[] = [];
  const span = rangeFromPrefix(pool.cidr);
  for (let v = span.start.value; v <= span.end.value && found.length < count; v++) {
    const a = { family: pool.cidr.family, value: v };
    const cidr = prefixOf(a, pool.blockSize);
    const o = ordinalOf(cidr, a);
    if (excludedRole(cidr, o) !== undefined || !ok(a)) continue;
    const block = blocks.get(blockKey(cidr));
    if (block && holderOf(block, o) !== undefined) continue;
    found.push(a);
  }
  if (found.length < count)
    throw new IpSetConflictError(
      name,
      `pool "${pool.name}" has only ${found.length} free address${found.length === 1 ? '' : 'es'} outside reservations and other ip-sets, ${count} asked for`,
    );
  return new IpRangeSet(found.map((a) => rangeOf(a, a)));
}

async function readBlocks(ctx: IpamContext, keys: readonly string[]): Promise<Map<string, { rev: number; block: Block | undefined }>> {
  const got = await ctx.store.getMany(keys);
  return new Map(keys.map((k, i) => [k, { rev: got[i]?.rev ?? 0, block: got[i] ? decodeBlock(got[i]) : undefined }]));
}

/** 'pod NS/NAME (handle "h")' or 'handle "h"'. */
async function holderText(ctx: IpamContext, handle: string): Promise<string> {
  const e = await ctx.store.get(handleKey(handle));
  const h = e && decodeHandle(e);
  return h?.pod ? `pod ${h.namespace ?? ''}/${h.pod} (handle "${handle}")` : `handle "${handle}"`;
}

async function getSet(ctx: IpamContext, name: string): Promise<{ entry: Entry; set: IpSet }> {
  checkResourceName('ip-set name', name);
  const entry = await ctx.store.get(ipSetKey(name));
  if (!entry) throw new NotFoundError('ip-set', name);
  return { entry, set: decodeIpSet(entry) };
}

/** Each address of the set with its holder; the blocks read, by key. */
async function addressesOf(
  ctx: IpamContext,
  set: IpSet,
  blockSize: number | undefined,
): Promise<{ addresses: IpSetAddress[]; blocks: Map<string, { rev: number; block: Block | undefined }> }> {
  const cidrs = blockSize === undefined ? [] : ipSetBlocks(set.addrs, blockSize);
  const blocks = await readBlocks(ctx, cidrs.map(blockKey));
  const holders = new Map<string, string>();
  for (const a of set.addrs.addrs()) {
    if (blockSize === undefined) continue;
    const cidr = prefixOf(a, blockSize);
    const h = blocks.get(blockKey(cidr))?.block && holderOf(blocks.get(blockKey(cidr))!.block!, ordinalOf(cidr, a));
    if (h !== undefined) holders.set(formatAddr(a), h);
  }
  const handles = [...new Set(holders.values())];
  const records = handles.length === 0 ? [] : await ctx.store.getMany(handles.map(handleKey));
  const byHandle = new Map(handles.map((h, i) => [h, records[i] ? decodeHandle(records[i]) : undefined]));
  const addresses: IpSetAddress[] = [];
  for (const a of set.addrs.addrs()) {
    const handle = holders.get(formatAddr(a));
    const rec = handle === undefined ? undefined : byHandle.get(handle);
    addresses.push({
      address: formatAddr(a),
      ...(handle === undefined ? {} : { handle }),
      ...(rec?.namespace ? { namespace: rec.namespace } : {}),
      ...(rec?.pod ? { pod: rec.pod } : {}),
      ...(rec?.node ? { node: rec.node } : {}),
    });
  }
  return { addresses, blocks };
}

async function poolBlockSize(ctx: IpamContext, pool: string): Promise<number | undefined> {
  const e = await ctx.store.get(poolKey(pool));
  return e ? decodePool(e).blockSize : undefined;
}

function info(set: IpSet, addresses: readonly IpSetAddress[]): IpSetInfo {
  return {
    name: set.name,
    pool: set.pool,
    ranges: set.addrs.ranges.map(formatIpSetRange),
    size: Number(set.addrs.size()),
    held: addresses.filter((a) => a.handle !== undefined).length,
  };
}

/** Every set with its size and how many of its addresses are held, by name. */
export async function listIpSets(ctx: IpamContext): Promise<IpSetInfo[]> {
  const sets = (await ctx.store.list(IPSET_PREFIX)).map(decodeIpSet);
  const out: IpSetInfo[] = [];
  for (const set of sets) out.push(info(set, (await addressesOf(ctx, set, await poolBlockSize(ctx, set.pool))).addresses));
  return out;
}

/** One set, each address free or held (by which handle, pod and node). NotFoundError when absent. */
export async function showIpSet(ctx: IpamContext, name: string): Promise<IpSetDetail> {
  const { set } = await getSet(ctx, name);
  const { addresses } = await addressesOf(ctx, set, await poolBlockSize(ctx, set.pool));
  return { ...info(set, addresses), addresses };
}

/** Deletes a set; NotFoundError when absent, IpSetInUseError (naming the holders) while any address is held. */
export async function deleteIpSet(ctx: IpamContext, name: string): Promise<void> {
  checkResourceName('ip-set name', name);
  await configTxn(ctx, `delete ip-set "${name}"`, async () => {
    const { entry, set } = await getSet(ctx, name);
    const { addresses, blocks } = await addressesOf(ctx, set, await poolBlockSize(ctx, set.pool));
    const held = addresses.filter((a) => a.handle !== undefined);
    if (held.length > 0) {
      throw new IpSetInUseError(
        name,
        held.map((a) => `${a.address} (${a.pod ? `pod ${a.namespace ?? ''}/${a.pod}, ` : ''}handle "${a.handle}")`),
      );
    }
    const compares: Compare[] = [{ key: entry.key, rev: entry.rev }, ...[...blocks].map(([key, b]) => ({ key, rev: b.rev }))];
    return { compares, ops: [{ type: 'delete', key: entry.key }], result: undefined };
  });
}
