/**
 * The value checks every placement annotation shares (src/model/placement.ts and the peers'
 * annotations beside it), each throwing PlacementError (code 7) naming the annotation:
 * a value is at most MAX_PLACEMENT_BYTES bytes and a list names at most MAX_PLACEMENT_NAMES
 * entries, refused before it is split or decoded; every check is linear in the value (repeats
 * found with a set), so one pod's annotation cannot stall the other ADDs of the node agent.
 */
import { type Addr, formatAddr, formatPrefix, parsePrefix, tryParseAddr } from '../ip/index.js';
import { DNS_SUBDOMAIN, DNS_SUBDOMAIN_HINT } from './node-name.js';
import { type AnnotationSource, PlacementError } from './placement-source.js';
import { quoteText } from '../util/quote-text.js';

/** Most bytes (UTF-8) of one placement annotation's value. */
export const MAX_PLACEMENT_BYTES = 16384;

/** Most entries (pool names, CIDRs or addresses) one list-valued placement annotation names. */
export const MAX_PLACEMENT_NAMES = 64;

/** Refuses a value longer than MAX_PLACEMENT_BYTES (the message quotes only its start). */
export function checkBytes(s: AnnotationSource, pod: string): void {
  // Each UTF-16 unit is 1–3 bytes: only a value in between needs counting.
  if (s.value.length * 3 <= MAX_PLACEMENT_BYTES) return;
  const bytes = Buffer.byteLength(s.value, 'utf8');
  if (bytes > MAX_PLACEMENT_BYTES) throw new PlacementError(s, pod, `value of ${bytes} bytes is longer than the ${MAX_PLACEMENT_BYTES} bytes allowed`);
}

/** Refuses a list of more than MAX_PLACEMENT_NAMES entries. */
export function checkCount(s: AnnotationSource, pod: string, n: number): void {
  if (n > MAX_PLACEMENT_NAMES) throw new PlacementError(s, pod, `names ${n} entries; at most ${MAX_PLACEMENT_NAMES} are allowed`);
}

/** The comma-separated entries of `s.value`, trimmed; counted before splitting. */
export function commaList(s: AnnotationSource, pod: string): string[] {
  let n = 1;
  for (let i = s.value.indexOf(','); i >= 0; i = s.value.indexOf(',', i + 1)) n++;
  checkCount(s, pod, n);
  return s.value.split(',').map((t) => t.trim());
}

/** `s.value` decoded as JSON (its size was checked first); `want` describes the expected shape for the message. */
export function jsonValue(s: AnnotationSource, pod: string, want: string): unknown {
  try {
    return JSON.parse(s.value) as unknown;
  } catch {
    throw new PlacementError(s, pod, `not JSON: want ${want}`);
  }
}

/** A JSON list of strings (Calico's annotation values). */
export function jsonStrings(s: AnnotationSource, pod: string): string[] {
  const v = jsonValue(s, pod, 'a JSON list of strings such as ["a","b"]');
  return stringList(s, pod, v, 'want a JSON list of strings such as ["a","b"]');
}

/** `v` when it is a list of at most MAX_PLACEMENT_NAMES strings; else PlacementError with `problem`. */
export function stringList(s: AnnotationSource, pod: string, v: unknown, problem: string): string[] {
  if (!Array.isArray(v)) throw new PlacementError(s, pod, problem);
  checkCount(s, pod, v.length);
  if (!v.every((x) => typeof x === 'string')) throw new PlacementError(s, pod, problem);
  return v;
}

/** Pool names (and, when `cidrs`, CIDRs made canonical); at least one, no empty or repeated entry. */
export function poolList(s: AnnotationSource, pod: string, items: readonly string[], cidrs: boolean): string[] {
  if (items.length === 0 || (items.length === 1 && items[0] === '')) throw new PlacementError(s, pod, 'names no pool');
  const out: string[] = [];
  const seen = new Set<string>();
  for (const item of items) {
    let name = item;
    if (cidrs && item.includes('/')) {
      try {
        name = formatPrefix(parsePrefix(item));
      } catch (e) {
        throw new PlacementError(s, pod, `${quoteText(item)} is not a CIDR: ${(e as Error).message}`, { cause: e });
      }
    } else if (!DNS_SUBDOMAIN.test(item)) {
      throw new PlacementError(s, pod, `${quoteText(item)} is not a pool name${cidrs ? ' or CIDR' : ''}: must be ${DNS_SUBDOMAIN_HINT}`);
    }
    if (seen.has(name)) throw new PlacementError(s, pod, `names ${quoteText(item)} twice`);
    seen.add(name);
    out.push(name);
  }
  return out;
}

/** One or two addresses, at most one per family. */
export function addrList(s: AnnotationSource, pod: string, items: readonly string[]): Addr[] {
  if (items.length === 0 || (items.length === 1 && items[0] === '')) throw new PlacementError(s, pod, 'names no address');
  const out: Addr[] = [];
  for (const item of items) {
    const a = tryParseAddr(item);
    if (!a) throw new PlacementError(s, pod, `${quoteText(item)} is not an IP address`);
    const same = out.find((o) => o.family === a.family);
    if (same) throw new PlacementError(s, pod, `at most one address per family: ${formatAddr(same)} and ${formatAddr(a)} are both IPv${a.family}`);
    out.push(a);
  }
  return out;
}
