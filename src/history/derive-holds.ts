/**
 * From the datastore's change stream to holds (pure: no I/O). `HoldState` is what the follower
 * knows between revisions — the open holds (address → holder), the handle records' attributes
 * and the pools — and turns each revision's WatchEvents into the hold ends and starts they mean,
 * timed by the revision's stamp (`stamps/<writer>`, src/cluster/records/history-stamp.ts). The rules are
 * stated in src/history/README.md ("How changes become holds").
 *
 * - Block records say which handle holds each ordinal: an ordinal that appears starts a hold, one
 *   that disappears ends it, one whose handle changes ends one and starts another; a deleted block
 *   ends every hold in it.
 * - Warm-pool handles and sticky holds are held by nobody. A warm pool's pod holds what its pod
 *   record (`agent-pods/<node>/<attachment>`) names, from its `since`; the record's delete ends it
 *   (at the stamp's per-key time), and a put the write-behind folded away (the stamp's
 *   `keys[key].value`) is a hold that began and ended. A warm handle's ordinal freed under a pod's
 *   hold ends that hold.
 * - A relist (the change stream was lost) compares a full listing with the open holds.
 */
import { decodeBlock } from '../cluster/records/index.js';
import { decodeHandle, type HandleAttrs } from '../cluster/records/index.js';
import { decodeStamp, STAMP_PREFIX, type Stamp } from '../cluster/records/index.js';
import { BLOCK_PREFIX, HANDLE_PREFIX, parseBlockKey, POOL_PREFIX } from '../cluster/records/index.js';
import { decodePool, type Pool } from '../cluster/records/index.js';
import { type Addr, formatAddr, formatPrefix, prefixContains, prefixOf, type Prefix, tryParseAddr } from '../ip/index.js';
import type { HistoryTime, Hold, HolderInfo, ReleaseEvidence, ReleaseReason } from '../model/history.js';
import type { PodRef } from '../model/pod-ref.js';
import { isWarmHandle } from '../model/reserved-network.js';
import { parseWarmPodRecordKey, POD_RECORD_PREFIX, tryDecodeWarmPodRecord } from '../model/warm-pod-record.js';
import type { Entry, WatchEvent } from '../store/index.js';
import type { HoldEnd, HoldStart } from './history-db.js';

/** What one revision (or a relist) meant. */
export interface DerivedChanges {
  readonly ends: HoldEnd[];
  readonly starts: HoldStart[];
  /**
   * Holds that began and ended within this revision (a warm pod's record folded away by the
   * write-behind): each pair's start must be applied before its end, unlike `starts`/`ends`.
   */
  readonly pairs: { readonly start: HoldStart; readonly end: HoldEnd }[];
  /** The revision's time: its stamp's `at`, else the follower's seen time. */
  readonly at: number;
  /** What the next revision is known to follow: `at` when stamped, else the `earliest` this revision was given. */
  readonly after: number;
  /** Records that did not decode (skipped; the follower logs them). */
  readonly problems: string[];
}

/** Sticky holds' handle ids start so (src/cluster/records/sticky-hold-id.ts); the record's stickyUntil is the real test. */
const STICKY_ID_PREFIX = 'sticky:';

interface PodRecord {
  readonly node: string;
  readonly handle: string;
  readonly addrs: readonly string[];
  readonly since: number | undefined;
  readonly info: Omit<HolderInfo, 'address' | 'handle' | 'pool' | 'block'>;
}

/** The state of the follower between revisions: open holds and the caches the derivation reads. */
export class HoldState {
  readonly #byAddress = new Map<string, Hold>();
  readonly #byHandle = new Map<string, Set<string>>();
  /** Block (canonical CIDR) → addresses of the open holds in it; '' for holds whose block is not known. */
  readonly #byBlock = new Map<string, Set<string>>();
  readonly #attrs = new Map<string, HandleAttrs>();
  #pools: Pool[] = [];

  /** `open`: the history store's open holds (after a restart); `pools`: the `pools/` entries. */
  constructor(open: readonly Hold[] = [], pools: readonly Entry[] = []) {
    for (const h of open) this.#open(h);
    this.#pools = decodePools(pools, []);
  }

  /** The open holds, by address. */
  openHolds(): Hold[] {
    return [...this.#byAddress.values()];
  }

  holdOf(address: string): Hold | undefined {
    return this.#byAddress.get(address);
  }

  get size(): number {
    return this.#byAddress.size;
  }

  /**
   * One revision's events (all with the same modRevision). `seenAt`: when the follower read it;
   * `earliest`: the time of the previous position (a revision without a stamp happened after it).
   */
  applyRevision(events: readonly WatchEvent[], seenAt: number, earliest: number): DerivedChanges {
    const problems: string[] = [];
    const out: DerivedChanges = { ends: [], starts: [], pairs: [], at: seenAt, after: earliest, problems };
    let stamp: Stamp | undefined;
    for (const e of events) {
      if (e.type !== 'put' || !e.key.startsWith(STAMP_PREFIX) || stamp) continue;
      try {
        stamp = decodeStamp(e.key, e.value);
      } catch (err) {
        problems.push((err as Error).message);
      }
    }
    // With a stamp: the writer's time, exact. Without: after the previous position, by the time the follower saw it.
    const at = stamp ? stamp.at : Math.max(seenAt, earliest);
    const time: HistoryTime = stamp || !(earliest < at) ? { at } : { at, earliest };
    const why: ReleaseReason = stamp ? (stamp.why ?? 'del') : 'unknown';
    const evidence = stamp?.evidence;
    Object.assign(out, { at, after: stamp ? at : earliest });

    const revAttrs = new Map<string, HandleAttrs>();
    const deletedHandles: string[] = [];
    for (const e of events) {
      if (e.key.startsWith(POOL_PREFIX)) {
        this.#pools = this.#pools.filter((p) => `${POOL_PREFIX}${p.name}` !== e.key);
        if (e.type === 'put') this.#pools.push(...decodePools([entryOf(e)], problems));
      } else if (e.key.startsWith(HANDLE_PREFIX)) {
        const handle = e.key.slice(HANDLE_PREFIX.length);
        if (e.type === 'delete') deletedHandles.push(handle);
        else {
          try {
            revAttrs.set(handle, decodeHandle(entryOf(e)));
          } catch (err) {
            problems.push((err as Error).message);
          }
        }
      }
    }
    for (const [h, a] of revAttrs) this.#attrs.set(h, attrsOnly(a));

    // Pod records deleted: their holds end (at the stamp's per-key time when it has one).
    for (const e of events) {
      if (e.type !== 'delete' || !e.key.startsWith(POD_RECORD_PREFIX)) continue;
      const ref = parseWarmPodRecordKey(e.key);
      if (!ref) continue;
      const k = stamp?.keys?.[e.key];
      const until: HistoryTime = k ? { at: k.at } : time;
      for (const addr of this.#addressesOf(ref.attachment, ref.node)) this.#end(out.ends, addr, until, k ? k.why : why, k ? k.evidence : evidence);
    }

    // Blocks: diff each block's allocations against the open holds of its addresses.
    for (const e of events) {
      if (!e.key.startsWith(BLOCK_PREFIX)) continue;
      if (e.type === 'delete') {
        const cidr = parseBlockKey(e.key);
        if (cidr) this.#diffBlock(cidr, new Map(), null, revAttrs, time, why, out, evidence);
        continue;
      }
      let block;
      try {
        block = decodeBlock(entryOf(e));
      } catch (err) {
        problems.push((err as Error).message);
        continue;
      }
      this.#diffBlock(block.cidr, block.allocations, block.affinity, revAttrs, time, why, out, evidence);
    }

    // Pod records put: the pod holds what its record names, from `since`.
    for (const e of events) {
      if (e.type !== 'put' || !e.key.startsWith(POD_RECORD_PREFIX)) continue;
      const rec = parsePodRecord(e.key, e.value, problems);
      if (!rec) continue;
      // A put after a delete in one write-behind batch: the record's earlier value ended at the delete.
      const k = stamp?.keys?.[e.key];
      if (k) for (const addr of this.#addressesOf(rec.handle, rec.node)) this.#end(out.ends, addr, { at: k.at }, k.why, k.evidence);
      const named = new Set(rec.addrs);
      for (const addr of this.#addressesOf(rec.handle, rec.node)) if (!named.has(addr)) this.#end(out.ends, addr, time, why);
      const from: HistoryTime = rec.since !== undefined ? { at: rec.since } : time;
      for (const addr of rec.addrs) {
        const cur = this.#byAddress.get(addr);
        if (cur?.handle === rec.handle) continue;
        if (cur) this.#end(out.ends, addr, from.at >= time.at ? from : time, 'unknown');
        out.starts.push(this.#start(this.#podHolder(rec, addr), from));
      }
    }

    // A pod record the write-behind folded away (ADD then DEL before its flush): a hold that began and ended.
    for (const [key, k] of Object.entries(stamp?.keys ?? {})) {
      if (k.value === undefined) continue;
      const rec = parsePodRecord(key, k.value, problems);
      if (!rec) continue;
      for (const addr of rec.addrs) {
        const start: HoldStart = { ...this.#podHolder(rec, addr), from: rec.since !== undefined ? { at: rec.since } : { at: k.at } };
        out.pairs.push({ start, end: { address: addr, handle: rec.handle, until: { at: k.at }, why: k.why, ...(k.evidence ? { evidence: k.evidence } : {}) } });
      }
    }

    for (const h of deletedHandles) if (!revAttrs.has(h)) this.#attrs.delete(h);
    return out;
  }

  /**
   * A full listing replaces the change stream that was lost: every difference between the holds
   * it shows and the open ones is an end or start at `time` (known only to lie in the gap), except
   * a warm pod's start, whose record states it exactly (`since`). Replaces the caches.
   */
  relist(entries: readonly Entry[], time: HistoryTime): DerivedChanges {
    const problems: string[] = [];
    const out: DerivedChanges = { ends: [], starts: [], pairs: [], at: time.at, after: time.at, problems };
    const want = snapshotHolds(entries, problems);
    this.#attrs.clear();
    for (const [h, a] of want.attrs) this.#attrs.set(h, a);
    this.#pools = want.pools;
    for (const [addr, cur] of [...this.#byAddress]) {
      if (want.holds.get(addr)?.info.handle !== cur.handle) this.#end(out.ends, addr, time, 'unknown');
    }
    for (const [addr, h] of want.holds) {
      if (this.#byAddress.has(addr)) continue;
      out.starts.push(this.#start(h.info, h.exact !== undefined ? { at: h.exact } : time));
    }
    return out;
  }

  #diffBlock(
    cidr: Prefix,
    allocations: ReadonlyMap<number, string>,
    affinity: string | null,
    revAttrs: ReadonlyMap<string, HandleAttrs>,
    time: HistoryTime,
    why: ReleaseReason,
    out: DerivedChanges,
    evidence?: ReleaseEvidence,
  ): void {
    const blockText = formatPrefix(cidr);
    const seen = new Set<string>();
    for (const [ord, handle] of allocations) {
      const addr = formatAddr(addrOf(cidr, ord));
      seen.add(addr);
      const cur = this.#byAddress.get(addr);
      // A warm handle's address is held by the pod whose record names it (or by nobody): leave that hold alone.
      if (isWarmHandle(handle)) continue;
      if (cur?.handle === handle) continue;
      if (cur) this.#end(out.ends, addr, time, why, evidence);
      const attrs = revAttrs.get(handle) ?? this.#attrs.get(handle);
      if (attrs?.stickyUntil !== undefined || (attrs === undefined && handle.startsWith(STICKY_ID_PREFIX))) continue; // a sticky hold: nobody's
      out.starts.push(this.#start(holderOfHandle(addr, handle, attrs, affinity, blockText, this.#poolOf(addrOf(cidr, ord))), time));
    }
    // Ordinals freed: their holds end (a warm pod's too: its address left the warm pool).
    const inBlock = [
      ...(this.#byBlock.get(blockText) ?? []),
      ...[...(this.#byBlock.get('') ?? [])].filter((addr) => {
        const a = tryParseAddr(addr);
        return a !== undefined && prefixContains(cidr, a);
      }),
    ];
    for (const addr of inBlock) if (!seen.has(addr)) this.#end(out.ends, addr, time, why, evidence);
  }

  #podHolder(rec: PodRecord, addr: string): HolderInfo {
    const a = tryParseAddr(addr);
    const pool = a ? this.#poolOf(a) : undefined;
    return { address: addr, handle: rec.handle, ...rec.info, ...(pool && a ? { pool: pool.name, block: formatPrefix(prefixOf(a, pool.blockSize)) } : {}) };
  }

  #poolOf(a: Addr): Pool | undefined {
    return this.#pools.find((p) => prefixContains(p.cidr, a));
  }

  #addressesOf(handle: string, node: string): string[] {
    return [...(this.#byHandle.get(handle) ?? [])].filter((addr) => this.#byAddress.get(addr)?.node === node);
  }

  #start(info: HolderInfo, from: HistoryTime): HoldStart {
    const s: HoldStart = { ...info, from };
    this.#open(s);
    return s;
  }

  #open(h: Hold | HoldStart): void {
    this.#byAddress.set(h.address, h);
    let set = this.#byHandle.get(h.handle);
    if (!set) this.#byHandle.set(h.handle, (set = new Set()));
    set.add(h.address);
    const b = h.block ?? '';
    let inBlock = this.#byBlock.get(b);
    if (!inBlock) this.#byBlock.set(b, (inBlock = new Set()));
    inBlock.add(h.address);
  }

  /** `evidence` goes with the end only when it names the hold's container (a stamp's proof is about one attachment). */
  #end(ends: HoldEnd[], address: string, until: HistoryTime, why: ReleaseReason, evidence?: ReleaseEvidence): void {
    const h = this.#byAddress.get(address);
    if (!h) return;
    this.#byAddress.delete(address);
    const set = this.#byHandle.get(h.handle);
    set?.delete(address);
    if (set?.size === 0) this.#byHandle.delete(h.handle);
    const inBlock = this.#byBlock.get(h.block ?? '');
    inBlock?.delete(address);
    if (inBlock?.size === 0) this.#byBlock.delete(h.block ?? '');
    const proof = evidence !== undefined && h.containerId === evidence.containerId ? evidence : undefined;
    ends.push({ address, handle: h.handle, until, why, ...(proof ? { evidence: proof } : {}) });
  }
}

/** The holds a full listing shows (address → holder; `exact`: a warm pod's `since`), with its handles' attributes and pools. */
export function snapshotHolds(
  entries: readonly Entry[],
  problems: string[] = [],
): {
  holds: Map<string, { info: HolderInfo; exact: number | undefined }>;
  attrs: Map<string, HandleAttrs>;
  pools: Pool[];
} {
  const pools = decodePools(
    entries.filter((e) => e.key.startsWith(POOL_PREFIX)),
    problems,
  );
  const attrs = new Map<string, HandleAttrs>();
  for (const e of entries) {
    if (!e.key.startsWith(HANDLE_PREFIX)) continue;
    try {
      attrs.set(e.key.slice(HANDLE_PREFIX.length), attrsOnly(decodeHandle(e)));
    } catch (err) {
      problems.push((err as Error).message);
    }
  }
  const holds = new Map<string, { info: HolderInfo; exact: number | undefined }>();
  const warm = new Map<string, string>(); // address → block, held by a warm handle
  const poolOf = (a: Addr): Pool | undefined => pools.find((p) => prefixContains(p.cidr, a));
  for (const e of entries) {
    if (!e.key.startsWith(BLOCK_PREFIX)) continue;
    let block;
    try {
      block = decodeBlock(e);
    } catch (err) {
      problems.push((err as Error).message);
      continue;
    }
    const blockText = formatPrefix(block.cidr);
    for (const [ord, handle] of block.allocations) {
      const a = addrOf(block.cidr, ord);
      const addr = formatAddr(a);
      if (isWarmHandle(handle)) {
        warm.set(addr, blockText);
        continue;
      }
      const at = attrs.get(handle);
      if (at?.stickyUntil !== undefined || (at === undefined && handle.startsWith(STICKY_ID_PREFIX))) continue;
      holds.set(addr, { info: holderOfHandle(addr, handle, at, block.affinity, blockText, poolOf(a)), exact: undefined });
    }
  }
  for (const e of entries) {
    if (!e.key.startsWith(POD_RECORD_PREFIX)) continue;
    const rec = parsePodRecord(e.key, e.value, problems);
    if (!rec) continue;
    for (const addr of rec.addrs) {
      const block = warm.get(addr);
      if (block === undefined) continue; // no longer the warm pool's: the pod's hold ended
      const a = tryParseAddr(addr);
      const pool = a ? poolOf(a) : undefined;
      holds.set(addr, { info: { address: addr, handle: rec.handle, ...rec.info, block, ...(pool ? { pool: pool.name } : {}) }, exact: rec.since });
    }
  }
  return { holds, attrs, pools };
}

/**
 * Splits a watch batch (whole revisions, in order) into its revisions: [revision, events][].
 */
export function revisionsOf(batch: readonly WatchEvent[]): [number, WatchEvent[]][] {
  const out: [number, WatchEvent[]][] = [];
  for (const e of batch) {
    const last = out[out.length - 1];
    if (last && last[0] === e.modRevision) last[1].push(e);
    else out.push([e.modRevision, [e]]);
  }
  return out;
}

function holderOfHandle(
  address: string,
  handle: string,
  attrs: HandleAttrs | undefined,
  affinity: string | null,
  block: string,
  pool: Pool | undefined,
): HolderInfo {
  const pod: PodRef | undefined =
    attrs?.namespace !== undefined && attrs.pod !== undefined
      ? { namespace: attrs.namespace, name: attrs.pod, ...(attrs.podUid !== undefined ? { uid: attrs.podUid } : {}) }
      : undefined;
  const node = attrs?.node ?? affinity ?? undefined;
  return {
    address,
    handle,
    ...(pod ? { pod } : {}),
    ...(attrs?.containerId !== undefined ? { containerId: attrs.containerId } : {}),
    ...(attrs?.ifname !== undefined ? { ifname: attrs.ifname } : {}),
    ...(attrs?.network !== undefined ? { network: attrs.network } : {}),
    ...(node !== undefined ? { node } : {}),
    ...(pool ? { pool: pool.name } : {}),
    block,
  };
}

function attrsOnly(h: HandleAttrs & { blocks?: unknown }): HandleAttrs {
  const { blocks: _blocks, ...rest } = h;
  return rest;
}

function addrOf(cidr: Prefix, ord: number): Addr {
  return { family: cidr.family, value: cidr.base + BigInt(ord) };
}

function entryOf(e: WatchEvent): Entry {
  return { key: e.key, value: e.value, rev: e.modRevision };
}

function decodePools(entries: readonly Entry[], problems: string[]): Pool[] {
  const out: Pool[] = [];
  for (const e of entries) {
    if (!e.key.startsWith(POOL_PREFIX)) continue;
    try {
      out.push(decodePool(e));
    } catch (err) {
      problems.push((err as Error).message);
    }
  }
  return out;
}

/** A pod record (src/model/warm-pod-record.ts) as the history reads it: its addresses canonical, the holder's fields; a record that does not decode is a problem. */
function parsePodRecord(key: string, value: string, problems: string[]): PodRecord | undefined {
  if (!parseWarmPodRecordKey(key)) return undefined;
  const r = tryDecodeWarmPodRecord(key, value);
  if (r instanceof Error) {
    problems.push(r.message);
    return undefined;
  }
  const addrs = r.addrs.flatMap((t) => {
    const a = tryParseAddr(t);
    return a ? [formatAddr(a)] : [];
  });
  const { namespace, name, uid, containerId, ifname, network } = r;
  return {
    node: r.node,
    handle: r.attachment,
    addrs,
    since: r.since,
    info: {
      ...(namespace !== undefined && name !== undefined ? { pod: { namespace, name, ...(uid !== undefined ? { uid } : {}) } } : {}),
      ...(containerId !== undefined ? { containerId } : {}),
      ...(ifname !== undefined ? { ifname } : {}),
      ...(network !== undefined ? { network } : {}),
      node: r.node,
    },
  };
}
