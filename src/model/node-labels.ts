const NAME = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$/;
const DNS_LABEL = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const PREFIX = new RegExp(`^${DNS_LABEL}(\\.${DNS_LABEL})*$`);

function validKey(key: string): boolean {
  const slash = key.indexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && (prefix.length === 0 || prefix.length > 253 || !PREFIX.test(prefix))) return false;
  return name.length > 0 && name.length <= 63 && NAME.test(name);
}

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
    if (!validKey(key)) {
      throw new TypeError(`invalid --label ${JSON.stringify(arg)}: key ${JSON.stringify(key)} must be [prefix/]name, name at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit`);
    }
    if (value !== '' && (value.length > 63 || !NAME.test(value))) {
      throw new TypeError(`invalid --label ${JSON.stringify(arg)}: value ${JSON.stringify(value)} must be at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit`);
    }
    if (Object.hasOwn(labels, key)) throw new TypeError(`invalid --label ${JSON.stringify(arg)}: key ${JSON.stringify(key)} given twice`);
    labels[key] = value;
  }
  return labels;
}
