/**
 * The IPAM configuration singleton (`config`), Calico's IPAMConfiguration plus a
 * `generation` counter. Every change to pools, reservations or the configuration itself
 * rewrites this record in the same transaction; an allocation compares this record's revision,
 * so a cached view of pools, reservations and settings is proven current by the very
 * transaction that allocates — no read needed. A missing record means the defaults.
 */
import type { Entry } from '../../store/index.js';
import { bool, int, parseRecord } from './record-json.js';

export interface IpamConfig {
  /** Never borrow from another node's block (Calico default false). */
  readonly strictAffinity: boolean;
  /** Claim new blocks when a node's blocks are full (default true). */
  readonly autoAllocateBlocks: boolean;
  /** Most blocks a node may own per family; 0 = unset, which applies the safety cap below. */
  readonly maxBlocksPerHost: number;
  /** Bumped by every change to pools, reservations or this record. */
  readonly generation: number;
}

export const DEFAULT_IPAM_CONFIG: IpamConfig = Object.freeze({ strictAffinity: false, autoAllocateBlocks: true, maxBlocksPerHost: 0, generation: 0 });

/** Calico's cap when maxBlocksPerHost is unset. */
export const BLOCKS_PER_HOST_SAFETY_CAP = 20;

/** The largest maxBlocksPerHost accepted (CLI, API, stored records): the one bound of the setting. */
export const MAX_BLOCKS_PER_HOST = 1_000_000;

/** The block limit an allocation applies. */
export function effectiveMaxBlocks(c: IpamConfig): number {
  return c.maxBlocksPerHost > 0 ? c.maxBlocksPerHost : BLOCKS_PER_HOST_SAFETY_CAP;
}

export function encodeConfig(c: IpamConfig): string {
  return JSON.stringify({
    strictAffinity: c.strictAffinity,
    autoAllocateBlocks: c.autoAllocateBlocks,
    maxBlocksPerHost: c.maxBlocksPerHost,
    generation: c.generation,
  });
}

export function decodeConfig(entry: Entry | undefined): IpamConfig {
  if (entry === undefined) return DEFAULT_IPAM_CONFIG;
  const o = parseRecord(entry);
  return {
    strictAffinity: bool(entry.key, o, 'strictAffinity', false),
    autoAllocateBlocks: bool(entry.key, o, 'autoAllocateBlocks', true),
    maxBlocksPerHost: o.maxBlocksPerHost === undefined ? 0 : int(entry.key, o, 'maxBlocksPerHost', 0, MAX_BLOCKS_PER_HOST),
    generation: o.generation === undefined ? 0 : int(entry.key, o, 'generation', 0),
  };
}

/** The config with its generation bumped: what every pool/reservation/config write puts. */
export function nextGeneration(c: IpamConfig): IpamConfig {
  return { ...c, generation: c.generation + 1 };
}
