/**
 * Datastore keys of the cluster back end (the data model the README describes). A block CIDR appears in
 * keys with its "/" written as "-" ("blocks/10.0.0.64-26", "blocks/fd00::40-122"), since "/"
 * separates key segments; "-" never occurs in canonical address text.
 */
import { type Prefix, formatPrefix, parsePrefix } from '../../ip/index.js';

export const POOL_PREFIX = 'pools/';
export const BLOCK_PREFIX = 'blocks/';
export const AFFINITY_PREFIX = 'affinities/';
export const HANDLE_PREFIX = 'handles/';
export const RESERVATION_PREFIX = 'reservations/';
/** Fixed address sets (ip-set-record.ts). */
export const IPSET_PREFIX = 'ipsets/';
/** The IPAM configuration singleton; its `generation` guards every cached view (see ipam-config.ts). */
export const CONFIG_KEY = 'config';

/** "10.0.0.64/26" → "10.0.0.64-26". */
export function cidrSegment(cidr: Prefix): string {
  return formatPrefix(cidr).replace('/', '-');
}

/** "10.0.0.64-26" → the prefix, or undefined when the segment is not a canonical block CIDR. */
export function parseCidrSegment(segment: string): Prefix | undefined {
  const dash = segment.lastIndexOf('-');
  if (dash < 0) return undefined;
  const text = `${segment.slice(0, dash)}/${segment.slice(dash + 1)}`;
  try {
    const p = parsePrefix(text);
    return formatPrefix(p) === text ? p : undefined;
  } catch {
    return undefined;
  }
}

export function poolKey(name: string): string {
  return POOL_PREFIX + name;
}

export function blockKey(cidr: Prefix): string {
  return BLOCK_PREFIX + cidrSegment(cidr);
}

/** The block CIDR a block key names, or undefined for a key that is not one. */
export function parseBlockKey(key: string): Prefix | undefined {
  return key.startsWith(BLOCK_PREFIX) ? parseCidrSegment(key.slice(BLOCK_PREFIX.length)) : undefined;
}

/** Prefix of every affinity of `node`: list it to find the node's blocks without a scan. */
export function affinityPrefix(node: string): string {
  return `${AFFINITY_PREFIX}${node}/`;
}

export function affinityKey(node: string, cidr: Prefix): string {
  return affinityPrefix(node) + cidrSegment(cidr);
}

/** The node and block CIDR an affinity key names, or undefined. */
export function parseAffinityKey(key: string): { node: string; cidr: Prefix } | undefined {
  if (!key.startsWith(AFFINITY_PREFIX)) return undefined;
  const rest = key.slice(AFFINITY_PREFIX.length);
  const slash = rest.indexOf('/');
  if (slash <= 0) return undefined;
  const cidr = parseCidrSegment(rest.slice(slash + 1));
  return cidr && { node: rest.slice(0, slash), cidr };
}

export function handleKey(handle: string): string {
  return HANDLE_PREFIX + handle;
}

export function reservationKey(name: string): string {
  return RESERVATION_PREFIX + name;
}

export function ipSetKey(name: string): string {
  return IPSET_PREFIX + name;
}
