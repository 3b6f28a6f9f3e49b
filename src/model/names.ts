/**
 * Pool and reservation names, which become datastore key segments: Kubernetes object names,
 * the same DNS-subdomain rule as node names (node-name.ts), so none contains "/" (the key
 * separator). Handles: handle-id.ts.
 */
import { DNS_SUBDOMAIN, DNS_SUBDOMAIN_HINT } from './node-name.js';

/** Pool and reservation names: TypeError naming the field and the value unless a DNS subdomain. */
export function checkResourceName(field: string, name: unknown): asserts name is string {
  if (typeof name !== 'string' || !DNS_SUBDOMAIN.test(name)) {
    throw new TypeError(`invalid ${field} ${JSON.stringify(name)}: must be ${DNS_SUBDOMAIN_HINT}`);
  }
}
