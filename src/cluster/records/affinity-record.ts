/**
 * Block affinities (`affinities/<node>/<cidr>`): the index of a node's blocks, so a node finds
 * its blocks with one prefix list. Calico needs the states pending → confirmed →
 * pendingDeletion because its Kubernetes back end cannot write two objects atomically; here a
 * claim writes the block and its confirmed affinity in ONE transaction, and a release deletes
 * both in one, so podipam itself never leaves a record pending. The states are still decoded,
 * and `ipam check` reports any affinity that is not confirmed or has no matching block.
 */
import type { Entry } from '../../store/index.js';
import { CorruptRecordError } from './errors.js';
import { parseRecord } from './record-json.js';

export type AffinityState = 'pending' | 'confirmed' | 'pendingDeletion';

export interface Affinity {
  readonly state: AffinityState;
  /** ISO time of the claim. */
  readonly claimedAt?: string;
}

export function encodeAffinity(a: Affinity): string {
  return JSON.stringify(a);
}

export function decodeAffinity(entry: Entry): Affinity {
  const o = parseRecord(entry);
  if (o.state !== 'pending' && o.state !== 'confirmed' && o.state !== 'pendingDeletion') {
    throw new CorruptRecordError(entry.key, `field "state" is ${JSON.stringify(o.state)}`);
  }
  return { state: o.state, claimedAt: typeof o.claimedAt === 'string' ? o.claimedAt : undefined };
}
