/** An address family: 4 or 6. */
export type Family = 4 | 6;

/** An IP address: a family and an unsigned integer value (32 or 128 bits). */
export interface Addr {
  readonly family: Family;
  readonly value: bigint;
}

/** Number of bits in an address of `family`. */
export function familyBits(family: Family): 32 | 128 {
  return family === 4 ? 32 : 128;
}

/** The largest address value of `family` (all ones). */
export function familyMax(family: Family): bigint {
  return family === 4 ? 0xffffffffn : (1n << 128n) - 1n;
}

/** Builds an address, checking that the value fits the family. */
export function addr(family: Family, value: bigint): Addr {
  if (value < 0n || value > familyMax(family)) {
    throw new RangeError(`value ${value} does not fit an IPv${family} address`);
  }
  return { family, value };
}

function parseV4(text: string): bigint | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let v = 0n;
  for (const p of parts) {
    // Decimal only, no leading zeros (Go rejects them: they read as octal elsewhere).
    if (!/^(0|[1-9][0-9]{0,2})$/.test(p)) return undefined;
    const n = Number(p);
    if (n > 255) return undefined;
    v = (v << 8n) | BigInt(n);
  }
  return v;
}

function parseGroups(part: string): bigint[] | undefined {
  if (part === '') return [];
  const out: bigint[] = [];
  for (const g of part.split(':')) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined;
    out.push(BigInt('0x' + g));
  }
  return out;
}

function parseV6(text: string): bigint | undefined {
  let s = text;
  // An embedded IPv4 tail (::ffff:1.2.3.4) is rewritten as its two 16-bit groups.
  const lastColon = s.lastIndexOf(':');
  if (s.slice(lastColon + 1).includes('.')) {
    const v4 = parseV4(s.slice(lastColon + 1));
    if (v4 === undefined) return undefined;
    s = `${s.slice(0, lastColon + 1)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const dbl = s.indexOf('::');
  let groups: bigint[];
  if (dbl >= 0) {
    if (s.indexOf('::', dbl + 1) >= 0) return undefined;
    const head = parseGroups(s.slice(0, dbl));
    const rest = parseGroups(s.slice(dbl + 2));
    if (!head || !rest) return undefined;
    const missing = 8 - head.length - rest.length;
    if (missing < 1) return undefined;
    groups = [...head, ...new Array<bigint>(missing).fill(0n), ...rest];
  } else {
    const all = parseGroups(s);
    if (!all || all.length !== 8) return undefined;
    groups = all;
  }
  let v = 0n;
  for (const g of groups) v = (v << 16n) | g;
  return v;
}

/**
 * Parses an IPv4 or IPv6 address. IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) become IPv4, as
 * Go's net.IP treats them. Throws TypeError naming the input when it is not an address.
 */
export function parseAddr(text: string): Addr {
  if (typeof text !== 'string') throw new TypeError(`invalid IP address ${JSON.stringify(text)}: not a string`);
  if (text.includes(':')) {
    const v = text.length <= 45 ? parseV6(text) : undefined;
    if (v === undefined) throw new TypeError(`invalid IP address "${text}"`);
    if (v >> 32n === 0xffffn) return { family: 4, value: v & 0xffffffffn };
    return { family: 6, value: v };
  }
  const v = parseV4(text);
  if (v === undefined) throw new TypeError(`invalid IP address "${text}"`);
  return { family: 4, value: v };
}

/** Like parseAddr, but returns undefined instead of throwing. */
export function tryParseAddr(text: string): Addr | undefined {
  try {
    return parseAddr(text);
  } catch {
    return undefined;
  }
}

/**
 * Canonical text: dotted quad for IPv4; RFC 5952 for IPv6 (lower case, leading zeros dropped,
 * the longest run of two or more zero groups — the first on a tie — written as "::"), which is
 * exactly what Go's net.IP.String() prints and so what host-local names its files.
 */
export function formatAddr(a: Addr): string {
  if (a.family === 4) {
    const v = a.value;
    return `${(v >> 24n) & 255n}.${(v >> 16n) & 255n}.${(v >> 8n) & 255n}.${v & 255n}`;
  }
  if (a.value >> 32n === 0xffffn) {
    // Go prints IPv4-mapped addresses as IPv4; keep the mapping visible for a stored v6 value.
    return formatAddr({ family: 4, value: a.value & 0xffffffffn });
  }
  const groups: number[] = [];
  for (let i = 7; i >= 0; i--) groups.push(Number((a.value >> BigInt(i * 16)) & 0xffffn));
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestLen < 2) return hex.join(':');
  return hex.slice(0, bestStart).join(':') + '::' + hex.slice(bestStart + bestLen).join(':');
}

/** Orders addresses: IPv4 before IPv6, then by value. */
export function compareAddr(a: Addr, b: Addr): number {
  if (a.family !== b.family) return a.family - b.family;
  return a.value < b.value ? -1 : a.value > b.value ? 1 : 0;
}

export function addrEquals(a: Addr, b: Addr): boolean {
  return a.family === b.family && a.value === b.value;
}

/** `a + n`, or undefined when the result leaves the family's address space. */
export function addrAdd(a: Addr, n: bigint): Addr | undefined {
  const v = a.value + n;
  if (v < 0n || v > familyMax(a.family)) return undefined;
  return { family: a.family, value: v };
}
