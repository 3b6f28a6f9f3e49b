/**
 * Repairs of what `ipam check` finds, for the server's cluster GC (which decides when: after
 * a grace period). Each is a compare-and-swap loop like assign and release: read, plan, one
 * transaction comparing what it read, on conflict go on from the entries the failed
 * transaction returned — bounded by ctx.maxAttempts (ContentionError after). A finding that
 * is no longer true when re-read is left alone. Every transaction is stamped 'cluster-gc'
 * (history-stamp.ts) unless the context names another reason.
 */
import { commitWrite } from '../gate/index.js';
import { ordinalOf, releaseOrdinals, withAffinity } from '../../alloc/block.js';
import { isDisposable, stampReleases } from '../../alloc/block-quarantine.js';
import { isSweepableOrphan, type Leak } from '../reports/index.js';
import { loadSnapshot, readKeys, type IpamContext } from '../views/index.js';
import {
  quarantineFor,
  decodeBlock,
  encodeBlock,
  decodeHandle,
  affinityKey,
  affinityPrefix,
  blockKey,
  CONFIG_KEY,
  HANDLE_PREFIX,
  handleKey,
  parseAffinityKey,
  parseBlockKey,
  releaseStampOp,
  ContentionError,
} from '../records/index.js';
import { releaseByHandleIf } from '../txn/index.js';
import { formatPrefix, parseAddr, parsePrefix, type Prefix } from '../../ip/index.js';
import type { Compare, Entry, Op } from '../../store/index.js';
import { nodeKey } from '../../model/node-record.js';
import { nodeTombstoneKey } from '../../model/node-tombstone.js';

/**
 * Frees a leaked address (an allocation whose handle record is gone) if the block still gives
 * it to that handle and the handle is still absent — an address released and handed to a new
 * pod meanwhile is left alone. True when it was freed by this call.
 */
export async function releaseLeak(ctx: IpamContext, leak: Leak): Promise<boolean> {
  const cidr = parsePrefix(leak.block);
  const key = blockKey(cidr);
  const ordinal = ordinalOf(cidr, parseAddr(leak.ip));
  const hkey = handleKey(leak.handle);
  let seen = await readKeys(ctx.store, [key, hkey]);
  for (let attempt = 1; attempt <= ctx.maxAttempts; attempt++) {
    const e = seen.get(key);
    if (!e || seen.get(hkey) !== undefined) return false;
    const block = decodeBlock(e);
    if (block.allocations.get(ordinal) !== leak.handle) return false;
    const q = quarantineFor((ctx.cache.snapshot ??= await loadSnapshot(ctx.store)).pools, cidr, ctx.now().getTime());
    const next = stampReleases(block, releaseOrdinals(block, [ordinal]).block, q);
    const ops: Op[] = isDisposable(next, q) && next.affinity === null ? [{ type: 'delete', key }] : [{ type: 'put', key, value: encodeBlock(next) }];
    const r = await commitWrite(ctx, {
      what: `release leaked address ${leak.ip}`,
      compares: [
        { key, rev: e.rev },
        { key: hkey, rev: 0 },
      ],
      ops: [...ops, releaseStampOp(ctx, 'cluster-gc')],
    });
    if (r.succeeded) return true;
    seen = new Map([
      [key, r.current?.[0]],
      [hkey, r.current?.[1]],
    ]);
  }
  throw new ContentionError(`release leaked address ${leak.ip}`, ctx.maxAttempts, [key]);
}

/** What releaseDeletedNodeBlock did. */
export interface DeletedNodeBlockRelease {
  /** The node the block was affine to (undefined when the block was gone or had none). */
  readonly node?: string;
  readonly cidr?: Prefix;
  /** Handles of that node's pods released from the block. */
  readonly handles: number;
  /** The block lost its affinity (or was deleted), by this call or the releases. */
  readonly released: boolean;
  /** The block was deleted (it was empty). */
  readonly deleted: boolean;
  /** Addresses other nodes' pods still hold in it (it stays, without affinity). */
  readonly borrowed: number;
  /**
   * The proof was missing or went away (the node has a record again, or no tombstone: re-added,
   * or it claimed a block since): what is left of the node's pods and the block was kept.
   */
  readonly unproven: boolean;
}

/**
 * For a block affine to a node whose record was deleted (check's `block-node-deleted`, `key`
 * its block key): releases what that node's pods hold there (by handle, each its own CAS loop),
 * then removes the block's affinity in one transaction with the affinity record — deleting
 * the block when empty, else keeping it orphaned for the pods of other nodes that borrowed
 * from it. Acts only on proof the node is gone: its tombstone exists and its record does not,
 * read afresh here and compared in every transaction (a node re-added or claiming a block
 * meanwhile removes the tombstone, and the rest is kept); only handles last written before the
 * tombstone. A block whose affinity changed meanwhile is left alone, and so is an empty one
 * that still quarantines a freed address (src/alloc/block-quarantine.ts) until a later pass.
 */
export async function releaseDeletedNodeBlock(ctx: IpamContext, key: string): Promise<DeletedNodeBlockRelease> {
  const nothing = { handles: 0, released: false, deleted: false, borrowed: 0, unproven: false };
  const cidr = parseBlockKey(key);
  if (!cidr) throw new TypeError(`Cannot release a block of a deleted node as 'key' must be a block key: current value is ${JSON.stringify(key)}`);
  const first = await ctx.store.get(key);
  if (!first) return nothing;
  const node = decodeBlock(first).affinity;
  if (node === null) return nothing;
  const proof = await readKeys(ctx.store, [nodeKey(node), nodeTombstoneKey(node)]);
  const tomb = proof.get(nodeTombstoneKey(node));
  if (proof.get(nodeKey(node)) !== undefined || tomb === undefined) return { ...nothing, node, cidr, unproven: true };
  const guard: Compare[] = [
    { key: nodeKey(node), rev: 0 },
    { key: tomb.key, rev: tomb.rev },
  ];
  const gc: IpamContext = { ...ctx, why: ctx.why ?? 'cluster-gc' };
  let handles = 0;
  const held = [...new Set(decodeBlock(first).allocations.values())];
  for (const [hk, he] of await readKeys(ctx.store, held.map(handleKey))) {
    if (!he || decodeHandle(he).node !== node) continue;
    // The tombstone proves gone what the node held when its record was deleted, nothing newer:
    // a handle written since (a pod started on the node after the deletion) is kept. Its
    // revision is compared in the release, so a rewrite meanwhile stops it too.
    if (he.rev > tomb.rev) continue;
    if ((await releaseByHandleIf(gc, hk.slice(HANDLE_PREFIX.length), [...guard, { key: hk, rev: he.rev }])) === undefined)
      return { ...nothing, node, cidr, handles, unproven: true };
    handles++;
  }
  const ak = affinityKey(node, cidr);
  let seen: Map<string, Entry | undefined> = await readKeys(ctx.store, [key, ak]);
  for (let attempt = 1; attempt <= ctx.maxAttempts; attempt++) {
    const e = seen.get(key);
    const ae = seen.get(ak);
    // The releases may have deleted the block already (empty, no affinity needed by anyone).
    if (!e) return { node, cidr, handles, released: true, deleted: true, borrowed: 0, unproven: false };
    const block = decodeBlock(e);
    if (block.affinity !== node) return { ...nothing, node, cidr, handles };
    const empty = block.allocations.size === 0;
    // An empty block that still quarantines a freed address stays as it is until that is over:
    // deleting it would let a node claim it and hand the address out at once; orphaning it
    // would leave it to nobody. GC's next pass (the finding stands) deletes it.
    if (empty && !isDisposable(block, quarantineFor((ctx.cache.snapshot ??= await loadSnapshot(ctx.store)).pools, cidr, ctx.now().getTime()))) {
      return { ...nothing, node, cidr, handles };
    }
    const ops: Op[] = empty ? [{ type: 'delete', key }] : [{ type: 'put', key, value: encodeBlock(withAffinity(block, null)) }];
    if (ae) ops.push({ type: 'delete', key: ak });
    const r = await commitWrite(ctx, {
      what: `release block ${formatPrefix(cidr)} of deleted node "${node}"`,
      compares: [{ key, rev: e.rev }, { key: ak, rev: ae?.rev ?? 0 }, ...guard],
      ops: [...ops, releaseStampOp(ctx, 'cluster-gc')],
    });
    if (r.succeeded) return { node, cidr, handles, released: true, deleted: empty, borrowed: empty ? 0 : block.allocations.size, unproven: false };
    if (guard.some((g, i) => (r.current?.[2 + i]?.rev ?? 0) !== g.rev)) return { ...nothing, node, cidr, handles, unproven: true };
    seen = new Map([
      [key, r.current?.[0]],
      [ak, r.current?.[1]],
    ]);
  }
  throw new ContentionError(`release block ${formatPrefix(cidr)} of deleted node "${node}"`, ctx.maxAttempts, [key, ak]);
}

/**
 * Deletes an orphan block (no affinity: left by cluster GC for the pods of other nodes, or by a
 * release that emptied it while it still quarantined a freed address) once it holds nothing and
 * quarantines nothing any more (check's `emptyOrphans`, `key` its block key): nothing else ever
 * writes such a block again. Re-read here and compared in the delete (a borrowing ADD meanwhile,
 * or a release that stamped a new quarantine, keeps it); the quarantine is judged with the pools
 * of the context's snapshot, reloaded when the `config` compare fails. True when this call
 * deleted it.
 */
export async function releaseEmptyOrphanBlock(ctx: IpamContext, key: string): Promise<boolean> {
  const cidr = parseBlockKey(key);
  if (!cidr) throw new TypeError(`Cannot delete an empty orphan block as 'key' must be a block key: current value is ${JSON.stringify(key)}`);
  let e = await ctx.store.get(key);
  for (let attempt = 1; attempt <= ctx.maxAttempts; attempt++) {
    if (!e) return false;
    const snap = (ctx.cache.snapshot ??= await loadSnapshot(ctx.store));
    if (!isSweepableOrphan(decodeBlock(e), snap.pools, ctx.now().getTime())) return false;
    // The pools' revision is compared too: a reuseAfter raised meanwhile may quarantine again.
    const compares: Compare[] = [
      { key, rev: e.rev },
      { key: CONFIG_KEY, rev: snap.configRev },
    ];
    const r = await commitWrite(ctx, {
      what: `delete empty orphan block ${formatPrefix(cidr)}`,
      compares,
      ops: [{ type: 'delete', key }, releaseStampOp(ctx, 'cluster-gc')],
    });
    if (r.succeeded) return true;
    if ((r.current?.[1]?.rev ?? 0) !== snap.configRev) ctx.cache.snapshot = undefined;
    e = r.current?.[0];
  }
  throw new ContentionError(`delete empty orphan block ${formatPrefix(cidr)}`, ctx.maxAttempts, [key]);
}

/**
 * Every block affine to `node`, released as releaseDeletedNodeBlock does (on the same proof):
 * what an operator asks for when a deleted node's blocks should go now rather than after GC's
 * grace period (`DELETE /api/v1/nodes/NAME?release=now`, `simulate --cleanup`).
 */
export async function releaseDeletedNode(ctx: IpamContext, node: string): Promise<DeletedNodeBlockRelease[]> {
  const out: DeletedNodeBlockRelease[] = [];
  for (const a of await ctx.store.list(affinityPrefix(node))) {
    const parsed = parseAffinityKey(a.key);
    if (parsed) out.push(await releaseDeletedNodeBlock(ctx, blockKey(parsed.cidr)));
  }
  return out;
}
