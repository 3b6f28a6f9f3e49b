/**
 * Pool-name patterns as Spiderpool's annotations write them (Go's `path.Match` syntax): `*`
 * matches any run of characters, `?` one character, `[…]` one character of a set (`a-z`
 * ranges; `[^…]` negates). A name without these characters is a plain pool name.
 *
 * Bounded: a pattern is at most MAX_PATTERN_LENGTH characters, checked once by
 * `poolPatternProblem`; `matchPoolPattern` never backtracks more than to the last `*`, so it
 * takes at most (pattern length) × (name length) steps — about 64,000 for the longest of
 * both — never the exponential time of a backtracking regular expression.
 */

import { quoteText } from '../util/quote-text.js';

/** Longest pattern: a pool name's longest (a DNS subdomain's 253 characters). */
export const MAX_PATTERN_LENGTH = 253;

type Token = { readonly k: 'star' } | { readonly k: 'any' } | { readonly k: 'char'; readonly c: string } | { readonly k: 'set'; readonly neg: boolean; readonly ranges: readonly (readonly [string, string])[] };

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
  return (name) => matches(toks, name);
}

function matches(toks: readonly Token[], name: string): boolean {
  let p = 0;
  let n = 0;
  let starP = -1;
  let starN = 0;
  while (n < name.length) {
    const t = toks[p];
    if (t !== undefined && t.k === 'star') {
      starP = p++;
      starN = n;
    } else if (t !== undefined && one(t, name[n]!)) {
      p++;
      n++;
    } else if (starP >= 0) {
      // Let the last star take one more character and retry what follows it: earlier stars
      // never need to take more (the part between two stars matched as early as it could).
      p = starP + 1;
      n = ++starN;
    } else {
      return false;
    }
  }
  while (toks[p]?.k === 'star') p++;
  return p === toks.length;
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
