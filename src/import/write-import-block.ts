/**
 * Writes one block's share of an import through the write gate (src/cluster/gate: a new block is
 * proven to overlap no block of any size its pool lists): a compare-and-swap transaction holding the block
 * record (created with its affinity, or updated), its new allocations, the handle record of
 * every handle getting an address there (created, or its count for this block raised), the
 * affinity key of a new affine block, and the history stamp (writer 'cli', why 'import').
 * Every key read is compared at the revision read (absent: 0), and the pool's record too (a
 * pool being deleted takes nothing), so a racing ADD, DEL, claim or GC makes the transaction
 * fail whole and it is planned again from what the store then holds — never a half-written
 * block: after each transaction the block and the handle records agree (`ipam check` clean).
 *
 * A handle spanning blocks (a dual-stack pod: a v4 and a v6 block) is written by each block's
 * transaction in turn, each raising the record's count for its own block under a compare, so
 * the record always lists exactly the blocks that hold it. Should a handle this run created
 * vanish before its next block is written (the pod's DEL ran meanwhile), that block's addresses
 * of it are not written again: re-creating the record would hold addresses of a deleted pod.
 *
 * An import registers no node: unlike a claim it leaves a node's tombstone in place. Cluster GC
 * of a node proven gone frees only the holds written before its tombstone, so what an import
 * writes for such a node afterwards stays held (its block then loses its affinity) until its
 * DEL or `ipam release`: never freed on weaker proof than GC's own.
 *
 * An address podipam freed less than its pool's `reuseAfter` ago (src/alloc/block-quarantine.ts)
 * is a conflict ('quarantined'), not adopted: the source may still name the pod that held it,
 * and recording a holder now would hand it out within its quarantine.
 *
 * A block holding many handles is written in chunks of CHUNK_HANDLES handles, each its own
 * transaction of the same shape (within etcd's 128 ops and compares).
 */
import { type Block, assignOrdinal, newBlock, ordinalOf } from '../alloc/block.js';
import { type Quarantine, quarantinedOrdinals, stampReleases } from '../alloc/block-quarantine.js';
import { quarantinedConflict } from './quarantined-conflict.js';
import {
  encodeAffinity,
  decodeBlock,
  encodeBlock,
  ContentionError,
  type HandleRecord,
  adjustHandle,
  decodeHandle,
  encodeHandle,
  stampOp,
  affinityKey,
  blockKey,
  handleKey,
  poolKey,
  decodePool,
} from '../cluster/records/index.js';
import { GateRefusedError, commitWrite } from '../cluster/gate/index.js';
import type { IpamContext } from '../cluster/views/index.js';
import { formatPrefix, parseAddr } from '../ip/index.js';
import type { Compare, Op } from '../store/index.js';
import { type ImportBlockWork, describeHolder } from './check-import-plan.js';
import type { ImportConflict, ImportedAddress, ImportedHolder } from './import-plan.js';

/** Handles per transaction: their compares and puts plus block, affinity, pool and stamp stay under 128. */
export const CHUNK_HANDLES = 100;

export interface BlockWriteResult {
  readonly adopted: number;
  /** Found held by their own handle when written (another import ran meanwhile). */
  readonly already: number;
  /** Addresses that became unavailable between the check and the write. */
  readonly conflicts: readonly ImportConflict[];
  readonly wrote: boolean;
}

/** Thrown when the pool disappears or starts being deleted while the import runs. */
export class ImportPoolGoneError extends Error {
  override readonly name = 'ImportPoolGoneError';
  constructor(
    readonly pool: string,
    why: string,
  ) {
    super(`import: pool "${pool}" ${why} while the import ran; nothing more was written to it (run the import again)`);
  }
}

/** See the module comment. `created`: the handles this run created so far (updated). */
export async function writeImportBlock(ctx: IpamContext, work: ImportBlockWork, created: Set<string>): Promise<BlockWriteResult> {
  const byHandle = new Map<string, ImportedAddress[]>();
  for (const a of work.addresses) byHandle.set(a.holder.handle, [...(byHandle.get(a.holder.handle) ?? []), a]);
  const handles = [...byHandle.keys()];
  let adopted = 0;
  let already = 0;
  let wrote = false;
  const conflicts: ImportConflict[] = [];
  for (let i = 0; i < handles.length; i += CHUNK_HANDLES) {
    const chunk = new Map(handles.slice(i, i + CHUNK_HANDLES).map((h) => [h, byHandle.get(h)!]));
    const r = await writeChunk(ctx, work, chunk, created);
    adopted += r.adopted;
    already += r.already;
    wrote ||= r.wrote;
    conflicts.push(...r.conflicts);
  }
  return { adopted, already, conflicts, wrote };
}

async function writeChunk(
  ctx: IpamContext,
  work: ImportBlockWork,
  chunk: ReadonlyMap<string, readonly ImportedAddress[]>,
  created: Set<string>,
): Promise<BlockWriteResult> {
  const bk = blockKey(work.cidr);
  const pk = poolKey(work.pool);
  const ak = work.affinity === null ? undefined : affinityKey(work.affinity, work.cidr);
  const hks = [...chunk.keys()].map(handleKey);
  let conflict: string[] = [];
  for (let attempt = 1; attempt <= ctx.maxAttempts; attempt++) {
    const keys = [pk, bk, ...(ak ? [ak] : []), ...hks];
    const entries = await ctx.store.getMany(keys);
    const [poolEntry, blockEntry] = entries;
    if (!poolEntry) throw new ImportPoolGoneError(work.pool, 'was deleted');
    const pool = decodePool(poolEntry);
    if (pool.deleting) throw new ImportPoolGoneError(work.pool, 'is being deleted');
    let block: Block = blockEntry ? decodeBlock(blockEntry) : newBlock(work.cidr, work.affinity);
    const current = new Map(entries.slice(ak ? 3 : 2).map((e, j) => [[...chunk.keys()][j]!, e]));
    const conflicts: ImportConflict[] = [];
    const records: [string, HandleRecord][] = [];
    const q: Quarantine = { reuseAfterMs: pool.reuseAfterMs, now: ctx.now().getTime() };
    const quarantined = quarantinedOrdinals(block, q);
    let adopted = 0;
    let already = 0;
    for (const [handle, addrs] of chunk) {
      const entry = current.get(handle);
      if (!entry && created.has(handle)) {
        for (const a of addrs)
          conflicts.push({
            kind: 'invalid',
            subject: a.ip,
            detail: `the handle "${handle}" this import created was released meanwhile (the pod's DEL): ${a.ip} is not held again`,
          });
        continue;
      }
      let n = 0;
      for (const a of addrs) {
        const o = ordinalOf(work.cidr, parseAddr(a.ip));
        const holder = block.allocations.get(o);
        if (holder === handle) already++;
        else if (holder !== undefined) {
          const rec = await holderRecord(ctx, holder);
          conflicts.push({ kind: 'address-held', subject: a.ip, detail: `${a.ip} was taken by ${describeHolder(holder, rec)} while the import ran` });
        } else if (quarantined.has(o)) {
          conflicts.push(quarantinedConflict(a.ip, pool.name, quarantined.get(o)!));
        } else {
          block = assignOrdinal(block, o, handle, true);
          n++;
        }
      }
      if (n === 0) continue;
      adopted += n;
      const base = entry ? decodeHandle(entry) : newRecord(addrs[0]!.holder);
      records.push([handle, adjustHandle(base, new Map([[formatPrefix(work.cidr), n]]))]);
    }
    if (records.length === 0) return { adopted: 0, already, conflicts, wrote: false };
    const compares: Compare[] = keys.map((key, j) => ({ key, rev: entries[j]?.rev ?? 0 }));
    const ops: Op[] = [{ type: 'put', key: bk, value: encodeBlock(stampReleases(null, block, q)) }];
    if (!blockEntry && ak && !entries[2]) ops.push({ type: 'put', key: ak, value: encodeAffinity({ state: 'confirmed', claimedAt: ctx.now().toISOString() }) });
    for (const [h, rec] of records) ops.push({ type: 'put', key: handleKey(h), value: encodeHandle(rec) });
    ops.push(stampOp(ctx));
    let r: Awaited<ReturnType<typeof commitWrite>>;
    try {
      r = await commitWrite(ctx, { what: `import into block ${formatPrefix(work.cidr)}`, compares, ops });
    } catch (e) {
      if (!(e instanceof GateRefusedError)) throw e;
      // The block cannot be written as planned (the gate names why): its addresses are conflicts.
      for (const [, addrs] of records.length > 0 ? chunk : [])
        for (const a of addrs) conflicts.push({ kind: 'invalid', subject: a.ip, detail: `${a.ip} cannot be written: ${e.detail}` });
      return { adopted: 0, already, conflicts, wrote: false };
    }
    if (r.succeeded) {
      for (const [h] of records) created.add(h);
      return { adopted, already, conflicts, wrote: true };
    }
    conflict = r.compares.filter((c, j) => (r.current?.[j]?.rev ?? 0) !== c.rev).map((c) => c.key);
  }
  throw new ContentionError(`import into block ${formatPrefix(work.cidr)}`, ctx.maxAttempts, conflict);
}

/** A new handle record for an imported holder (node '' when the source does not know it). */
function newRecord(h: ImportedHolder): HandleRecord {
  return {
    node: h.node ?? '',
    ...(h.network === undefined ? {} : { network: h.network }),
    ...(h.containerId === undefined ? {} : { containerId: h.containerId }),
    ...(h.ifname === undefined ? {} : { ifname: h.ifname }),
    ...(h.namespace === undefined ? {} : { namespace: h.namespace }),
    ...(h.pod === undefined ? {} : { pod: h.pod }),
    blocks: new Map(),
  };
}

async function holderRecord(ctx: IpamContext, handle: string): Promise<HandleRecord | undefined> {
  const e = await ctx.store.get(handleKey(handle));
  try {
    return e && decodeHandle(e);
  } catch {
    return undefined;
  }
}
