/**
 * The pure half of checkIpam (check.ts): every inconsistency among given pool, node, tombstone,
 * block, handle and affinity records, each with the keys a re-check must read to confirm it.
 * A record that does not decode is a `corrupt-record` problem, never an exception.
 */
import { type Block, addrOfOrdinal, handleCounts } from '../../alloc/block.js';
import { familyBits, formatAddr, formatPrefix, parsePrefix, prefixContainsPrefix, type Prefix } from '../../ip/index.js';
import { type Entry } from '../../store/index.js';
import { nodeKey } from '../../model/node-record.js';
import { decodeNodeTombstone, nodeTombstoneKey, type NodeTombstone } from '../../model/node-tombstone.js';
import {
  decodeAffinity,
  decodeBlock,
  decodeHandle,
  type HandleRecord,
  AFFINITY_PREFIX,
  BLOCK_PREFIX,
  HANDLE_PREFIX,
  affinityKey,
  blockKey,
  handleKey,
  parseAffinityKey,
  type Pool,
  decodePool,
  poolSpace,
} from '../records/index.js';
import type { Leak, Problem } from './check-report.js';

/** One finding: a leak or a problem, and the keys its re-check reads. */
export interface Finding {
  readonly keys: readonly string[];
  readonly leak?: Leak;
  readonly problem?: Problem;
}

export interface ScanInput {
  readonly poolEntries: readonly Entry[];
  readonly nodeEntries: readonly Entry[];
  readonly tombstoneEntries: readonly Entry[];
  /** Block, handle and affinity entries. */
  readonly records: readonly Entry[];
  /** When re-checking: the keys that were read (a key absent from this map was not read, so says nothing). */
  readonly only?: ReadonlyMap<string, Entry | undefined>;
}

/** Finds every inconsistency among the given records (pure). */
export function scanFindings({ poolEntries, nodeEntries, tombstoneEntries, records, only }: ScanInput): Finding[] {
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

/** Decodes `e` and hands it to `use`; a record that does not decode goes to `corrupt` instead. */
export function tryDecode<T>(e: Entry, decode: (e: Entry) => T, corrupt: (key: string, err: unknown) => void, use: (v: T) => void): void {
  let v: T;
  try {
    v = decode(e);
  } catch (err) {
    corrupt(e.key, err);
    return;
  }
  use(v);
}
