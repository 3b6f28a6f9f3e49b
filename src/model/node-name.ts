/**
 * Node names, one rule everywhere (cluster back end, usePodCidr, the controller, the API, the
 * CLI): a Kubernetes node name is an RFC 1123 DNS subdomain — lower-case letters, digits, '-'
 * and '.', dot-separated labels that start and end with a letter or digit, at most 253
 * characters. Pool and reservation names follow the same rule (Kubernetes object names).
 */
import { os } from '../util/builtins.js';

const LABEL = '[a-z0-9](?:[-a-z0-9]*[a-z0-9])?';

/** A DNS subdomain of 1–253 characters (also the API's check for node and pool names). */
export const DNS_SUBDOMAIN = new RegExp(`^(?=.{1,253}$)${LABEL}(?:\\.${LABEL})*$`);

/** What a DNS subdomain is, for messages. */
export const DNS_SUBDOMAIN_HINT =
  "a DNS subdomain (lower-case letters, digits, '-' and '.', starting and ending with a letter or digit, at most 253 characters)";

/** TypeError naming `field` and the value unless `name` is a node name. */
export function checkNodeName(field: string, name: unknown): asserts name is string {
  if (typeof name !== 'string' || !DNS_SUBDOMAIN.test(name)) {
    throw new TypeError(`invalid ${field} ${JSON.stringify(name)}: must be ${DNS_SUBDOMAIN_HINT}`);
  }
}

/** `name`, checked as a node name (TypeError naming the value otherwise). */
export function validateNodeName(name: string): string {
  checkNodeName('node name', name);
  return name;
}

/** Where the default node name comes from, for help texts and messages (the rule of defaultNodeName). */
export const DEFAULT_NODE_NAME_HINT = '$NODENAME, else $NODE_NAME, else the host name in lower case';

/**
 * This node's name when neither the config nor a flag gives one: $NODENAME (as Calico's CNI
 * plugin reads it), else $NODE_NAME (what Kubernetes manifests usually set from
 * `spec.nodeName`, and the systemd unit's environment file), else the host name in lower case
 * (as the kubelet registers it). Every command and the plugin use this one rule.
 */
export function defaultNodeName(env: NodeJS.ProcessEnv = process.env): string {
  return env.NODENAME || env.NODE_NAME || os.hostname().trim().toLowerCase();
}
