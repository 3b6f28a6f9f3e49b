/**
 * The one import applier (the contract is import-plan.ts): reads what the store holds for the
 * plan, checks it (check-import-plan.ts, pure), and — unless there are conflicts and no
 * skipConflicts — creates the missing pools (createPool: refusing a race on name or CIDR) and
 * writes each block with its addresses and handle records in its own compare-and-swap
 * transaction (write-import-block.ts), stamped in the history as the CLI's, for an import.
 *
 * Never frees or moves anything: it only adds holds, on addresses nobody holds. Re-runnable:
 * an address already held by the same handle is `already`, and a plan fully applied writes
 * nothing at all (the store revision does not move). A dry run is this same code on a private
 * copy of the store (copyToMemory): its outcome is exactly what the real run does.
 */
import {
  decodeBlock,
  decodeHandle,
  type HandleRecord,
  POOL_PREFIX,
  blockKey,
  handleKey,
  decodePool,
  type Pool,
  validatePoolSpec,
} from '../cluster/records/index.js';
import { DEFAULT_MAX_ATTEMPTS, type IpamContext, ViewCache, wallClock } from '../cluster/views/index.js';
import { createPool } from '../cluster/admin/index.js';
import type { Block } from '../alloc/block.js';
import { formatPrefix, parsePrefix } from '../ip/index.js';
import { copyToMemory } from '../store/copy-to-memory.js';
import type { Store } from '../store/index.js';
import { type CheckedImport, type ImportStoreView, blocksOfAddress, checkImportPlan } from './check-import-plan.js';
import type { ApplyImportPlan, ImportConflict, ImportOutcome, ImportPlan } from './import-plan.js';
import { writeImportBlock } from './write-import-block.js';

export const applyImportPlan: ApplyImportPlan = async (store, plan, options = {}) => {
  if (!options.dryRun) return apply(store, plan, options.skipConflicts === true);
  const copy = await copyToMemory(store);
  try {
    return { ...(await apply(copy, plan, options.skipConflicts === true)), wroteNothing: true };
  } finally {
    await copy.close();
  }
};

/** The checked plan alone (what a refused run reports), for callers that print before writing. */
export async function checkImportAgainst(store: Store, plan: ImportPlan): Promise<CheckedImport> {
  return checkImportPlan(plan, await readView(store, plan));
}

async function apply(store: Store, plan: ImportPlan, skipConflicts: boolean): Promise<ImportOutcome> {
  const checked = await checkImportAgainst(store, plan);
  if (checked.conflicts.length > 0 && !skipConflicts) {
    return {
      conflicts: checked.conflicts,
      poolsCreated: [],
      blocksWritten: [],
      adopted: 0,
      already: checked.already,
      skipped: checked.total - checked.already,
      wroteNothing: true,
    };
  }
  const ctx: IpamContext = { store, cache: new ViewCache(), maxAttempts: DEFAULT_MAX_ATTEMPTS, now: wallClock, writer: 'cli', why: 'import' };
  const poolsCreated: string[] = [];
  for (const p of checked.poolsToCreate) {
    await createPool(ctx, { name: p.name, cidr: p.cidr, blockSize: p.blockSize, nodeSelector: p.nodeSelector, disabled: p.disabled });
    poolsCreated.push(p.name);
  }
  const conflicts: ImportConflict[] = [...checked.conflicts];
  const blocksWritten: string[] = [];
  const created = new Set<string>();
  let adopted = 0;
  let already = checked.already;
  let skipped = checked.skipped;
  for (const w of checked.work) {
    const r = await writeImportBlock(ctx, w, created);
    adopted += r.adopted;
    already += r.already;
    skipped += r.conflicts.length;
    conflicts.push(...r.conflicts);
    if (r.wrote) blocksWritten.push(formatPrefix(w.cidr));
  }
  return { conflicts, poolsCreated, blocksWritten, adopted, already, skipped, wroteNothing: poolsCreated.length === 0 && blocksWritten.length === 0 };
}

/**
 * The store's pools, the blocks the plan's addresses fall in (by each address's pool: an
 * existing one, else the plan's spec), the plan's handles and the holders of those blocks.
 * Reads only; a few round trips whatever the plan's size.
 */
async function readView(store: Store, plan: ImportPlan): Promise<ImportStoreView> {
  const pools = (await store.list(POOL_PREFIX)).map(decodePool);
  const byCidr = new Map(pools.map((p) => [formatPrefix(p.cidr), p]));
  const byName = new Map(pools.map((p) => [p.name, p]));
  const planPools = new Map<string, Pool>();
  for (const p of plan.pools) {
    try {
      const spec = validatePoolSpec({ name: p.name, cidr: p.cidr, blockSize: p.blockSize, nodeSelector: p.nodeSelector, disabled: p.disabled });
      planPools.set(p.name, byCidr.get(formatPrefix(spec.cidr)) ?? spec);
    } catch {
      // The checker reports it.
    }
  }
  const cidrs = new Set<string>();
  for (const a of plan.addresses) {
    const pool = planPools.get(a.pool) ?? byName.get(a.pool);
    if (pool) for (const b of blocksOfAddress(pool, a.ip)) cidrs.add(b);
  }
  const blockKeys = [...cidrs].map((c) => blockKey(parsePrefix(c)));
  const blocks = new Map<string, Block>();
  for (const e of await store.getMany(blockKeys)) {
    if (!e) continue;
    const b = decodeBlock(e);
    blocks.set(formatPrefix(b.cidr), b);
  }
  const wanted = new Set(plan.addresses.map((a) => a.holder.handle));
  for (const b of blocks.values()) for (const h of b.allocations.values()) wanted.add(h);
  const names = [...wanted];
  const handles = new Map<string, HandleRecord>();
  const entries = await store.getMany(names.map(handleKey));
  entries.forEach((e, i) => {
    if (!e) return;
    try {
      handles.set(names[i]!, decodeHandle(e));
    } catch {
      // A corrupt holder record: the conflict names the handle alone; `ipam check` reports the record.
    }
  });
  return { pools, blocks, handles, now: Date.now() };
}
