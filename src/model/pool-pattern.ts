/**
 * Pool-name patterns as Spiderpool's annotations write them (Go's `path.Match` syntax): `*`
 * matches any run of characters, `?` one character, `[…]` one character of a set (`a-z`
 * ranges; `[^…]` negates). A name without these characters is a plain pool name.
 *
 * Bounded: a pattern is at most MAX_PATTERN_LENGTH characters, checked once by
 * `poolPatternProblem`; matching never backtracks: it follows every way the pattern could
 * match at once, 32 pattern positions to a machine word, so a name costs (name length) × 8
 * word steps at most, whatever the pattern — never the exponential time of a backtracking
 * regular expression, nor the (pattern × name) of a star-backtracking matcher.
 */

import { quoteText } from '../util/quote-text.js';

/** Longest pattern: a pool name's longest (a DNS subdomain's 253 characters). */
export const MAX_PATTERN_LENGTH = 253;

type Token =
  | { readonly k: 'star' }
  | { readonly k: 'any' }
  | { readonly k: 'char'; readonly c: string }
  | { readonly k: 'set'; readonly neg: boolean; readonly ranges: readonly (readonly [string, string])[] };

const META = /[*?[]/;
const NAME_CHAR = /^[a-z0-9.-]$/;

/** True when `text` uses pattern syntax (`*`, `?` or `[`). */
export function isPoolPattern(text: string): boolean {
  return META.test(text);
}

/** Why `pattern` is not a valid pool-name pattern (undefined: it is). */
export function poolPatternProblem(pattern: string): string | undefined {
  if (pattern.length === 0) return 'an empty pattern';
  if (pattern.length > MAX_PATTERN_LENGTH) return `a pattern of ${pattern.length} characters; at most ${MAX_PATTERN_LENGTH} are allowed`;
  try {
    compile(pattern);
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}

/** True when `name` matches `pattern` (a valid one: see poolPatternProblem; an invalid one matches nothing). */
export function matchPoolPattern(pattern: string, name: string): boolean {
  return poolMatcher(pattern)(name);
}

/** `pattern` compiled once, to match many names. */
export function poolMatcher(pattern: string): (name: string) => boolean {
  let toks: Token[];
  try {
    toks = compile(pattern);
  } catch {
    return () => false;
  }
  return bitMatcher(toks);
}

/**
 * The pattern as a set of positions (tokens matched so far) advanced one name character at a
 * time, 32 positions to a word: each character costs the same few operations per word,
 * whatever the pattern — (name length) × ⌈(tokens + 1) / 32⌉ word steps, no backtracking.
 */
function bitMatcher(toks: readonly Token[]): (name: string) => boolean {
  const end = toks.length;
  const words = (end >> 5) + 1;
  const star = new Uint32Array(words);
  toks.forEach((t, i) => {
    if (t.k === 'star') star[i >> 5]! |= 1 << (i & 31);
  });
  // Per character code, the positions whose (non-star) token takes it; filled on first use.
  const takes = new Map<number, Uint32Array>();
  const takesOf = (code: number): Uint32Array => {
    let m = takes.get(code);
    if (!m) {
      const c = String.fromCharCode(code);
      const fresh = new Uint32Array(words);
      toks.forEach((t, i) => {
        if (t.k !== 'star' && one(t, c)) fresh[i >> 5]! |= 1 << (i & 31);
      });
      takes.set(code, (m = fresh));
    }
    return m;
  };
  // A star may match nothing: a position before one reaches the position after it (stars never follow each other).
  const close = (s: Uint32Array): void => {
    let carry = 0;
    for (let w = 0; w < words; w++) {
      const x = s[w]! & star[w]!;
      s[w] = s[w]! | (x << 1) | carry;
      carry = x >>> 31;
    }
  };
  return (name) => {
    let cur = new Uint32Array(words);
    let next = new Uint32Array(words);
    cur[0] = 1;
    close(cur);
    for (let n = 0; n < name.length; n++) {
      const take = takesOf(name.charCodeAt(n));
      let carry = 0;
      let any = 0;
      for (let w = 0; w < words; w++) {
        const x = cur[w]! & take[w]!;
        next[w] = (x << 1) | carry | (cur[w]! & star[w]!);
        carry = x >>> 31;
        any |= next[w]!;
      }
      if (any === 0) return false;
      close(next);
      const was = cur;
      cur = next;
      next = was;
    }
    return ((cur[end >> 5]! >>> (end & 31)) & 1) === 1;
  };
}

function one(t: Token, c: string): boolean {
  if (t.k === 'any') return true;
  if (t.k === 'char') return t.c === c;
  if (t.k === 'set') return t.ranges.some(([lo, hi]) => lo <= c && c <= hi) !== t.neg;
  return false;
}

/** The pattern's tokens; throws an Error naming what is wrong (an unclosed `[`, a character no pool name has, …). */
function compile(pattern: string): Token[] {
  const out: Token[] = [];
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '*') {
      if (out.at(-1)?.k !== 'star') out.push({ k: 'star' });
    } else if (c === '?') {
      out.push({ k: 'any' });
    } else if (c === '[') {
      let j = i + 1;
      const neg = pattern[j] === '^';
      if (neg) j++;
      const ranges: [string, string][] = [];
      while (j < pattern.length && pattern[j] !== ']') {
        const lo = pattern[j]!;
        if (!NAME_CHAR.test(lo)) throw new Error(`${quoteText(lo)} at ${j + 1} cannot be in a set: pool names have lower-case letters, digits, '-' and '.'`);
        if (pattern[j + 1] === '-' && j + 2 < pattern.length && pattern[j + 2] !== ']') {
          const hi = pattern[j + 2]!;
          if (!NAME_CHAR.test(hi) || hi < lo) throw new Error(`the range ${lo}-${hi} at ${j + 1} is not a range of pool-name characters`);
          ranges.push([lo, hi]);
          j += 3;
        } else {
          ranges.push([lo, lo]);
          j++;
        }
      }
      if (j >= pattern.length) throw new Error(`the "[" at ${i + 1} is not closed by "]"`);
      if (ranges.length === 0) throw new Error(`the set at ${i + 1} is empty`);
      out.push({ k: 'set', neg, ranges });
      i = j;
    } else if (NAME_CHAR.test(c)) {
      out.push({ k: 'char', c });
    } else {
      throw new Error(`${quoteText(c)} at ${i + 1} is neither a pool-name character (lower-case letters, digits, '-' and '.') nor a wildcard (*, ?, [...])`);
    }
  }
  return out;
}
