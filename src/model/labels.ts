/**
 * Kubernetes label keys and values, one rule for the CLI's `--label`, the API's `labels` and
 * pools' node selectors: a key is `[prefix/]name`, the prefix a DNS subdomain (≤ 253), the name
 * at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit; a
 * value is empty or follows the name rule.
 */
import { DNS_SUBDOMAIN } from './node-name.js';

const NAME = /^[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

export function isLabelKey(key: string): boolean {
  const slash = key.indexOf('/');
  if (slash < 0) return NAME.test(key);
  return DNS_SUBDOMAIN.test(key.slice(0, slash)) && NAME.test(key.slice(slash + 1));
}

export function isLabelValue(value: string): boolean {
  return value === '' || NAME.test(value);
}
