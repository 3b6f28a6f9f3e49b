import { type Addr, type Family, familyBits, familyMax, formatAddr, parseAddr } from './addr.js';

/** A network prefix: the network address (host bits zero) and the prefix length. */
export interface Prefix {
  readonly family: Family;
  /** The network address value (host bits are always zero). */
  readonly base: bigint;
  readonly len: number;
}

/** An address written with a prefix length, host bits allowed ("10.1.0.5/24"). */
export interface AddrWithLen {
  readonly addr: Addr;
  readonly len: number;
}

function hostMask(family: Family, len: number): bigint {
  return (1n << BigInt(familyBits(family) - len)) - 1n;
}

/** Parses "ADDR/LEN" keeping host bits. Throws TypeError naming the input. */
export function parseCidr(text: string): AddrWithLen {
  if (typeof text !== 'string') throw new TypeError(`invalid CIDR ${JSON.stringify(text)}: not a string`);
  const slash = text.indexOf('/');
  if (slash < 0) throw new TypeError(`invalid CIDR "${text}": missing "/prefix-length"`);
  let a: Addr;
  try {
    a = parseAddr(text.slice(0, slash));
  } catch {
    throw new TypeError(`invalid CIDR "${text}": bad address`);
  }
  const lenText = text.slice(slash + 1);
  if (!/^(0|[1-9][0-9]{0,2})$/.test(lenText)) throw new TypeError(`invalid CIDR "${text}": bad prefix length`);
  let len = Number(lenText);
  // An IPv4-mapped IPv6 CIDR (::ffff:10.0.0.0/104) is an IPv4 prefix, as in Go.
  if (a.family === 4 && text.slice(0, slash).includes(':')) len -= 96;
  if (len < 0 || len > familyBits(a.family)) throw new TypeError(`invalid CIDR "${text}": prefix length out of range`);
  return { addr: a, len };
}

/** The prefix of length `len` containing `a`. */
export function prefixOf(a: Addr, len: number): Prefix {
  if (!Number.isInteger(len) || len < 0 || len > familyBits(a.family)) {
    throw new RangeError(`prefix length ${len} out of range for IPv${a.family}`);
  }
  return { family: a.family, base: a.value & ~hostMask(a.family, len) & familyMax(a.family), len };
}

/**
 * Parses a network prefix. With `strict` (the default), host bits must be zero, with the
 * error text host-local uses; otherwise they are masked off.
 */
export function parsePrefix(text: string, options: { strict?: boolean } = {}): Prefix {
  const { addr: a, len } = parseCidr(text);
  const p = prefixOf(a, len);
  if ((options.strict ?? true) && p.base !== a.value) {
    throw new TypeError(
      `invalid CIDR "${text}": Network has host bits set. For a subnet mask of length ${len} the network address is ${formatAddr({ family: a.family, value: p.base })}`,
    );
  }
  return p;
}

export function formatPrefix(p: Prefix): string {
  return `${formatAddr({ family: p.family, value: p.base })}/${p.len}`;
}

export function formatAddrWithLen(a: Addr, len: number): string {
  return `${formatAddr(a)}/${len}`;
}

/** First (network) address of the prefix. */
export function prefixFirst(p: Prefix): Addr {
  return { family: p.family, value: p.base };
}

/** Last (all-ones host part) address of the prefix. */
export function prefixLast(p: Prefix): Addr {
  return { family: p.family, value: p.base | hostMask(p.family, p.len) };
}

/** Number of addresses in the prefix. */
export function prefixSize(p: Prefix): bigint {
  return 1n << BigInt(familyBits(p.family) - p.len);
}

export function prefixContains(p: Prefix, a: Addr): boolean {
  return a.family === p.family && (a.value & ~hostMask(p.family, p.len)) === p.base;
}

/** True when `inner` lies entirely inside `outer`. */
export function prefixContainsPrefix(outer: Prefix, inner: Prefix): boolean {
  return outer.family === inner.family && inner.len >= outer.len && prefixContains(outer, prefixFirst(inner));
}

/** True when the two prefixes share an address (for prefixes: one contains the other). */
export function prefixOverlaps(a: Prefix, b: Prefix): boolean {
  return prefixContainsPrefix(a, b) || prefixContainsPrefix(b, a);
}

/** The `index`-th sub-prefix of length `len` inside `p` (index 0 = p's first). */
export function subPrefix(p: Prefix, len: number, index: bigint): Prefix {
  if (len < p.len || len > familyBits(p.family)) throw new RangeError(`sub-prefix length ${len} not within /${p.len}`);
  const count = 1n << BigInt(len - p.len);
  if (index < 0n || index >= count) throw new RangeError(`sub-prefix index ${index} out of range (${count})`);
  return { family: p.family, base: p.base + (index << BigInt(familyBits(p.family) - len)), len };
}

/** Index of the length-`len` sub-prefix of `p` that contains `a`. */
export function subPrefixIndex(p: Prefix, len: number, a: Addr): bigint {
  if (!prefixContains(p, a)) throw new RangeError(`${formatAddr(a)} is not in ${formatPrefix(p)}`);
  return (a.value - p.base) >> BigInt(familyBits(p.family) - len);
}
