/**
 * The cluster back end's addressing model, pure: a pod gets an address with its BLOCK's
 * prefix (10.244.3.5/26) and the block's gateway, so each block is a subnet on its node — the
 * node holds the gateway (on its bridge, or on each pod's host-side veth with `ptp`) and the
 * other nodes route the block to it. Inside such a subnet some addresses cannot be a pod's:
 *
 * - ordinal 0, the block's network address (for IPv6 the subnet-router anycast address,
 *   RFC 4291 §2.6.1);
 * - ordinal 1, the gateway (the block's first usable address, as `bridge` computes it);
 * - for IPv4 the last ordinal, the block's broadcast address.
 *
 * They are never handed out. What remains is one contiguous span (ordinals 2 … size−2 for
 * IPv4, 2 … size−1 for IPv6), empty for IPv4 blocks smaller than /30 and IPv6 blocks smaller
 * than /126 — block sizes new pools may not use (see BLOCK_SIZE_RANGE).
 */
import { type Addr, type IpRange, type Prefix, familyBits, formatPrefix, rangeOf } from '../ip/index.js';

/** The gateway's ordinal: the block's first usable address. */
export const GATEWAY_ORDINAL = 1;

/** Smallest block prefix length that leaves a usable address (/30: one, /126: two). */
export const MAX_USABLE_BLOCK_SIZE = Object.freeze({ 4: 30, 6: 126 } as const);

/**
 * The addresses of `prefix` that may be handed out, as one range, or undefined when there is
 * none. Any prefix, not only a block: for a pool it is a superset of every block's span.
 */
export function usableSpan(prefix: Prefix): IpRange | undefined {
  if (prefix.len > MAX_USABLE_BLOCK_SIZE[prefix.family]) return undefined;
  const size = 1n << BigInt(familyBits(prefix.family) - prefix.len);
  const last = prefix.family === 4 ? size - 2n : size - 1n;
  return rangeOf({ family: prefix.family, value: prefix.base + 2n }, { family: prefix.family, value: prefix.base + last });
}

/** Number of addresses of `prefix` that may be handed out (0 when none). */
export function usableCount(prefix: Prefix): bigint {
  const span = usableSpan(prefix);
  return span ? span.end.value - span.start.value + 1n : 0n;
}

/** True when ordinal `o` of block `cidr` may be handed out (false for ordinals outside the block too). */
export function isUsableOrdinal(cidr: Prefix, o: number): boolean {
  if (!Number.isInteger(o) || o < 2 || cidr.len > MAX_USABLE_BLOCK_SIZE[cidr.family]) return false;
  const size = 2 ** (familyBits(cidr.family) - cidr.len);
  return o < (cidr.family === 4 ? size - 1 : size);
}

/** The block's gateway (ordinal 1), reported in every result from the block and never handed out. */
export function blockGateway(cidr: Prefix): Addr {
  return { family: cidr.family, value: cidr.base + BigInt(GATEWAY_ORDINAL) };
}

/**
 * What an excluded ordinal is, for messages ("the gateway of block 10.0.0.0/26"), or undefined
 * when the ordinal may be handed out.
 */
export function excludedRole(cidr: Prefix, o: number): string | undefined {
  if (isUsableOrdinal(cidr, o)) return undefined;
  const block = `block ${formatPrefix(cidr)}`;
  if (cidr.len > MAX_USABLE_BLOCK_SIZE[cidr.family]) return `in ${block}, which is too small to hand out any address`;
  if (o === 0) return cidr.family === 4 ? `the network address of ${block}` : `the subnet-router anycast address of ${block}`;
  if (o === GATEWAY_ORDINAL) return `the gateway of ${block}`;
  return `the broadcast address of ${block}`;
}
