/**
 * Text from outside (annotation values, pod names, handle attributes) made safe to print on a
 * terminal or into a log line: `quoteText` gives a JSON string literal (`"…"`) in which every
 * control character is escaped — C0 and DEL as JSON does or as `\u007f`, and the C1 range
 * (U+0080–U+009F, which terminals that speak UTF-8 may still obey, e.g. U+009B as CSI) and the
 * line/paragraph separators as `\uXXXX` — cut to at most `max` characters of the original
 * with its full length named. `escapeControls` escapes the same characters without quoting
 * (all of them, or all but newline and tab for whole lines of output: `escapeOutput`).
 */

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;
// eslint-disable-next-line no-control-regex
const HAS_CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/;

const hex = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** Longest part of a value quoted by default: enough to recognise it, never a 256 KiB message. */
export const QUOTE_MAX = 200;

/** `text` as a JSON string literal with every control character escaped, cut after `max` characters ("… (N characters)"). */
export function quoteText(text: string, max = QUOTE_MAX): string {
  const cut = text.length > max;
  // JSON.stringify escapes C0, '"' and '\'; the rest of CONTROL is left, escaped here.
  const quoted = JSON.stringify(cut ? text.slice(0, max) : text).replace(CONTROL, hex);
  return cut ? `${quoted}… (${text.length} characters)` : quoted;
}

/** `text` with control characters escaped as `\uXXXX` (a backslash is kept as it is); `text` itself when it has none. */
export function escapeControls(text: string): string {
  return HAS_CONTROL.test(text) ? text.replace(CONTROL, hex) : text;
}

/** Lines of output with every control character but newline and tab escaped as `\uXXXX`. */
export function escapeOutput(text: string): string {
  return HAS_CONTROL.test(text) ? text.replace(CONTROL, (c) => (c === '\n' || c === '\t' ? c : hex(c))) : text;
}
