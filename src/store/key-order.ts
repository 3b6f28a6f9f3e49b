/**
 * Key order shared by every back end: Unicode code point order, which is the order of the
 * keys' UTF-8 bytes — how etcd (bytes) and SQLite (BINARY collation on UTF-8 TEXT) sort.
 * JavaScript's `<` compares UTF-16 code units and disagrees for characters above U+FFFF.
 */

/** Negative, zero or positive as `a` sorts before, with or after `b` in code point order. */
export function compareKeys(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

// At the first differing unit a surrogate stands for a code point above U+FFFF, so it must
// rank above U+E000..U+FFFF; shifting both ranges keeps the order inside each of them.
function codePointRank(unit: number): number {
  if (unit >= 0xe000) return unit - 0x800;
  if (unit >= 0xd800) return unit + 0x2000;
  return unit;
}

/**
 * The smallest string greater than every string that starts with `prefix`, in code point
 * order; undefined when there is none (the empty prefix, or one made only of U+10FFFF).
 */
export function prefixEnd(prefix: string): string | undefined {
  const points = Array.from(prefix, (c) => c.codePointAt(0) as number);
  while (points.length > 0) {
    const last = points.pop() as number;
    if (last < 0x10ffff) {
      points.push(last === 0xd7ff ? 0xe000 : last + 1);
      return String.fromCodePoint(...points);
    }
  }
  return undefined;
}
