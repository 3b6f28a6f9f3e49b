import { type Addr, compareAddr, formatAddr } from './addr.js';
import { type Prefix, prefixFirst, prefixLast } from './prefix.js';

/** An inclusive range of addresses of one family. */
export interface IpRange {
  readonly start: Addr;
  readonly end: Addr;
}

export function rangeOf(start: Addr, end: Addr): IpRange {
  if (start.family !== end.family) throw new TypeError(`range ${formatAddr(start)}-${formatAddr(end)} mixes address families`);
  if (compareAddr(start, end) > 0) throw new RangeError(`range start ${formatAddr(start)} is after its end ${formatAddr(end)}`);
  return { start, end };
}

export function rangeFromPrefix(p: Prefix): IpRange {
  return { start: prefixFirst(p), end: prefixLast(p) };
}

export function rangeContains(r: IpRange, a: Addr): boolean {
  return a.family === r.start.family && a.value >= r.start.value && a.value <= r.end.value;
}

export function rangesOverlap(a: IpRange, b: IpRange): boolean {
  return a.start.family === b.start.family && a.start.value <= b.end.value && b.start.value <= a.end.value;
}

export function rangeSize(r: IpRange): bigint {
  return r.end.value - r.start.value + 1n;
}

/** "start-end", the form host-local prints in its errors. */
export function formatRange(r: IpRange): string {
  return `${formatAddr(r.start)}-${formatAddr(r.end)}`;
}

/** Every address of the range in order (bounded by the range itself). */
export function* rangeAddrs(r: IpRange): Generator<Addr> {
  for (let v = r.start.value; v <= r.end.value; v++) yield { family: r.start.family, value: v };
}

/**
 * A set of addresses kept as sorted, disjoint, non-adjacent ranges (per family): for
 * reservations, exclusions and overlap checks. Immutable: `add` returns a new set.
 */
export class IpRangeSet {
  readonly ranges: readonly IpRange[];

  constructor(ranges: readonly IpRange[] = []) {
    const sorted = [...ranges].sort((a, b) => compareAddr(a.start, b.start));
    const out: IpRange[] = [];
    for (const r of sorted) {
      const last = out[out.length - 1];
      if (last && last.start.family === r.start.family && r.start.value <= last.end.value + 1n) {
        if (r.end.value > last.end.value) out[out.length - 1] = { start: last.start, end: r.end };
      } else {
        out.push(r);
      }
    }
    this.ranges = out;
  }

  add(r: IpRange): IpRangeSet {
    return new IpRangeSet([...this.ranges, r]);
  }

  contains(a: Addr): boolean {
    // Binary search over the sorted ranges.
    let lo = 0;
    let hi = this.ranges.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const r = this.ranges[mid]!;
      if (compareAddr(a, r.start) < 0) hi = mid - 1;
      else if (compareAddr(a, r.end) > 0) lo = mid + 1;
      else return true;
    }
    return false;
  }

  overlaps(r: IpRange): boolean {
    return this.ranges.some((x) => rangesOverlap(x, r));
  }

  /** Total number of addresses. */
  size(): bigint {
    return this.ranges.reduce((n, r) => n + rangeSize(r), 0n);
  }

  *addrs(): Generator<Addr> {
    for (const r of this.ranges) yield* rangeAddrs(r);
  }
}
