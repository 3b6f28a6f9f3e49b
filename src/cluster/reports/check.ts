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
 * cooling and sticky addresses and the pods it serves, `agent-views/<node>`, vouched for while
 * unchanged by its heartbeat `agent-beats/<node>`) and its pod records
 * are compared with the blocks and handles; an address two holders claim, an idle address the
 * datastore gives to someone else or to no one, a pod record without its block's holder are
 * `holders` findings (node, pod, container id, address), confirmed by one atomic read of the
 * records involved as above. A disagreement the agent may not have answered yet (its view is
 * old, or older than a record involved) is listed in `unsettled`, not as a finding.
 */
import { type Block, addrOfOrdinal } from '../../alloc/block.js';
import { formatAddr, formatPrefix } from '../../ip/index.js';
import { MAX_TXN_OPS, type Entry } from '../../store/index.js';
import { NODE_PREFIX, nodeKey } from '../../model/node-record.js';
import { decodeNodeTombstone, NODE_TOMBSTONE_PREFIX } from '../../model/node-tombstone.js';
import {
  decodeBlock,
  decodeHandle,
  type HandleRecord,
  AFFINITY_PREFIX,
  BLOCK_PREFIX,
  HANDLE_PREFIX,
  POOL_PREFIX,
  type Pool,
  decodePool,
  AGENT_VIEW_PREFIX,
  AGENT_BEAT_PREFIX,
} from '../records/index.js';
import { type IpamContext, readKeys } from '../views/index.js';
import { type StickyHold, stickyHoldsOf } from './sticky-holds.js';
import { listAll } from '../../store/list-all.js';
import { POD_RECORD_PREFIX } from '../../model/reserved-network.js';
import { checkHolders, type HolderFinding, type HolderInput } from './check-holders.js';
import { type EmptyOrphanBlock, emptyOrphansOf } from './empty-orphans.js';

import type { BorrowedBlock, CheckOptions, CheckReport } from './check-report.js';
import { type Finding, scanFindings, tryDecode } from './scan-findings.js';

export type { BorrowedBlock, CheckOptions, CheckReport, Leak, Problem } from './check-report.js';

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
  const first = scanFindings({ poolEntries, nodeEntries, tombstoneEntries, records: [...blockEntries, ...handleEntries, ...affinityEntries] });
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
    const again = scanFindings({
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
  // Views and heartbeats read apart: a heartbeat that names another revision than the view read vouches for nothing (vouched-view.ts).
  const [podRecords, views, beats] = await Promise.all([
    listAll(ctx.store, POD_RECORD_PREFIX),
    listAll(ctx.store, AGENT_VIEW_PREFIX),
    listAll(ctx.store, AGENT_BEAT_PREFIX),
  ]);
  const holders = await checkEveryHolder(ctx, {
    blocks: blockEntries,
    handles: handleEntries,
    podRecords,
    views,
    beats,
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
      beats: fresh(listed.beats ?? [], AGENT_BEAT_PREFIX),
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
