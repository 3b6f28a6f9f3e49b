/**
 * A Calico IPPool nodeSelector in podipam's selector syntax (src/model/node-selector.ts).
 * Calico writes `all()`, `zone == 'a'`, `zone != "b"`, joined with `&&`; podipam writes
 * `all()` and `zone=a,zone!=b`, all of which must hold. That subset is translated exactly
 * (Calico's `!=` is also true when the label is absent, as podipam's); anything else —
 * `has()`, `in {…}`, `||`, `!`, parentheses — has no podipam equivalent and is refused with the
 * reason, so an import never widens or narrows which nodes a pool serves.
 */
import { parseNodeSelector } from '../../model/node-selector.js';

/** The podipam selector text, or `{ problem }` saying why the Calico selector cannot be carried over. */
export function calicoSelectorToPodipam(selector: string): { readonly text: string } | { readonly problem: string } {
  const trimmed = selector.trim();
  if (trimmed === '' || trimmed === 'all()') return { text: 'all()' };
  const terms: string[] = [];
  for (const raw of splitAnd(trimmed)) {
    const m = /^([A-Za-z0-9][A-Za-z0-9_./-]*)\s*(==|!=)\s*(?:'([^']*)'|"([^"]*)")$/.exec(raw.trim());
    if (!m) {
      return {
        problem: `term ${JSON.stringify(raw.trim())} is not label == 'value' or label != 'value' (podipam pools select nodes by a conjunction of those only)`,
      };
    }
    terms.push(`${m[1]!}${m[2] === '==' ? '=' : '!='}${m[3] ?? m[4] ?? ''}`);
  }
  const text = terms.join(',');
  try {
    return { text: parseNodeSelector(text).text };
  } catch (e) {
    return { problem: (e as Error).message };
  }
}

/** The terms of `a && b && c`, "&&" inside quotes left alone. */
function splitAnd(s: string): string[] {
  const out: string[] = [];
  let quote: string | undefined;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (quote !== undefined) {
      if (c === quote) quote = undefined;
    } else if (c === "'" || c === '"') {
      quote = c;
    } else if (c === '&' && s[i + 1] === '&') {
      out.push(s.slice(start, i));
      start = i + 2;
      i++;
    }
  }
  out.push(s.slice(start));
  return out;
}
