/**
 * `podipam ipam check`: consistency of the whole datastore, like `calicoctl ipam check`.
 * Leaks are allocations whose handle record is gone (nobody will ever release them by handle).
 * Problems are everything else that disagrees: handles pointing at missing blocks or with
 * counts that differ from the blocks, empty handles, blocks affine to a node whose record was
 * deleted (`block-node-deleted`: the node's tombstone proves it gone, and cluster GC frees
 * them), blocks affine to a node that has neither a record nor a tombstone
 * (`block-node-unregistered`, only when node records or tombstones exist at all: a node that
 * claims a block is registered by that block's affinity, so this proves nothing, and GC never
 * acts on it), affinities without their block and blocks without
 * their affinity, affinities stuck in a non-confirmed state, allocations outside every pool,
 * two blocks that overlap (`block-overlap`: possible only if a block was written around the
 * claim proof, src/alloc/overlapping-blocks.ts), and records that do not decode. The lists are read one after the other; every finding is
 * then re-checked with one atomic read of the keys involved, so activity during the check does
 * not produce false reports. Read-only. Sticky holds (handles with `stickyUntil`: a sticky pod's
 * addresses kept for its next incarnation) are listed apart, with their expiry: not problems.
 * So are borrowed blocks (`borrowed`): blocks of a node proven gone (or left without affinity
 * by cluster GC) that keep addresses of pods of other nodes — GC frees the gone node's own
 * pods and empty blocks, and reports these rather than freeing them; each names the pods.
 * Empty orphan blocks (`emptyOrphans`: no affinity, no address, kept while they quarantined a
 * freed address, empty-orphans.ts) are listed with the end of their quarantine: GC deletes them.
 *
 * Every holder, not only the blocks (check-holders.ts): each node agent's holder view (its idle,
 * cooling and sticky addresses and the pods it serves, `agent-views/<node>`) and its pod records
 * are compared with the blocks and handles; an address two holders claim, an idle address the
 * datastore gives to someone else or to no one, a pod record without its block's holder are
 * `holders` findings (node, pod, container id, address), confirmed by one atomic read of the
 * records involved as above. A disagreement the agent may not have answered yet (its view is
 * old, or older than a record involved) is listed in `unsettled`, not as a finding.
 */
import { type Block, addrOfOrdinal, handleCounts } from '../../alloc/block.js';
import { familyBits, formatAddr, formatPrefix, parsePrefix, prefixContainsPrefix, type Prefix } from '../../ip/index.js';
import { MAX_TXN_OPS, type Entry } from '../../store/index.js';
import { NODE_PREFIX, nodeKey } from '../../model/node-record.js';
import { decodeNodeTombstone, NODE_TOMBSTONE_PREFIX, nodeTombstoneKey, type NodeTombstone } from '../../model/node-tombstone.js';
import { decodeAffinity } from '../records/affinity-record.js';
import { decodeBlock } from '../records/block-record.js';
import { decodeHandle, type HandleRecord } from '../records/handle-record.js';
import type { IpamContext } from '../service/ipam-context.js';
import { AFFINITY_PREFIX, BLOCK_PREFIX, HANDLE_PREFIX, POOL_PREFIX, affinityKey, blockKey, handleKey, parseAffinityKey } from '../records/keys.js';
import { type Pool, decodePool, poolSpace } from '../records/pool-record.js';
import { readKeys } from '../txn/read-keys.js';
import { type StickyHold, stickyHoldsOf } from './sticky-holds.js';
import { listAll } from '../../store/list-all.js';
import { POD_RECORD_PREFIX } from '../../model/reserved-network.js';
import { AGENT_VIEW_PREFIX } from '../records/agent-view-record.js';
import { checkHolders, type HolderFinding, type HolderInput, type StaleHolder } from './check-holders.js';
import { type EmptyOrphanBlock, emptyOrphansOf } from '../admin/empty-orphans.js';

export interface Leak {
  readonly ip: string;
  readonly block: string;
  readonly handle: string;
}

export interface Problem {
  readonly kind:
    | 'handle-block-missing'
    | 'handle-count-mismatch'
    | 'handle-empty'
    | 'block-node-deleted'
    | 'block-node-unregistered'
    | 'affinity-block-missing'
    | 'block-affinity-missing'
    | 'affinity-not-confirmed'
    | 'allocation-outside-pools'
    | 'block-overlap'
    | 'corrupt-record';
  /** The record the problem is about. */
  readonly key: string;
  readonly message: string;
}

export interface CheckReport {
  readonly leaks: readonly Leak[];
  readonly problems: readonly Problem[];
  /** Sticky holds (sticky-holds.ts), when there are any: informational, not problems — a live hold is a sticky pod's kept address. */
  readonly stickyHolds?: readonly StickyHold[];
  /** Borrowed blocks, when there are any: informational (see the module comment). */
  readonly borrowed?: readonly BorrowedBlock[];
  /** Holder findings (check-holders.ts), when there are any: problems, as leaks are. */
  readonly holders?: readonly HolderFinding[];
  /** Holder disagreements an agent may not have answered yet, when there are any: informational. */
  readonly unsettled?: readonly StaleHolder[];
  /** Empty orphan blocks (empty-orphans.ts), when there are any: informational; cluster GC deletes those past their quarantine. */
  readonly emptyOrphans?: readonly EmptyOrphanBlock[];
}

/** `viewMaxAgeMs`: an agent's holder view older than this is stale (default: by its own refresh period, check-holders.ts). */
export interface CheckOptions {
  readonly viewMaxAgeMs?: number | undefined;
}

export interface BorrowedBlock {
  readonly block: string;
  /** The node the block is affine to (proven deleted), or null once GC removed its affinity. */
  readonly node: string | null;
  /** The other nodes' pods holding addresses in it. */
  readonly pods: readonly { readonly address: string; readonly handle: string; readonly node: string; readonly pod?: string }[];
}

interface Finding {
  readonly keys: readonly string[];
  readonly leak?: Leak;
  readonly problem?: Problem;
}

/** Runs every check; see the module comment. Throws only what the store throws. */
export async function checkIpam(ctx: IpamContext, opts: CheckOptions = {}): Promise<CheckReport> {
  const [poolEntries, nodeEntries, tombstoneEntries] = await Promise.all([
    ctx.store.list(POOL_PREFIX),
    ctx.store.list(NODE_PREFIX),
    ctx.store.list(NODE_TOMBSTONE_PREFIX),
  ]);
  const [blockEntries, handleEntries, affinityEntries] = await Promise.all([
    ctx.store.list(BLOCK_PREFIX),
    ctx.store.list(HANDLE_PREFIX),
    ctx.store.list(AFFINITY_PREFIX),
  ]);
  const first = scan({ poolEntries, nodeEntries, tombstoneEntries, records: [...blockEntries, ...handleEntries, ...affinityEntries] });
  // Re-check the findings against atomic reads of their keys (up to 128 keys per read).
  const confirmed: Finding[] = [];
  for (let i = 0; i < first.length;) {
    const keys = new Set<string>();
    const batch: Finding[] = [];
    while (i < first.length && keys.size + first[i]!.keys.length <= MAX_TXN_OPS) {
      for (const k of first[i]!.keys) keys.add(k);
      batch.push(first[i++]!);
    }
    const only = await readKeys(ctx.store, [...keys]);
    const read = [...only.values()].filter((e): e is Entry => e !== undefined);
    const again = scan({
      poolEntries,
      nodeEntries: overlay(nodeEntries, only, read, NODE_PREFIX),
      tombstoneEntries: overlay(tombstoneEntries, only, read, NODE_TOMBSTONE_PREFIX),
      records: read,
      only,
    });
    for (const f of batch) if (again.some((g) => sameFinding(f, g))) confirmed.push(f);
  }
  const holds = holdsOf(handleEntries, blockEntries, ctx.now());
  const borrowed = borrowedOf(blockEntries, handleEntries, nodeEntries, tombstoneEntries);
  const emptyOrphans = emptyOrphansOfListing(blockEntries, poolEntries, ctx.now().getTime());
  const [podRecords, views] = await Promise.all([listAll(ctx.store, POD_RECORD_PREFIX), listAll(ctx.store, AGENT_VIEW_PREFIX)]);
  const holders = await checkEveryHolder(ctx, {
    blocks: blockEntries,
    handles: handleEntries,
    podRecords,
    views,
    now: ctx.now().getTime(),
    maxAgeMs: opts.viewMaxAgeMs,
  });
  return {
    leaks: confirmed.flatMap((f) => (f.leak ? [f.leak] : [])),
    problems: confirmed.flatMap((f) => (f.problem ? [f.problem] : [])),
    ...(holds.length > 0 ? { stickyHolds: holds } : {}),
    ...(borrowed.length > 0 ? { borrowed } : {}),
    ...(holders.findings.length > 0 ? { holders: holders.findings } : {}),
    ...(holders.stale.length > 0 ? { unsettled: holders.stale } : {}),
    ...(emptyOrphans.length > 0 ? { emptyOrphans } : {}),
  };
}

/** The listing's empty orphan blocks (records that do not decode are corrupt-record problems already). */
function emptyOrphansOfListing(blockEntries: readonly Entry[], poolEntries: readonly Entry[], now: number): EmptyOrphanBlock[] {
  const pools: Pool[] = [];
  for (const e of poolEntries)
    tryDecode(
      e,
      decodePool,
      () => {},
      (p) => pools.push(p),
    );
  const blocks: [string, Block][] = [];
  for (const e of blockEntries)
    tryDecode(
      e,
      decodeBlock,
      () => {},
      (b) => blocks.push([e.key, b]),
    );
  return emptyOrphansOf(blocks, pools, now);
}

/**
 * The holder comparison of the listings, each finding confirmed by comparing again with its
 * records read atomically (up to MAX_TXN_OPS keys per read): the listings were read one after
 * the other, so a pod starting meanwhile must not show as a finding.
 */
async function checkEveryHolder(ctx: IpamContext, listed: HolderInput): Promise<ReturnType<typeof checkHolders>> {
  const first = checkHolders(listed);
  const confirmed: HolderFinding[] = [];
  const id = (f: HolderFinding): string => JSON.stringify([f.kind, f.node, f.address, f.claim, f.other]);
  for (let i = 0; i < first.findings.length;) {
    const keys = new Set<string>();
    const batch: HolderFinding[] = [];
    while (i < first.findings.length && (batch.length === 0 || keys.size + first.findings[i]!.keys.length <= MAX_TXN_OPS)) {
      for (const k of first.findings[i]!.keys) keys.add(k);
      batch.push(first.findings[i++]!);
    }
    const only = await readKeys(ctx.store, [...keys]);
    const read = [...only.values()].filter((e): e is Entry => e !== undefined);
    const fresh = (list: readonly Entry[], prefix: string): Entry[] => overlay(list, only, read, prefix);
    const again = checkHolders({
      ...listed,
      blocks: fresh(listed.blocks, BLOCK_PREFIX),
      handles: fresh(listed.handles, HANDLE_PREFIX),
      podRecords: fresh(listed.podRecords, POD_RECORD_PREFIX),
      views: fresh(listed.views, AGENT_VIEW_PREFIX),
    });
    const still = new Set(again.findings.map(id));
    for (const f of batch) if (still.has(id(f))) confirmed.push(f);
  }
  return { findings: confirmed, stale: first.stale };
}

/** Blocks without affinity, or affine to a node proven deleted, holding addresses of other nodes' pods (from the listing). */
function borrowedOf(
  blockEntries: readonly Entry[],
  handleEntries: readonly Entry[],
  nodeEntries: readonly Entry[],
  tombstoneEntries: readonly Entry[],
): BorrowedBlock[] {
  const nodes = new Set(nodeEntries.map((e) => e.key));
  const gone = new Set<string>();
  for (const e of tombstoneEntries)
    tryDecode(
      e,
      (t) => decodeNodeTombstone(t.key, t.value),
      () => {},
      (t) => !nodes.has(nodeKey(t.name)) && gone.add(t.name),
    );
  const handles = new Map<string, HandleRecord>();
  for (const e of handleEntries)
    tryDecode(
      e,
      decodeHandle,
      () => {},
      (h) => handles.set(e.key.slice(HANDLE_PREFIX.length), h),
    );
  const out: BorrowedBlock[] = [];
  for (const e of blockEntries) {
    tryDecode(
      e,
      decodeBlock,
      () => {},
      (b) => {
        if (b.allocations.size === 0 || (b.affinity !== null && !gone.has(b.affinity))) return;
        const pods: BorrowedBlock['pods'][number][] = [];
        for (const [o, h] of b.allocations) {
          const rec = handles.get(h);
          if (!rec || rec.node === b.affinity) continue;
          const pod = rec.namespace !== undefined && rec.pod !== undefined ? `${rec.namespace}/${rec.pod}` : undefined;
          pods.push({ address: formatAddr(addrOfOrdinal(b.cidr, o)), handle: h, node: rec.node, ...(pod !== undefined ? { pod } : {}) });
        }
        if (pods.length > 0) out.push({ block: formatPrefix(b.cidr), node: b.affinity, pods });
      },
    );
  }
  return out;
}

/** The sticky holds of the listed records (those that do not decode are corrupt-record problems already). */
function holdsOf(handleEntries: readonly Entry[], blockEntries: readonly Entry[], now: Date): StickyHold[] {
  const handles = new Map<string, { rev: number; record: HandleRecord }>();
  for (const e of handleEntries)
    tryDecode(
      e,
      decodeHandle,
      () => {},
      (record) => record.stickyUntil !== undefined && handles.set(e.key.slice(HANDLE_PREFIX.length), { rev: e.rev, record }),
    );
  if (handles.size === 0) return [];
  const blocks = new Map<string, Block>();
  for (const e of blockEntries)
    tryDecode(
      e,
      decodeBlock,
      () => {},
      (b) => blocks.set(e.key, b),
    );
  return stickyHoldsOf(handles, blocks, now);
}

/** The listed entries of `prefix`, with those of the keys read again replaced by what was read. */
function overlay(listed: readonly Entry[], only: ReadonlyMap<string, Entry | undefined>, read: readonly Entry[], prefix: string): Entry[] {
  return [...listed.filter((e) => !only.has(e.key)), ...read.filter((e) => e.key.startsWith(prefix))];
}

function sameFinding(a: Finding, b: Finding): boolean {
  return JSON.stringify([a.leak, a.problem]) === JSON.stringify([b.leak, b.problem]);
}

interface ScanInput {
  readonly poolEntries: readonly Entry[];
  readonly nodeEntries: readonly Entry[];
  readonly tombstoneEntries: readonly Entry[];
  /** Block, handle and affinity entries. */
  readonly records: readonly Entry[];
  /** When re-checking: the keys that were read (a key absent from this map was not read, so says nothing). */
  readonly only?: ReadonlyMap<string, Entry | undefined>;
}

/** Finds every inconsistency among the given records (pure). */
function scan({ poolEntries, nodeEntries, tombstoneEntries, records, only }: ScanInput): Finding[] {
  const blockEntries = records.filter((e) => e.key.startsWith(BLOCK_PREFIX));
  const handleEntries = records.filter((e) => e.key.startsWith(HANDLE_PREFIX));
  const affinityEntries = records.filter((e) => e.key.startsWith(AFFINITY_PREFIX));
  const out: Finding[] = [];
  const corrupt = (key: string, e: unknown): void => {
    out.push({ keys: [key], problem: { kind: 'corrupt-record', key, message: e instanceof Error ? e.message : String(e) } });
  };
  const pools: Pool[] = [];
  for (const e of poolEntries) tryDecode(e, decodePool, corrupt, (p) => pools.push(p));
  const blocks = new Map<string, Block>();
  for (const e of blockEntries) tryDecode(e, decodeBlock, corrupt, (b) => blocks.set(e.key, b));
  const handles = new Map<string, HandleRecord>();
  for (const e of handleEntries) tryDecode(e, decodeHandle, corrupt, (h) => handles.set(e.key.slice(HANDLE_PREFIX.length), h));
  const present = (key: string): boolean => !only || only.has(key);
  const nodeKeys = new Set(nodeEntries.map((e) => e.key));
  const tombstones = new Map<string, NodeTombstone>();
  for (const e of tombstoneEntries)
    tryDecode(
      e,
      (t) => decodeNodeTombstone(t.key, t.value),
      corrupt,
      (t) => tombstones.set(t.name, t),
    );
  const nodesInUse = nodeKeys.size > 0 || tombstoneEntries.length > 0;
  const affinityKeys = new Set(affinityEntries.map((e) => e.key));

  for (const [key, b] of blocks) {
    const cidr = formatPrefix(b.cidr);
    for (const [h, n] of handleCounts(b)) {
      const hk = handleKey(h);
      if (!present(hk)) continue;
      const rec = handles.get(h);
      if (!rec) {
        for (const [o, holder] of b.allocations) {
          if (holder === h) out.push({ keys: [key, hk], leak: { ip: formatAddr(addrOfOrdinal(b.cidr, o)), block: cidr, handle: h } });
        }
      } else if ((rec.blocks.get(cidr) ?? 0) !== n) {
        out.push(mismatch(h, cidr, rec.blocks.get(cidr) ?? 0, n));
      }
    }
    if (b.allocations.size > 0 && !pools.some((p) => prefixContainsPrefix(poolSpace(p), b.cidr))) {
      out.push({
        keys: [key],
        problem: { kind: 'allocation-outside-pools', key, message: `block ${cidr} holds ${b.allocations.size} allocation(s) but no pool contains it` },
      });
    }
    if (b.affinity !== null) {
      const ak = affinityKey(b.affinity, b.cidr);
      const node = b.affinity;
      const gone = tombstones.get(node);
      const keys = [key, nodeKey(node), nodeTombstoneKey(node)];
      const registered = nodeKeys.has(nodeKey(node));
      if (!registered && gone) {
        out.push({
          keys,
          problem: {
            kind: 'block-node-deleted',
            key,
            message: `block ${cidr} is affine to node "${node}", whose record was deleted (by ${gone.by} at ${gone.deletedAt}): cluster GC releases its pods' addresses and the block after its grace period`,
          },
        });
      } else if (!registered && nodesInUse) {
        out.push({
          keys,
          problem: {
            kind: 'block-node-unregistered',
            key,
            message:
              `block ${cidr} is affine to node "${node}", which has no record and no proof of deletion: cluster GC will not free it. ` +
              `If the node runs, register it (podipam node add ${node}); if it is gone, say so (podipam node delete ${node} --gone) and GC frees its blocks after its grace period, ` +
              `or free single addresses with podipam ipam release`,
          },
        });
      }
      if (present(ak) && !affinityKeys.has(ak)) {
        out.push({
          keys: [key, ak],
          problem: { kind: 'block-affinity-missing', key, message: `block ${cidr} is affine to node "${b.affinity}" but ${ak} is missing` },
        });
      }
    }
  }
  out.push(...overlapsOf(blocks));
  for (const [h, rec] of handles) {
    const hk = handleKey(h);
    if (rec.blocks.size === 0) out.push({ keys: [hk], problem: { kind: 'handle-empty', key: hk, message: `handle "${h}" holds no blocks` } });
    for (const [cidr, n] of rec.blocks) {
      const bk = blockKey(parsePrefix(cidr));
      if (!present(bk)) continue;
      const b = blocks.get(bk);
      if (!b) {
        out.push({
          keys: [hk, bk],
          problem: { kind: 'handle-block-missing', key: hk, message: `handle "${h}" counts ${n} address(es) in block ${cidr}, which does not exist` },
        });
      } else if (!handleCounts(b).has(h)) {
        out.push(mismatch(h, cidr, n, 0));
      }
    }
  }
  for (const e of affinityEntries) {
    const a = parseAffinityKey(e.key);
    if (!a) continue;
    tryDecode(e, decodeAffinity, corrupt, (aff) => {
      if (aff.state !== 'confirmed') {
        out.push({
          keys: [e.key],
          problem: { kind: 'affinity-not-confirmed', key: e.key, message: `affinity of node "${a.node}" for ${formatPrefix(a.cidr)} is ${aff.state}` },
        });
      }
    });
    const bk = blockKey(a.cidr);
    if (!present(bk)) continue;
    const b = blocks.get(bk);
    if (!b || b.affinity !== a.node) {
      out.push({
        keys: [e.key, bk],
        problem: {
          kind: 'affinity-block-missing',
          key: e.key,
          message: `affinity of node "${a.node}" for ${formatPrefix(a.cidr)} has ${b ? `a block affine to ${b.affinity === null ? 'no node' : `"${b.affinity}"`}` : 'no block'}`,
        },
      });
    }
  }
  return out;
}

/**
 * Pairs of overlapping blocks. Prefixes overlap only by containment, so in address order
 * (larger first at one base) a block overlaps exactly when it starts inside the last block
 * that covers the furthest.
 */
function overlapsOf(blocks: ReadonlyMap<string, Block>): Finding[] {
  const out: Finding[] = [];
  const end = (p: Prefix): bigint => p.base + (1n << BigInt(familyBits(p.family) - p.len)) - 1n;
  const sorted = [...blocks].sort(
    ([, a], [, b]) => a.cidr.family - b.cidr.family || (a.cidr.base < b.cidr.base ? -1 : a.cidr.base > b.cidr.base ? 1 : a.cidr.len - b.cidr.len),
  );
  let cover: [string, Block] | undefined;
  for (const kb of sorted) {
    const [key, b] = kb;
    if (cover && cover[1].cidr.family === b.cidr.family && b.cidr.base <= end(cover[1].cidr)) {
      const a = cover[1];
      out.push({
        keys: [cover[0], key],
        problem: {
          kind: 'block-overlap',
          key,
          message: `block ${formatPrefix(b.cidr)} (${b.affinity === null ? 'no node' : `node "${b.affinity}"`}, ${b.allocations.size} allocated) overlaps block ${formatPrefix(a.cidr)} (${a.affinity === null ? 'no node' : `node "${a.affinity}"`}, ${a.allocations.size} allocated)`,
        },
      });
      if (end(b.cidr) <= end(a.cidr)) continue;
    }
    cover = kb;
  }
  return out;
}

function mismatch(h: string, cidr: string, recorded: number, actual: number): Finding {
  const hk = handleKey(h);
  const prefix: Prefix = parsePrefix(cidr);
  return {
    keys: [hk, blockKey(prefix)],
    problem: { kind: 'handle-count-mismatch', key: hk, message: `handle "${h}" counts ${recorded} address(es) in block ${cidr}, the block holds ${actual}` },
  };
}

function tryDecode<T>(e: Entry, decode: (e: Entry) => T, corrupt: (key: string, err: unknown) => void, use: (v: T) => void): void {
  let v: T;
  try {
    v = decode(e);
  } catch (err) {
    corrupt(e.key, err);
    return;
  }
  use(v);
}
