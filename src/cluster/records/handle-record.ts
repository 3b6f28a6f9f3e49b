/**
 * Handles (`handles/<handle>`): who holds addresses, and in which blocks, so that release by
 * handle reads one record instead of scanning blocks. Written in the same transaction as the
 * blocks it counts, so the two never disagree.
 */
import { formatPrefix, parsePrefix } from '../../ip/index.js';
import type { Entry } from '../../store/index.js';
import { CorruptRecordError } from './errors.js';
import { obj, optStr, orCorrupt, parseRecord, str } from './record-json.js';

/** Who a handle belongs to (informational, and GC's filter). */
export interface HandleAttrs {
  /** The node whose pod holds the addresses (not necessarily the block's node, when borrowing). */
  readonly node: string;
  readonly network?: string;
  readonly containerId?: string;
  readonly ifname?: string;
  /** The pod holding the addresses (CNI_ARGS K8S_POD_NAMESPACE / K8S_POD_NAME / K8S_POD_UID), when the runtime named it. */
  readonly namespace?: string;
  readonly pod?: string;
  readonly podUid?: string;
  /**
   * Set on a sticky hold only (src/cluster/txn/sticky-hold.ts): the addresses a sticky pod's DEL kept
   * for its namespace/name, held until this time (ISO), then released by `podipam serve`'s GC.
   */
  readonly stickyUntil?: string;
  /**
   * When the record was created (ISO, the writer's clock): the allocation's age, which runtime
   * reconciliation (src/reconcile) needs before a missing sandbox proves anything. Absent on
   * records written before it was recorded (then the age is unknown).
   */
  readonly since?: string;
}

export interface HandleRecord extends HandleAttrs {
  /** Block CIDR (canonical text) → number of addresses the handle holds in it (> 0). */
  readonly blocks: ReadonlyMap<string, number>;
}

export function encodeHandle(h: HandleRecord): string {
  const o: Record<string, unknown> = { node: h.node };
  if (h.network !== undefined) o.network = h.network;
  if (h.containerId !== undefined) o.containerId = h.containerId;
  if (h.ifname !== undefined) o.ifname = h.ifname;
  if (h.namespace !== undefined) o.namespace = h.namespace;
  if (h.pod !== undefined) o.pod = h.pod;
  if (h.podUid !== undefined) o.podUid = h.podUid;
  if (h.stickyUntil !== undefined) o.stickyUntil = h.stickyUntil;
  if (h.since !== undefined) o.since = h.since;
  o.blocks = Object.fromEntries([...h.blocks].sort((a, b) => (a[0] < b[0] ? -1 : 1)));
  return JSON.stringify(o);
}

export function decodeHandle(entry: Entry): HandleRecord {
  const o = parseRecord(entry);
  const blocks = new Map<string, number>();
  for (const [cidr, n] of Object.entries(obj(entry.key, o, 'blocks'))) {
    const canonical = orCorrupt(entry.key, () => formatPrefix(parsePrefix(cidr)));
    if (canonical !== cidr) throw new CorruptRecordError(entry.key, `block ${JSON.stringify(cidr)} is not canonical`);
    if (typeof n !== 'number' || !Number.isInteger(n) || n <= 0) throw new CorruptRecordError(entry.key, `count for ${cidr} is ${JSON.stringify(n)}`);
    blocks.set(cidr, n);
  }
  return {
    node: str(entry.key, o, 'node'),
    network: optStr(entry.key, o, 'network'),
    containerId: optStr(entry.key, o, 'containerId'),
    ifname: optStr(entry.key, o, 'ifname'),
    ...podFields(entry.key, o),
    ...stickyField(entry.key, o),
    ...sinceField(entry.key, o),
    blocks,
  };
}

/** The record with `delta` added to the count of each block (counts reaching 0 are dropped). */
export function adjustHandle(h: HandleRecord, delta: ReadonlyMap<string, number>): HandleRecord {
  const blocks = new Map(h.blocks);
  for (const [cidr, d] of delta) {
    const n = (blocks.get(cidr) ?? 0) + d;
    if (n > 0) blocks.set(cidr, n);
    else blocks.delete(cidr);
  }
  return { ...h, blocks };
}

/** The pod fields present in a record (absent ones stay absent, so a re-encoded record is unchanged). */
function podFields(key: string, o: Record<string, unknown>): Pick<HandleAttrs, 'namespace' | 'pod' | 'podUid'> {
  const out: { namespace?: string; pod?: string; podUid?: string } = {};
  for (const f of ['namespace', 'pod', 'podUid'] as const) {
    const v = optStr(key, o, f);
    if (v !== undefined) out[f] = v;
  }
  return out;
}

/** `stickyUntil` when present: a valid ISO time, else the record is corrupt. */
function stickyField(key: string, o: Record<string, unknown>): Pick<HandleAttrs, 'stickyUntil'> {
  const v = optStr(key, o, 'stickyUntil');
  if (v === undefined) return {};
  if (Number.isNaN(Date.parse(v))) throw new CorruptRecordError(key, `stickyUntil ${JSON.stringify(v)} is not a time`);
  return { stickyUntil: v };
}

/** `since` when present: a valid ISO time, else the record is corrupt. */
function sinceField(key: string, o: Record<string, unknown>): Pick<HandleAttrs, 'since'> {
  const v = optStr(key, o, 'since');
  if (v === undefined) return {};
  if (Number.isNaN(Date.parse(v))) throw new CorruptRecordError(key, `since ${JSON.stringify(v)} is not a time`);
  return { since: v };
}
