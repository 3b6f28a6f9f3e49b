import { isLabelKey, isLabelValue } from './labels.js';

/**
 * Parses `--label KEY=VALUE` arguments into a label map, with Kubernetes' rules: KEY is
 * [DNS-subdomain-prefix/]name (name ≤ 63 characters of letters, digits, '-', '_', '.',
 * starting and ending alphanumeric); VALUE is empty or follows the same rule. TypeError naming
 * the argument for a malformed pair or a key given twice.
 */
export function parseNodeLabels(args: readonly string[]): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const arg of args) {
    const eq = arg.indexOf('=');
    if (eq < 0) throw new TypeError(`invalid --label ${JSON.stringify(arg)}: expected KEY=VALUE`);
    const key = arg.slice(0, eq);
    const value = arg.slice(eq + 1);
    if (!isLabelKey(key)) {
      throw new TypeError(
        `invalid --label ${JSON.stringify(arg)}: key ${JSON.stringify(key)} must be [prefix/]name, name at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit`,
      );
    }
    if (!isLabelValue(value)) {
      throw new TypeError(
        `invalid --label ${JSON.stringify(arg)}: value ${JSON.stringify(value)} must be at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit`,
      );
    }
    if (Object.hasOwn(labels, key)) throw new TypeError(`invalid --label ${JSON.stringify(arg)}: key ${JSON.stringify(key)} given twice`);
    labels[key] = value;
  }
  return labels;
}
