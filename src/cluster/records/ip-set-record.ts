/**
 * IP sets (`ipsets/<name>`): fixed lists of addresses of one pool, reserved for the pods that
 * name the set (annotation `podipam.io/ip-set`). A set's addresses are never handed out by
 * auto-assignment nor to a specific request; each request naming the set takes the lowest free
 * one. The record: `{"pool": "NAME", "ranges": ["10.0.0.5-10.0.0.9", "10.0.0.20"]}`.
 */
import {
  type Addr,
  type IpRange,
  IpRangeSet,
  type Prefix,
  familyBits,
  formatAddr,
  parseAddr,
  parsePrefix,
  prefixOf,
  rangeFromPrefix,
  rangeOf,
} from '../../ip/index.js';
import type { Entry } from '../../store/index.js';
import { CorruptRecordError } from './errors.js';
import { IPSET_PREFIX } from './keys.js';
import { parseRecord, str } from './record-json.js';

/** Most addresses one set may hold (every ADD naming it reads the blocks holding them). */
export const MAX_IP_SET_SIZE = 1024;

export interface IpSet {
  readonly name: string;
  readonly pool: string;
  /** Sorted, disjoint, non-adjacent. */
  readonly addrs: IpRangeSet;
}

/** "10.0.0.5-10.0.0.9", "10.0.0.0/29" or "10.0.0.5" → a range; TypeError naming the value. */
export function parseIpSetRange(text: string): IpRange {
  const bad = (why: string): never => {
    throw new TypeError(`invalid ip-set address ${JSON.stringify(text)}: ${why} (give ADDR, ADDR-ADDR or a CIDR)`);
  };
  if (typeof text !== 'string' || text.trim() === '') return bad('empty');
  const t = text.trim();
  try {
    if (t.includes('/')) return rangeFromPrefix(parsePrefix(t));
    const dash = t.indexOf('-');
    if (dash < 0) {
      const a = parseAddr(t);
      return rangeOf(a, a);
    }
    const a = parseAddr(t.slice(0, dash).trim());
    const b = parseAddr(t.slice(dash + 1).trim());
    if (a.family !== b.family) return bad('the two ends are of different families');
    if (b.value < a.value) return bad('the range ends before it starts');
    return rangeOf(a, b);
  } catch (e) {
    if (e instanceof TypeError && e.message.startsWith('invalid ip-set address')) throw e;
    return bad(e instanceof Error ? e.message : String(e));
  }
}

/** "10.0.0.5-10.0.0.9", or "10.0.0.5" for one address. */
export function formatIpSetRange(r: IpRange): string {
  return r.start.value === r.end.value ? formatAddr(r.start) : `${formatAddr(r.start)}-${formatAddr(r.end)}`;
}

export function encodeIpSet(s: IpSet): string {
  return JSON.stringify({ pool: s.pool, ranges: s.addrs.ranges.map(formatIpSetRange) });
}

export function decodeIpSet(entry: Entry): IpSet {
  const o = parseRecord(entry);
  const pool = str(entry.key, o, 'pool');
  if (!Array.isArray(o.ranges) || o.ranges.length === 0) throw new CorruptRecordError(entry.key, 'field "ranges" is not a non-empty array');
  const ranges = o.ranges.map((r) => {
    try {
      return parseIpSetRange(r as string);
    } catch (e) {
      throw new CorruptRecordError(entry.key, (e as Error).message, { cause: e });
    }
  });
  const addrs = new IpRangeSet(ranges);
  const families = new Set(addrs.ranges.map((r) => r.start.family));
  if (families.size > 1) throw new CorruptRecordError(entry.key, 'its ranges mix IPv4 and IPv6');
  return { name: entry.key.slice(IPSET_PREFIX.length), pool, addrs };
}

/** Every set's addresses as one range set. */
export function ipSetAddrs(sets: readonly IpSet[]): IpRangeSet {
  return new IpRangeSet(sets.flatMap((s) => s.addrs.ranges));
}

/** The set holding `a`, if any. */
export function ipSetOf(sets: readonly IpSet[], a: Addr): IpSet | undefined {
  return sets.find((s) => s.addrs.contains(a));
}

/** Most blocks one set may span (each is compared by the txns that create or delete it). */
export const MAX_IP_SET_BLOCKS = 100;

/** The blocks (of a pool cut into /`blockSize`) that hold the set's addresses, in address order. */
export function ipSetBlocks(addrs: IpRangeSet, blockSize: number): Prefix[] {
  const out: Prefix[] = [];
  for (const r of addrs.ranges) {
    const step = 1n << BigInt(familyBits(r.start.family) - blockSize);
    for (let v = prefixOf(r.start, blockSize).base; v <= r.end.value; v += step) {
      const cidr = prefixOf({ family: r.start.family, value: v }, blockSize);
      if (!out.some((p) => p.base === cidr.base && p.family === cidr.family)) out.push(cidr);
    }
  }
  return out;
}
