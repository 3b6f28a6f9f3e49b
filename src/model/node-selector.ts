/**
 * A pool's nodeSelector: "all()" (or empty) selects every node; otherwise a comma-separated
 * list of `key=value` (label equals) and `key!=value` (label absent or different), all of which
 * must hold. This is the small subset of Calico's selector language that label-based pool
 * placement needs.
 */
import { isLabelKey, isLabelValue } from './labels.js';

export interface NodeSelector {
  /** The canonical text ("all()" or the terms joined by ","). */
  readonly text: string;
  readonly terms: readonly { readonly key: string; readonly op: '=' | '!='; readonly value: string }[];
}

/** Parses a selector; TypeError naming the selector and the bad term. */
export function parseNodeSelector(text: string): NodeSelector {
  if (typeof text !== 'string') throw new TypeError(`invalid nodeSelector ${JSON.stringify(text)}: not a string`);
  const trimmed = text.trim();
  if (trimmed === '' || trimmed === 'all()') return { text: 'all()', terms: [] };
  const terms = trimmed.split(',').map((raw) => {
    const term = raw.trim();
    const m = /^([^=!\s]+)\s*(!=|=)\s*(\S*)$/.exec(term);
    if (!m || !isLabelKey(m[1]!) || !isLabelValue(m[3]!)) {
      throw new TypeError(`invalid nodeSelector ${JSON.stringify(text)}: term ${JSON.stringify(term)} is not key=value or key!=value (or use all())`);
    }
    return { key: m[1]!, op: m[2] as '=' | '!=', value: m[3]! };
  });
  return { text: terms.map((t) => `${t.key}${t.op}${t.value}`).join(','), terms };
}

/** True when `labels` satisfy every term (always for all()). */
export function selectorMatches(selector: NodeSelector, labels: Readonly<Record<string, string>>): boolean {
  return selector.terms.every((t) => (t.op === '=' ? labels[t.key] === t.value : labels[t.key] !== t.value));
}

/** True when the selector depends on labels at all (not all()). */
export function selectorUsesLabels(selector: NodeSelector): boolean {
  return selector.terms.length > 0;
}
