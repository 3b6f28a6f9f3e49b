/**
 * host-local's allocation logic, pure: which address a range set hands out next. Round robin
 * from the last reserved address, so a crash-looping container does not get the same address
 * back until the whole pool has been walked (and a released address is not reused while the
 * network may still route to its old owner). No I/O: the caller says what is taken.
 */
// Direct imports, not ../ip/index.js: the CNI plugin loads this per pod and every module costs start-up time.
import { type Addr, addrEquals, formatAddr } from '../ip/addr.js';
import { type Prefix, prefixContains } from '../ip/prefix.js';

/** One range of a range set, canonicalised (every field filled in, as host-local's Canonicalize). */
export interface AllocRange {
  readonly subnet: Prefix;
  /** First address handed out, inclusive. */
  readonly rangeStart: Addr;
  /** Last address handed out, inclusive; rangeStart <= rangeEnd. */
  readonly rangeEnd: Addr;
  /** Never handed out; reported as the gateway of addresses from this range. */
  readonly gateway: Addr;
}

/** Ranges that form one pool; one address is allocated per set. Non-empty, one family. */
export type AllocRangeSet = readonly AllocRange[];

/** A candidate address and the index of the range (in its set) it belongs to. */
export interface Candidate {
  readonly addr: Addr;
  readonly range: number;
}

/** host-local `Range.Contains`: in the subnet and within [rangeStart, rangeEnd]. */
export function rangeHas(r: AllocRange, a: Addr): boolean {
  return prefixContains(r.subnet, a) && a.value >= r.rangeStart.value && a.value <= r.rangeEnd.value;
}

/** Index of the range of `set` holding `a`, or -1. */
export function rangeIndexOf(set: AllocRangeSet, a: Addr): number {
  return set.findIndex((r) => rangeHas(r, a));
}

/** "start-end[,start-end…]", the form host-local's messages print. */
export function formatRangeSet(set: AllocRangeSet): string {
  return set.map((r) => `${formatAddr(r.rangeStart)}-${formatAddr(r.rangeEnd)}`).join(',');
}

/** True when the two ranges share an address. */
export function allocRangesOverlap(a: AllocRange, b: AllocRange): boolean {
  return a.rangeStart.family === b.rangeStart.family && a.rangeStart.value <= b.rangeEnd.value && b.rangeStart.value <= a.rangeEnd.value;
}

/** True when any range of `a` overlaps any range of `b`. */
export function rangeSetsOverlap(a: AllocRangeSet, b: AllocRangeSet): boolean {
  return a.some((x) => b.some((y) => allocRangesOverlap(x, y)));
}

/**
 * Every allocatable address of `set` once, in host-local's order (its `RangeIter`): from the
 * address after `last` when `last` lies in the set, else from the first range's start; up to
 * each range's end, then on to the next range's start, wrapping from the last range to the
 * first; each range's gateway skipped. Ends when the walk is back at its first address.
 */
export function* candidates(set: AllocRangeSet, last?: Addr): Generator<Candidate> {
  if (set.length === 0) return;
  let idx = 0;
  let cur: Addr | undefined;
  let start: Addr | undefined;
  const lastIdx = last ? rangeIndexOf(set, last) : -1;
  if (lastIdx >= 0) {
    idx = lastIdx;
    cur = last;
  }
  for (;;) {
    let r = set[idx]!;
    if (cur === undefined) {
      cur = r.rangeStart;
      start = cur;
    } else {
      if (addrEquals(cur, r.rangeEnd)) {
        idx = (idx + 1) % set.length;
        r = set[idx]!;
        cur = r.rangeStart;
      } else {
        cur = { family: cur.family, value: cur.value + 1n };
      }
      if (start === undefined) start = cur;
      else if (addrEquals(cur, start)) return;
    }
    if (!addrEquals(cur, r.gateway)) yield { addr: cur, range: idx };
  }
}

/** The first candidate (see `candidates`) that `isTaken` rejects not, or undefined: exhausted. */
export function nextFree(set: AllocRangeSet, last: Addr | undefined, isTaken: (a: Addr) => boolean): Candidate | undefined {
  for (const c of candidates(set, last)) {
    if (!isTaken(c.addr)) return c;
  }
  return undefined;
}

/** Why a requested address cannot come from a set, or the range it comes from. */
export type RequestCheck = { readonly ok: true; readonly range: number } | { readonly ok: false; readonly reason: 'outside' | 'gateway' };

/** host-local's checks on a specific-IP request: inside a range of the set, not its gateway. */
export function checkRequested(set: AllocRangeSet, a: Addr): RequestCheck {
  const i = rangeIndexOf(set, a);
  if (i < 0) return { ok: false, reason: 'outside' };
  if (addrEquals(a, set[i]!.gateway)) return { ok: false, reason: 'gateway' };
  return { ok: true, range: i };
}

/**
 * True when no candidate of `set` is free, given every taken address (the addresses outside
 * the set are ignored, duplicates counted once). Counts instead of walking, so it is cheap for
 * large IPv6 ranges.
 */
export function isExhausted(set: AllocRangeSet, taken: Iterable<Addr>): boolean {
  const used = set.map(() => new Set<bigint>());
  for (const a of taken) {
    const i = rangeIndexOf(set, a);
    if (i >= 0 && !addrEquals(a, set[i]!.gateway)) used[i]!.add(a.value);
  }
  return set.every((r, i) => {
    const size = r.rangeEnd.value - r.rangeStart.value + 1n;
    const allocatable = rangeHas(r, r.gateway) ? size - 1n : size;
    return BigInt(used[i]!.size) >= allocatable;
  });
}
