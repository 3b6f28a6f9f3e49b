const LABEL = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const SUBDOMAIN = new RegExp(`^${LABEL}(\\.${LABEL})*$`);

/**
 * Checks a node name as Kubernetes does (an RFC 1123 DNS subdomain: lower-case letters, digits,
 * '-' and '.', at most 253 characters). TypeError naming the value otherwise.
 */
export function validateNodeName(name: string): string {
  if (typeof name !== 'string' || name.length === 0 || name.length > 253 || !SUBDOMAIN.test(name)) {
    throw new TypeError(
      `invalid node name ${JSON.stringify(name)}: must be a DNS subdomain (lower-case letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters)`,
    );
  }
  return name;
}
