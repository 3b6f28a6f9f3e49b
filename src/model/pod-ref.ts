/**
 * Which pod an attachment belongs to, as the runtime tells the plugin: containerd and CRI-O pass
 * `K8S_POD_NAMESPACE`, `K8S_POD_NAME` and `K8S_POD_UID` in CNI_ARGS on ADD and DEL. The names
 * follow Kubernetes' rules (`podArgsProblem`): a namespace is a DNS-1123 label (at most 63
 * characters), a pod name a DNS-1123 subdomain (at most 253), so nothing printed or stored
 * from them carries a control character.
 */
import { DNS_SUBDOMAIN, DNS_SUBDOMAIN_HINT } from './node-name.js';

/** A DNS-1123 label: a namespace name. */
export const DNS_LABEL = /^[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?$/;

/** What a DNS-1123 label is, for messages. */
export const DNS_LABEL_HINT = "a DNS label (lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters)";

/** The first of K8S_POD_NAMESPACE / K8S_POD_NAME that is given (non-empty) and breaks its rule, with the rule; undefined when none does. */
export function podArgsProblem(args: ReadonlyMap<string, string>): { readonly field: string; readonly value: string; readonly rule: string } | undefined {
  const namespace = args.get('K8S_POD_NAMESPACE');
  if (namespace && !DNS_LABEL.test(namespace)) return { field: 'K8S_POD_NAMESPACE', value: namespace, rule: DNS_LABEL_HINT };
  const name = args.get('K8S_POD_NAME');
  if (name && !DNS_SUBDOMAIN.test(name)) return { field: 'K8S_POD_NAME', value: name, rule: DNS_SUBDOMAIN_HINT };
  return undefined;
}

export interface PodRef {
  readonly namespace: string;
  readonly name: string;
  /** `metadata.uid`; undefined when the runtime did not pass it. */
  readonly uid?: string;
}

/** The pod named by parsed CNI_ARGS; undefined unless both namespace and name are given. */
export function podRefOfArgs(args: ReadonlyMap<string, string>): PodRef | undefined {
  const namespace = args.get('K8S_POD_NAMESPACE');
  const name = args.get('K8S_POD_NAME');
  if (!namespace || !name) return undefined;
  const uid = args.get('K8S_POD_UID');
  return uid ? { namespace, name, uid } : { namespace, name };
}

/** `namespace/name`, the way operators name a pod. */
export function formatPodRef(p: Pick<PodRef, 'namespace' | 'name'>): string {
  return `${p.namespace}/${p.name}`;
}

/** Parses `NS/NAME` (a flag's or query's value); TypeError naming `what` and the value. */
export function parsePodRef(what: string, text: string): PodRef {
  const m = /^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)\/([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?)$/.exec(text);
  if (!m) throw new TypeError(`invalid ${what} ${JSON.stringify(text)}: want NAMESPACE/NAME (lower-case letters, digits, '-' and, in the name, '.')`);
  return { namespace: m[1]!, name: m[3]! };
}
