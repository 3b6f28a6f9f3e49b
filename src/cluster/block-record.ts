/**
 * The stored form of an allocation block (`blocks/<cidr>`), compact JSON:
 * `{"cidr":"10.0.0.64/26","affinity":"node-a","next":3,"allocations":{"0":"net:c1:eth0"}}` —
 * only allocated ordinals are listed, so a block's size follows its use, not its capacity.
 */
import { type Block, blockCapacity } from '../alloc/block.js';
import { formatPrefix, parsePrefix } from '../ip/index.js';
import type { Entry } from '../store/index.js';
import { CorruptRecordError } from './errors.js';
import { blockKey } from './keys.js';
import { int, obj, orCorrupt, parseRecord, str } from './record-json.js';

export function encodeBlock(block: Block): string {
  // Integer-like keys enumerate in ascending numeric order whatever the insertion order, so
  // the JSON lists ordinals sorted without sorting here.
  const allocations: Record<string, string> = {};
  for (const [o, h] of block.allocations) allocations[o] = h;
  return JSON.stringify({ cidr: formatPrefix(block.cidr), affinity: block.affinity, next: block.next, allocations });
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
  return { cidr, affinity, allocations, next };
}
