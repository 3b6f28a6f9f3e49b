/**
 * The stored form of an allocation block (`blocks/<cidr>`), compact JSON:
 * `{"cidr":"10.0.0.64/26","affinity":"node-a","next":3,"allocations":{"0":"net:c1:eth0"}}` —
 * only allocated ordinals are listed, so a block's size follows its use, not its capacity.
 * A block of a pool with a reuse quarantine also lists when its recently freed ordinals were
 * released (`"released":{"5":1764835200123}`, epoch ms; src/alloc/block-quarantine.ts); the
 * field is absent when empty, and a record without it (written before it existed) decodes
 * with none.
 */
import { type Block, blockCapacity } from '../../alloc/block.js';
import { formatPrefix, parsePrefix } from '../../ip/index.js';
import type { Entry } from '../../store/index.js';
import { CorruptRecordError } from './errors.js';
import { blockKey } from './keys.js';
import { int, obj, orCorrupt, parseRecord, str } from './record-json.js';

export function encodeBlock(block: Block): string {
  // Integer-like keys enumerate in ascending numeric order whatever the insertion order, so
  // the JSON lists ordinals sorted without sorting here.
  const allocations: Record<string, string> = {};
  for (const [o, h] of block.allocations) allocations[o] = h;
  const o: Record<string, unknown> = { cidr: formatPrefix(block.cidr), affinity: block.affinity, next: block.next, allocations };
  if (block.released && block.released.size > 0) {
    const released: Record<string, number> = {};
    for (const [ord, at] of block.released) released[ord] = at;
    o.released = released;
  }
  return JSON.stringify(o);
}

/** Decodes a block entry, checking that its CIDR matches its key and every ordinal fits. */
export function decodeBlock(entry: Entry): Block {
  const o = parseRecord(entry);
  const cidr = orCorrupt(entry.key, () => parsePrefix(str(entry.key, o, 'cidr')));
  if (blockKey(cidr) !== entry.key) throw new CorruptRecordError(entry.key, `cidr ${formatPrefix(cidr)} does not match the key`);
  const cap = orCorrupt(entry.key, () => blockCapacity(cidr));
  const affinity = o.affinity;
  if (affinity !== null && typeof affinity !== 'string') throw new CorruptRecordError(entry.key, `field "affinity" is ${JSON.stringify(affinity)}`);
  const next = int(entry.key, o, 'next', 0, cap - 1);
  const allocations = new Map<number, string>();
  for (const [k, h] of Object.entries(obj(entry.key, o, 'allocations'))) {
    const ord = Number(k);
    if (!/^(0|[1-9][0-9]*)$/.test(k) || ord >= cap) throw new CorruptRecordError(entry.key, `allocation ordinal ${JSON.stringify(k)} is outside 0-${cap - 1}`);
    if (typeof h !== 'string' || h === '') throw new CorruptRecordError(entry.key, `allocation ${k} has handle ${JSON.stringify(h)}`);
    allocations.set(ord, h);
  }
  if (o.released === undefined) return { cidr, affinity, allocations, next };
  const released = new Map<number, number>();
  for (const [k, at] of Object.entries(obj(entry.key, o, 'released'))) {
    const ord = Number(k);
    if (!/^(0|[1-9][0-9]*)$/.test(k) || ord >= cap) throw new CorruptRecordError(entry.key, `released ordinal ${JSON.stringify(k)} is outside 0-${cap - 1}`);
    if (typeof at !== 'number' || !Number.isSafeInteger(at) || at < 0)
      throw new CorruptRecordError(entry.key, `released ordinal ${k} has time ${JSON.stringify(at)}, not epoch milliseconds`);
    if (allocations.has(ord)) throw new CorruptRecordError(entry.key, `ordinal ${k} is both allocated and released`);
    released.set(ord, at);
  }
  return { cidr, affinity, allocations, next, ...(released.size > 0 ? { released } : {}) };
}
