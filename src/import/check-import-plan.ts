/**
 * The pure half of the import applier: an ImportPlan checked against what the store holds
 * (its pools, the blocks the plan's addresses fall in, the handle records of the plan's
 * handles and of the addresses' current holders) → the conflicts, the pools to create, and per
 * block the addresses still to write. No I/O; apply-import-plan.ts reads the view and writes.
 *
 * Rules (docs/migrating.md, Whereabouts and Calico):
 * - A plan pool whose CIDR equals a podipam pool's is that pool (whatever its name); a
 *   different block size is a 'block-size' conflict. One that overlaps a pool it does not
 *   equal, or whose name a pool of another CIDR has, is a 'pool-overlap' conflict. A spec
 *   podipam refuses (validatePoolSpec) is 'invalid'. The addresses of a refused pool are
 *   skipped with it (no conflict of their own).
 * - An address names its pool (`address.pool`: a plan pool, or an existing podipam pool, as
 *   Whereabouts' `--pool` does) and must lie in it, else 'invalid'. Its block is the
 *   pool's existing block containing it, of any size the pool lists (after a block-size change
 *   the address may sit in a block of a former size), else a new block of the pool's size — an
 *   'invalid' conflict when that new block would overlap a block of another size.
 * - An address already held by its own handle is `already` (a re-run); held by another handle,
 *   an 'address-held' conflict naming the holder. An existing block affine to another node, or
 *   to none, takes the address all the same (a borrowed address, as podipam allocates): the
 *   block's affinity is never changed by an import. A new block gets the plan's affinity for it
 *   (null when the plan has none: an unaffine block, which no node claims since it exists).
 * - An address podipam freed less than its pool's `reuseAfter` ago (as of `view.now`) is a
 *   'quarantined' conflict (quarantined-conflict.ts): found here, so a dry run, and a real run
 *   without `skipConflicts`, report it before anything is written.
 * - The same address twice in the plan with two handles is 'invalid' (both left out), and so is
 *   a handle of the node agent's warm pool (`podipam-warm:…`, reserved-network.ts): only the
 *   agent writes those.
 * - A parser conflict whose subject is an address, a plan pool's name or a block CIDR of the
 *   plan leaves that address, pool or block out (the parser reports what it could not map).
 */
import { blockContaining } from '../alloc/block-layout.js';
import { type Block, ordinalOf } from '../alloc/block.js';
import type { HandleRecord } from '../cluster/records/index.js';
import { type Pool, poolBlockSizes, poolSpace, validatePoolSpec } from '../cluster/records/index.js';
import { overlappingBlocks } from '../alloc/overlapping-blocks.js';
import { type Prefix, formatAddr, formatPrefix, parsePrefix, prefixContains, prefixOf, prefixOverlaps, tryParseAddr } from '../ip/index.js';
import { reservedHandle } from '../model/reserved-network.js';
import type { ImportConflict, ImportPlan, ImportedAddress, ImportedPool } from './import-plan.js';
import { quarantineEndOf, quarantinedConflict } from './quarantined-conflict.js';

/** What the store holds that the plan touches. */
export interface ImportStoreView {
  readonly pools: readonly Pool[];
  /** Canonical block CIDR → the block, for the blocks that exist. */
  readonly blocks: ReadonlyMap<string, Block>;
  /** Handle → record, for the handles that exist (the plan's and the holders'). */
  readonly handles: ReadonlyMap<string, HandleRecord>;
  /** The clock (epoch ms) the pools' reuse quarantine is judged at; absent: no address is found quarantined. */
  readonly now?: number;
}

/** One block's share of the import: the addresses to write there (none already held). */
export interface ImportBlockWork {
  readonly cidr: Prefix;
  /** The podipam pool (its name in the store, or the one to be created). */
  readonly pool: string;
  /** The affinity of the block if it must be created (an existing block keeps its own). */
  readonly affinity: string | null;
  readonly addresses: readonly ImportedAddress[];
}

export interface CheckedImport {
  readonly conflicts: readonly ImportConflict[];
  readonly poolsToCreate: readonly ImportedPool[];
  /** Sorted by block CIDR text (IPv4 first), addresses by address. */
  readonly work: readonly ImportBlockWork[];
  /** Distinct addresses of the plan. */
  readonly total: number;
  readonly already: number;
  /** Addresses left out for a conflict (theirs or their pool's). */
  readonly skipped: number;
}

/** The plan's pools and addresses against the store view; see the module comment. */
export function checkImportPlan(plan: ImportPlan, view: ImportStoreView): CheckedImport {
  const conflicts: ImportConflict[] = [...plan.conflicts];
  const parserSubjects = new Set(plan.conflicts.map((c) => c.subject));
  const { resolved, refused, create } = resolvePools(plan, view, parserSubjects, conflicts);
  const existingByName = new Map(view.pools.map((p) => [p.name, p]));

  // Group by address text; the same address under two handles is refused whole.
  const byIp = new Map<string, ImportedAddress[]>();
  for (const a of plan.addresses) byIp.set(a.ip, [...(byIp.get(a.ip) ?? []), a]);
  const planBlocks = new Map(plan.blocks.map((b) => [b.cidr, b]));
  const work = new Map<string, { cidr: Prefix; pool: string; affinity: string | null; addresses: ImportedAddress[] }>();
  let already = 0;
  let skipped = 0;
  for (const [ip, group] of byIp) {
    const a = group[0]!;
    const handles = new Set(group.map((g) => g.holder.handle));
    if (handles.size > 1) {
      conflicts.push({
        kind: 'invalid',
        subject: ip,
        detail: `the source gives ${ip} to ${handles.size} holders: ${[...handles].map((h) => `"${h}"`).join(', ')}`,
      });
      skipped++;
      continue;
    }
    const reserved = reservedHandle('handle', a.holder.handle);
    if (reserved !== undefined) {
      conflicts.push({ kind: 'invalid', subject: ip, detail: reserved });
      skipped++;
      continue;
    }
    if (parserSubjects.has(ip) || parserSubjects.has(a.block) || refused.has(a.pool)) {
      skipped++;
      continue;
    }
    const addr = tryParseAddr(ip);
    if (!addr || formatAddr(addr) !== ip) {
      conflicts.push({ kind: 'invalid', subject: ip, detail: `${JSON.stringify(ip)} is not a canonical IP address` });
      skipped++;
      continue;
    }
    const pool = resolved.get(a.pool) ?? existingByName.get(a.pool);
    if (!pool) {
      conflicts.push({ kind: 'invalid', subject: ip, detail: `its pool "${a.pool}" is neither in the plan nor in podipam` });
      skipped++;
      continue;
    }
    const fresh = blockContaining(pool.cidr, pool.blockSize, addr);
    if (!fresh) {
      conflicts.push({ kind: 'invalid', subject: ip, detail: `${ip} is outside pool "${pool.name}" (${formatPrefix(pool.cidr)})` });
      skipped++;
      continue;
    }
    // An existing block of any of the pool's sizes holds it; else a new block of its size, which
    // must not overlap a block of another size (the write gate refuses that write all the same).
    const sizes = poolBlockSizes(pool);
    const block = sizes.map((s) => prefixOf(addr, s)).find((c) => view.blocks.has(formatPrefix(c))) ?? fresh;
    const over = block === fresh ? overlappingBlocks(fresh, sizes).find((c) => view.blocks.has(formatPrefix(c))) : undefined;
    if (over) {
      conflicts.push({
        kind: 'invalid',
        subject: ip,
        detail: `${ip} would need a new /${fresh.len} block ${formatPrefix(fresh)}, which would overlap the existing block ${formatPrefix(over)} of pool "${pool.name}"`,
      });
      skipped++;
      continue;
    }
    const cidr = formatPrefix(block);
    const existing = view.blocks.get(cidr);
    const holder = existing?.allocations.get(ordinalOf(block, addr));
    if (holder === a.holder.handle) {
      already++;
      continue;
    }
    if (holder !== undefined) {
      conflicts.push({
        kind: 'address-held',
        subject: ip,
        detail: `${ip} is already held in podipam by ${describeHolder(holder, view.handles.get(holder))}; the source gives it to ${describeImported(a)}`,
      });
      skipped++;
      continue;
    }
    const end = existing && view.now !== undefined ? quarantineEndOf(existing, ordinalOf(block, addr), pool.reuseAfterMs, view.now) : undefined;
    if (end !== undefined) {
      conflicts.push(quarantinedConflict(ip, pool.name, end));
      skipped++;
      continue;
    }
    const w = work.get(cidr) ?? { cidr: block, pool: pool.name, affinity: planBlocks.get(cidr)?.affinity ?? null, addresses: [] };
    w.addresses.push(a);
    work.set(cidr, w);
  }
  const sorted = [...work.values()].sort((x, y) => x.cidr.family - y.cidr.family || (x.cidr.base < y.cidr.base ? -1 : x.cidr.base > y.cidr.base ? 1 : 0));
  for (const w of sorted) w.addresses.sort((x, y) => ordinalOf(w.cidr, tryParseAddr(x.ip)!) - ordinalOf(w.cidr, tryParseAddr(y.ip)!));
  return { conflicts, poolsToCreate: create, work: sorted, total: byIp.size, already, skipped };
}

/** "pod ns/name (handle "h")", "node n (handle "h")" or "handle "h"": who holds an address, as its record says. */
export function describeHolder(handle: string, rec: HandleRecord | undefined): string {
  if (rec?.pod !== undefined) return `pod ${rec.namespace === undefined ? '' : `${rec.namespace}/`}${rec.pod} (handle "${handle}")`;
  if (rec && rec.node !== '') return `a holder on node ${rec.node} (handle "${handle}")`;
  return `handle "${handle}"`;
}

function describeImported(a: ImportedAddress): string {
  const h = a.holder;
  if (h.kind === 'node') return `node ${h.node ?? '?'} (${h.sourceHandle})`;
  return h.pod !== undefined ? `pod ${h.namespace === undefined ? '' : `${h.namespace}/`}${h.pod} (${h.sourceHandle})` : h.sourceHandle;
}

/** Each plan pool → the podipam pool it is (existing, or to create), or refused with a conflict. */
function resolvePools(
  plan: ImportPlan,
  view: ImportStoreView,
  parserSubjects: ReadonlySet<string>,
  conflicts: ImportConflict[],
): { resolved: Map<string, Pool>; refused: Set<string>; create: ImportedPool[] } {
  const resolved = new Map<string, Pool>();
  const refused = new Set<string>();
  const create: ImportedPool[] = [];
  const refuse = (p: ImportedPool, kind: ImportConflict['kind'], detail: string): void => {
    conflicts.push({ kind, subject: p.name, detail });
    refused.add(p.name);
  };
  for (const p of plan.pools) {
    if (parserSubjects.has(p.name)) {
      refused.add(p.name);
      continue;
    }
    let spec: Pool;
    try {
      spec = validatePoolSpec({ name: p.name, cidr: p.cidr, blockSize: p.blockSize, nodeSelector: p.nodeSelector, disabled: p.disabled });
    } catch (e) {
      refuse(p, 'invalid', `pool ${p.name} (${p.source}): ${(e as Error).message}`);
      continue;
    }
    const cidr = formatPrefix(spec.cidr);
    const same = view.pools.find((x) => formatPrefix(x.cidr) === cidr);
    if (same) {
      if (same.blockSize !== spec.blockSize) {
        refuse(p, 'block-size', `${p.source} (${cidr}) has blocks of /${spec.blockSize}; podipam pool "${same.name}" of the same cidr has /${same.blockSize}`);
      } else {
        resolved.set(p.name, same);
      }
      continue;
    }
    const over = view.pools.find((x) => prefixOverlaps(poolSpace(x), spec.cidr));
    if (over) {
      refuse(p, 'pool-overlap', `${p.source} (${cidr}) overlaps podipam pool "${over.name}" (${formatPrefix(poolSpace(over))}) without being equal to it`);
      continue;
    }
    const named = view.pools.find((x) => x.name === p.name);
    if (named) {
      refuse(p, 'pool-overlap', `podipam already has a pool named "${p.name}", with cidr ${formatPrefix(named.cidr)}, not ${cidr}`);
      continue;
    }
    const twin = create.find((x) => prefixOverlaps(parsePrefix(x.cidr), spec.cidr) || x.name === p.name);
    if (twin) {
      refuse(p, 'pool-overlap', `${p.source} (${cidr}) clashes with ${twin.source} (${twin.cidr}) of the same import`);
      continue;
    }
    create.push({ ...p, cidr });
    resolved.set(p.name, spec);
  }
  return { resolved, refused, create };
}

/**
 * The blocks that decide where `ip` goes in `pool`, for the view's reads: the block of each of
 * the pool's sizes containing it, and every block of another size that a new block of the
 * pool's size would overlap (none: outside the pool or not an address).
 */
export function blocksOfAddress(pool: Pool, ip: string): string[] {
  const a = tryParseAddr(ip);
  if (!a || !prefixContains(pool.cidr, a)) return [];
  const fresh = blockContaining(pool.cidr, pool.blockSize, a);
  if (!fresh) return [];
  const sizes = poolBlockSizes(pool);
  return [...sizes.map((s) => prefixOf(a, s)), ...overlappingBlocks(fresh, sizes)].map(formatPrefix);
}
