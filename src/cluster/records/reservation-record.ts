/**
 * Reservations (`reservations/<name>`): CIDRs never handed out by auto-assignment or by a
 * specific request. Existing allocations inside them are kept (as Calico's IPReservation).
 */
import { IpRangeSet, type Prefix, formatPrefix, parseAddr, parsePrefix, prefixOf, rangeFromPrefix } from '../../ip/index.js';
import type { Entry } from '../../store/index.js';
import { CorruptRecordError } from './errors.js';
import { RESERVATION_PREFIX } from './keys.js';
import { parseRecord } from './record-json.js';

/** Most addresses or CIDRs one reservation names (its record stays small; more reservations for more). */
export const MAX_RESERVATION_CIDRS = 256;

export interface Reservation {
  readonly name: string;
  readonly cidrs: readonly Prefix[];
}

/** Parses "10.0.0.5" (one address) or a CIDR; TypeError naming the value. */
export function parseReservedCidr(text: string): Prefix {
  if (typeof text === 'string' && !text.includes('/')) {
    try {
      const a = parseAddr(text);
      return prefixOf(a, a.family === 4 ? 32 : 128);
    } catch {
      /* fall through to the CIDR message */
    }
  }
  try {
    return parsePrefix(text);
  } catch (e) {
    throw new TypeError(`invalid reserved cidr ${JSON.stringify(text)}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
}

export function encodeReservation(r: Reservation): string {
  return JSON.stringify({ cidrs: r.cidrs.map(formatPrefix) });
}

export function decodeReservation(entry: Entry): Reservation {
  const o = parseRecord(entry);
  if (!Array.isArray(o.cidrs)) throw new CorruptRecordError(entry.key, 'field "cidrs" is not an array');
  const cidrs = o.cidrs.map((c) => {
    try {
      return parseReservedCidr(c as string);
    } catch (e) {
      throw new CorruptRecordError(entry.key, (e as Error).message, { cause: e });
    }
  });
  return { name: entry.key.slice(RESERVATION_PREFIX.length), cidrs };
}

/** All reserved CIDRs as one range set. */
export function reservedSet(rs: readonly Reservation[]): IpRangeSet {
  return new IpRangeSet(rs.flatMap((r) => r.cidrs.map(rangeFromPrefix)));
}
