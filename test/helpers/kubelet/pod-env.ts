/**
 * A container's environment as kubelet builds it: the Services of the pod's namespace (when
 * `enableServiceLinks`, the default) and the API server's `KUBERNETES_SERVICE_*`, then
 * `envFrom` (ConfigMaps, Secrets, with `prefix`), then `env` in order (`value` with `$(VAR)`
 * expansion over what came before, `valueFrom.fieldRef`, `configMapKeyRef`, `secretKeyRef`,
 * `optional` honoured); Service variables fill only names not set otherwise. Anything else
 * (`resourceFieldRef`, an unknown fieldPath, a missing non-optional source) throws naming the
 * field.
 */
import { expandVars } from './expand-vars.js';
import { listAt, objAt, onlyKnown, UnsupportedFieldError } from './unsupported-field-error.js';

export interface ServiceView {
  readonly name: string;
  /** The address the API server gave it; "None" for a headless Service (no variables). */
  readonly clusterIP: string;
  readonly ports: readonly { readonly name?: string; readonly port: number; readonly protocol?: string }[];
}

/** What the API server knows that a pod's environment draws on. */
export interface EnvSources {
  readonly pod: {
    readonly name: string;
    readonly namespace: string;
    readonly uid: string;
    readonly labels: Readonly<Record<string, string>>;
    readonly annotations: Readonly<Record<string, string>>;
  };
  readonly nodeName: string;
  readonly hostIP: string;
  readonly podIP: string;
  readonly serviceAccountName: string;
  readonly configMaps: Readonly<Record<string, Readonly<Record<string, string>>>>;
  readonly secrets: Readonly<Record<string, Readonly<Record<string, string>>>>;
  /** The pod namespace's Services (for service links). */
  readonly services: readonly ServiceView[];
  /** The `kubernetes` Service in `default` as pods see it. */
  readonly kubernetes: { readonly host: string; readonly port: number };
}

/** The variables of one Service, as kubelet's service links name them. */
export function serviceVars(s: ServiceView): Record<string, string> {
  if (s.clusterIP === 'None' || s.clusterIP === '') return {};
  const name = s.name.toUpperCase().replace(/-/g, '_');
  const first = s.ports[0];
  if (first === undefined) return {};
  const out: Record<string, string> = { [`${name}_SERVICE_HOST`]: s.clusterIP, [`${name}_SERVICE_PORT`]: String(first.port) };
  for (const p of s.ports) if (p.name) out[`${name}_SERVICE_PORT_${p.name.toUpperCase().replace(/-/g, '_')}`] = String(p.port);
  const url = (p: (typeof s.ports)[number]) => `${(p.protocol ?? 'TCP').toLowerCase()}://${s.clusterIP}:${p.port}`;
  out[`${name}_PORT`] = url(first);
  for (const p of s.ports) {
    const proto = (p.protocol ?? 'TCP').toUpperCase();
    const base = `${name}_PORT_${p.port}_${proto}`;
    Object.assign(out, { [base]: url(p), [`${base}_PROTO`]: proto.toLowerCase(), [`${base}_PORT`]: String(p.port), [`${base}_ADDR`]: s.clusterIP });
  }
  return out;
}

const FIELD_PATHS = [
  'metadata.name',
  'metadata.namespace',
  'metadata.uid',
  'spec.nodeName',
  'spec.serviceAccountName',
  'status.hostIP',
  'status.podIP',
  'status.hostIPs',
  'status.podIPs',
];

function fieldValue(fieldPath: string, src: EnvSources, path: string): string {
  const m = /^metadata\.(labels|annotations)\['([^']+)'\]$/.exec(fieldPath);
  if (m) return (m[1] === 'labels' ? src.pod.labels : src.pod.annotations)[m[2]!] ?? '';
  switch (fieldPath) {
    case 'metadata.name':
      return src.pod.name;
    case 'metadata.namespace':
      return src.pod.namespace;
    case 'metadata.uid':
      return src.pod.uid;
    case 'spec.nodeName':
      return src.nodeName;
    case 'spec.serviceAccountName':
      return src.serviceAccountName;
    case 'status.hostIP':
    case 'status.hostIPs':
      return src.hostIP;
    case 'status.podIP':
    case 'status.podIPs':
      return src.podIP;
  }
  throw new UnsupportedFieldError(
    path,
    `fieldPath ${JSON.stringify(fieldPath)} is not one of ${FIELD_PATHS.join(', ')}, metadata.labels['…'], metadata.annotations['…']`,
  );
}

const ENV_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;

/** The container's environment, in the order kubelet hands it to the runtime (name → value). */
export function containerEnv(container: Record<string, unknown>, path: string, src: EnvSources, serviceLinks: boolean): Map<string, string> {
  const env = new Map<string, string>();
  const services: Record<string, string> = {};
  const pod = src.pod;
  if (serviceLinks) for (const s of src.services) Object.assign(services, serviceVars(s));
  Object.assign(services, serviceVars({ name: 'kubernetes', clusterIP: src.kubernetes.host, ports: [{ name: 'https', port: src.kubernetes.port }] }));
  const lookup = (n: string): string | undefined => env.get(n) ?? services[n];

  for (const [i, from] of listAt(container.envFrom, `${path}.envFrom`).entries()) {
    const p = `${path}.envFrom[${i}]`;
    onlyKnown(from, p, ['configMapRef', 'secretRef', 'prefix']);
    const prefix = typeof from.prefix === 'string' ? from.prefix : '';
    const [kind, ref] =
      from.configMapRef !== undefined
        ? (['configMapRef', objAt(from.configMapRef, `${p}.configMapRef`)] as const)
        : (['secretRef', objAt(from.secretRef, `${p}.secretRef`)] as const);
    onlyKnown(ref, `${p}.${kind}`, ['name', 'optional']);
    const name = String(ref.name);
    const data = (kind === 'configMapRef' ? src.configMaps : src.secrets)[name];
    if (data === undefined) {
      if (ref.optional === true) continue;
      throw new UnsupportedFieldError(
        `${p}.${kind}.name`,
        `no ${kind === 'configMapRef' ? 'ConfigMap' : 'Secret'} ${JSON.stringify(name)} in namespace ${pod.namespace} (kubelet would not start the container)`,
      );
    }
    for (const [k, v] of Object.entries(data)) if (ENV_NAME.test(prefix + k)) env.set(prefix + k, v);
  }
  for (const [i, e] of listAt(container.env, `${path}.env`).entries()) {
    const p = `${path}.env[${i}]`;
    onlyKnown(e, p, ['name', 'value', 'valueFrom']);
    const name = String(e.name);
    if (e.valueFrom === undefined) {
      env.set(name, expandVars(typeof e.value === 'string' ? e.value : '', lookup));
      continue;
    }
    const vf = objAt(e.valueFrom, `${p}.valueFrom`);
    onlyKnown(vf, `${p}.valueFrom`, ['fieldRef', 'configMapKeyRef', 'secretKeyRef']);
    if (vf.fieldRef !== undefined) {
      const f = objAt(vf.fieldRef, `${p}.valueFrom.fieldRef`);
      onlyKnown(f, `${p}.valueFrom.fieldRef`, ['fieldPath', 'apiVersion']);
      env.set(name, fieldValue(String(f.fieldPath), src, `${p}.valueFrom.fieldRef.fieldPath`));
      continue;
    }
    const kind = vf.configMapKeyRef !== undefined ? 'configMapKeyRef' : 'secretKeyRef';
    const ref = objAt(vf[kind], `${p}.valueFrom.${kind}`);
    onlyKnown(ref, `${p}.valueFrom.${kind}`, ['name', 'key', 'optional']);
    const value = (kind === 'configMapKeyRef' ? src.configMaps : src.secrets)[String(ref.name)]?.[String(ref.key)];
    if (value === undefined) {
      if (ref.optional === true) continue;
      throw new UnsupportedFieldError(
        `${p}.valueFrom.${kind}`,
        `no key ${JSON.stringify(ref.key)} in ${kind === 'configMapKeyRef' ? 'ConfigMap' : 'Secret'} ${JSON.stringify(ref.name)} (kubelet would not start the container)`,
      );
    }
    env.set(name, value);
  }
  for (const [k, v] of Object.entries(services)) if (!env.has(k)) env.set(k, v);
  return env;
}
