/**
 * A pod as kubelet would hand it to a CRI runtime, computed without I/O: the RunPodSandbox
 * config (metadata, labels and annotations, `hostNetwork` as the NODE network namespace,
 * the pod security context, cluster DNS for `ClusterFirst`/`ClusterFirstWithHostNet`), the
 * volumes to lay out, and each init container and container's CreateContainer config:
 * `command`/`args` with `$(VAR)` expansion, the environment (./pod-env.ts), mounts, the
 * effective security context (pod values under container ones: users, `runAsNonRoot`,
 * `readOnlyRootFilesystem`, capabilities, `allowPrivilegeEscalation` as no_new_privs,
 * `privileged`, seccomp; `fsGroup` as a supplemental group and the group of the volumes it
 * owns), and its probes. A pod that uses the API (its service account token is mounted, as
 * it is unless `automountServiceAccountToken: false`) gets the token, CA and namespace at
 * /var/run/secrets/kubernetes.io/serviceaccount, as kubelet's projected volume gives them.
 *
 * Scheduling fields (`tolerations`, `affinity`, `nodeSelector`, `priorityClassName`) are
 * accepted: the node is given, as it is to kubelet. `resources` are accepted and NOT enforced
 * (no cgroup limits here); container `ports` are informational (no hostPort is used).
 * Every other field this does not honour throws an UnsupportedFieldError naming its path.
 */
import type { ContainerConfig, CriMount, PodSandboxConfig, SecurityProfile } from '../cri-client.js';
import { NamespaceMode } from '../cri-client.js';
import { expandVars } from './expand-vars.js';
import { containerEnv, type EnvSources } from './pod-env.js';
import { listAt, objAt, onlyKnown, UnsupportedFieldError } from './unsupported-field-error.js';

type Obj = Record<string, unknown>;

export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** A pod as the API server would hold it after admission (name, namespace, uid set). */
export interface Pod {
  readonly metadata: {
    readonly name: string;
    readonly namespace: string;
    readonly uid: string;
    readonly labels?: Readonly<Record<string, string>>;
    readonly annotations?: Readonly<Record<string, string>>;
  };
  readonly spec: Obj;
}

export interface NodeView extends Omit<EnvSources, 'pod' | 'serviceAccountName'> {
  /** The cluster DNS server and domain (kubelet's --cluster-dns, --cluster-domain). */
  readonly clusterDns: { readonly server: string; readonly domain: string };
  /** The service account token and the API server's CA, as the projected volume gives them. */
  readonly serviceAccount: { readonly token: string; readonly caCrt: string };
  /** Where this pod's own volumes (emptyDir, configMap, secret, token, claims) go on the node. */
  readonly volumeRoot: string;
  readonly logDirectory: string;
}

export type VolumePlan =
  | { readonly name: string; readonly kind: 'hostPath'; readonly path: string; readonly type: string }
  | { readonly name: string; readonly kind: 'dir'; readonly dir: string; readonly memory: boolean; readonly gid?: number }
  | {
      readonly name: string;
      readonly kind: 'files';
      readonly dir: string;
      readonly files: readonly { path: string; content: string; mode: number }[];
      readonly gid?: number;
      readonly nested: readonly string[];
    };

export type ProbeAction =
  | { readonly kind: 'http'; readonly scheme: 'http' | 'https'; readonly host: string; readonly port: number; readonly path: string }
  | { readonly kind: 'tcp'; readonly host: string; readonly port: number }
  | { readonly kind: 'exec'; readonly command: readonly string[] };
export interface Probe {
  readonly action: ProbeAction;
  readonly initialDelaySeconds: number;
  readonly periodSeconds: number;
  readonly timeoutSeconds: number;
  readonly failureThreshold: number;
}

export interface ContainerPlan {
  readonly name: string;
  readonly path: string;
  readonly config: ContainerConfig;
  readonly readiness?: Probe;
  readonly liveness?: Probe;
  readonly startup?: Probe;
}

export interface PodPlan {
  readonly sandbox: PodSandboxConfig;
  readonly volumes: readonly VolumePlan[];
  readonly initContainers: readonly ContainerPlan[];
  readonly containers: readonly ContainerPlan[];
  readonly terminationGracePeriodSeconds: number;
}

const POD_FIELDS = [
  'containers',
  'initContainers',
  'volumes',
  'nodeName',
  'hostNetwork',
  'dnsPolicy',
  'securityContext',
  'serviceAccountName',
  'serviceAccount',
  'automountServiceAccountToken',
  'enableServiceLinks',
  'terminationGracePeriodSeconds',
  'priorityClassName',
  'tolerations',
  'affinity',
  'nodeSelector',
];
const CONTAINER_FIELDS = [
  'name',
  'image',
  'imagePullPolicy',
  'command',
  'args',
  'workingDir',
  'env',
  'envFrom',
  'volumeMounts',
  'securityContext',
  'resources',
  'ports',
  'readinessProbe',
  'livenessProbe',
  'startupProbe',
];
const POD_SC_FIELDS = ['runAsUser', 'runAsGroup', 'runAsNonRoot', 'fsGroup', 'supplementalGroups', 'seccompProfile'];
const CONTAINER_SC_FIELDS = [
  'runAsUser',
  'runAsGroup',
  'runAsNonRoot',
  'readOnlyRootFilesystem',
  'capabilities',
  'allowPrivilegeEscalation',
  'privileged',
  'seccompProfile',
];

const int = (v: unknown, path: string): number | undefined => {
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new UnsupportedFieldError(path, `expected an integer, got ${JSON.stringify(v)}`);
  return v;
};

function seccompOf(o: unknown, path: string): SecurityProfile | undefined {
  if (o === undefined) return undefined;
  const s = objAt(o, path);
  onlyKnown(s, path, ['type', 'localhostProfile']);
  if (s.type === 'RuntimeDefault') return { profileType: 0 };
  if (s.type === 'Unconfined') return { profileType: 1 };
  throw new UnsupportedFieldError(`${path}.type`, `${JSON.stringify(s.type)} is not honoured (RuntimeDefault, Unconfined)`);
}

function planVolumes(pod: Pod, node: NodeView, fsGroup: number | undefined, nestedOf: (volume: string) => string[]): VolumePlan[] {
  const out: VolumePlan[] = [];
  for (const [i, v] of listAt(pod.spec.volumes, 'spec.volumes').entries()) {
    const p = `spec.volumes[${i}]`;
    const name = String(v.name);
    const dir = `${node.volumeRoot}/${name}`;
    const kinds = Object.keys(v).filter((k) => k !== 'name');
    if (kinds.length !== 1) throw new UnsupportedFieldError(p, `expected exactly one volume source, got ${JSON.stringify(kinds)}`);
    const kind = kinds[0]!;
    const src = objAt(v[kind], `${p}.${kind}`);
    if (kind === 'hostPath') {
      onlyKnown(src, `${p}.hostPath`, ['path', 'type']);
      out.push({ name, kind: 'hostPath', path: String(src.path), type: typeof src.type === 'string' ? src.type : '' });
    } else if (kind === 'emptyDir') {
      onlyKnown(src, `${p}.emptyDir`, ['medium']);
      if (src.medium !== undefined && src.medium !== '' && src.medium !== 'Memory')
        throw new UnsupportedFieldError(`${p}.emptyDir.medium`, `${JSON.stringify(src.medium)} is not honoured ("" or Memory)`);
      out.push({ name, kind: 'dir', dir, memory: src.medium === 'Memory', ...(fsGroup !== undefined ? { gid: fsGroup } : {}) });
    } else if (kind === 'persistentVolumeClaim') {
      // A claim is bound to a fresh empty local volume on this node.
      onlyKnown(src, `${p}.persistentVolumeClaim`, ['claimName']);
      out.push({ name, kind: 'dir', dir, memory: false, ...(fsGroup !== undefined ? { gid: fsGroup } : {}) });
    } else if (kind === 'configMap' || kind === 'secret') {
      onlyKnown(src, `${p}.${kind}`, kind === 'configMap' ? ['name', 'defaultMode', 'optional'] : ['secretName', 'defaultMode', 'optional']);
      const ref = String(kind === 'configMap' ? src.name : src.secretName);
      const data = (kind === 'configMap' ? node.configMaps : node.secrets)[ref];
      if (data === undefined && src.optional !== true) {
        throw new UnsupportedFieldError(
          `${p}.${kind}.${kind === 'configMap' ? 'name' : 'secretName'}`,
          `no ${kind === 'configMap' ? 'ConfigMap' : 'Secret'} ${JSON.stringify(ref)} in namespace ${pod.metadata.namespace} (kubelet would keep the pod ContainerCreating)`,
        );
      }
      const mode = int(src.defaultMode, `${p}.${kind}.defaultMode`) ?? 0o644;
      const files = Object.entries(data ?? {}).map(([k, c]) => ({ path: k, content: c, mode }));
      out.push({ name, kind: 'files', dir, files, nested: nestedOf(name), ...(fsGroup !== undefined ? { gid: fsGroup } : {}) });
    } else {
      throw new UnsupportedFieldError(`${p}.${kind}`, 'this volume source is not honoured (hostPath, emptyDir, configMap, secret, persistentVolumeClaim)');
    }
  }
  return out;
}

function probeOf(o: unknown, path: string, hostIP: string, ports: Map<string, number>): Probe | undefined {
  if (o === undefined) return undefined;
  const pr = objAt(o, path);
  onlyKnown(pr, path, ['httpGet', 'tcpSocket', 'exec', 'initialDelaySeconds', 'periodSeconds', 'timeoutSeconds', 'failureThreshold', 'successThreshold']);
  const portOf = (v: unknown, p: string): number => {
    const n = typeof v === 'number' ? v : ports.get(String(v));
    if (n === undefined) throw new UnsupportedFieldError(p, `no container port named ${JSON.stringify(v)}`);
    return n;
  };
  let action: ProbeAction;
  if (pr.httpGet !== undefined) {
    const h = objAt(pr.httpGet, `${path}.httpGet`);
    onlyKnown(h, `${path}.httpGet`, ['host', 'path', 'port', 'scheme']);
    const scheme = h.scheme === undefined || h.scheme === 'HTTP' ? 'http' : h.scheme === 'HTTPS' ? 'https' : undefined;
    if (scheme === undefined) throw new UnsupportedFieldError(`${path}.httpGet.scheme`, `${JSON.stringify(h.scheme)}: HTTP or HTTPS`);
    action = {
      kind: 'http',
      scheme,
      host: typeof h.host === 'string' ? h.host : hostIP,
      port: portOf(h.port, `${path}.httpGet.port`),
      path: typeof h.path === 'string' ? h.path : '/',
    };
  } else if (pr.tcpSocket !== undefined) {
    const t = objAt(pr.tcpSocket, `${path}.tcpSocket`);
    onlyKnown(t, `${path}.tcpSocket`, ['host', 'port']);
    action = { kind: 'tcp', host: typeof t.host === 'string' ? t.host : hostIP, port: portOf(t.port, `${path}.tcpSocket.port`) };
  } else if (pr.exec !== undefined) {
    const e = objAt(pr.exec, `${path}.exec`);
    onlyKnown(e, `${path}.exec`, ['command']);
    action = { kind: 'exec', command: (e.command as string[] | undefined) ?? [] };
  } else {
    throw new UnsupportedFieldError(path, 'no httpGet, tcpSocket or exec handler');
  }
  return {
    action,
    initialDelaySeconds: int(pr.initialDelaySeconds, `${path}.initialDelaySeconds`) ?? 0,
    periodSeconds: int(pr.periodSeconds, `${path}.periodSeconds`) ?? 10,
    timeoutSeconds: int(pr.timeoutSeconds, `${path}.timeoutSeconds`) ?? 1,
    failureThreshold: int(pr.failureThreshold, `${path}.failureThreshold`) ?? 3,
  };
}

/**
 * The CRI requests for `pod` on `node` (see the module comment). Pure: the caller lays out
 * `volumes` (hostPath ones are node paths, checked against their `type`), then runs the
 * sandbox, the init containers in order and the containers.
 */
export function planPod(pod: Pod, node: NodeView): PodPlan {
  const spec = pod.spec;
  onlyKnown(spec, 'spec', POD_FIELDS);
  const hostNetwork = spec.hostNetwork === true;
  const podSc = objAt(spec.securityContext, 'spec.securityContext');
  onlyKnown(podSc, 'spec.securityContext', POD_SC_FIELDS);
  const fsGroup = int(podSc.fsGroup, 'spec.securityContext.fsGroup');
  const supplemental = [...((podSc.supplementalGroups as number[] | undefined) ?? []), ...(fsGroup !== undefined ? [fsGroup] : [])];
  const podSeccomp = seccompOf(podSc.seccompProfile, 'spec.securityContext.seccompProfile');
  const saName = String(spec.serviceAccountName ?? spec.serviceAccount ?? 'default');
  const automount = spec.automountServiceAccountToken !== false;
  const labels = { ...pod.metadata.labels };
  const annotations = { ...pod.metadata.annotations };
  const podIP = hostNetwork ? node.hostIP : '';
  const src: EnvSources = { ...node, pod: { ...pod.metadata, labels, annotations }, serviceAccountName: saName, podIP };

  const dnsPolicy = String(spec.dnsPolicy ?? 'ClusterFirst');
  if (!['ClusterFirst', 'ClusterFirstWithHostNet', 'Default'].includes(dnsPolicy))
    throw new UnsupportedFieldError('spec.dnsPolicy', `${JSON.stringify(dnsPolicy)} is not honoured (ClusterFirst, ClusterFirstWithHostNet, Default)`);
  const clusterDns = dnsPolicy === 'ClusterFirstWithHostNet' || (dnsPolicy === 'ClusterFirst' && !hostNetwork);
  const d = node.clusterDns.domain;
  const netMode = hostNetwork ? NamespaceMode.NODE : NamespaceMode.POD;
  const namespaceOptions = { network: netMode, pid: NamespaceMode.CONTAINER, ipc: NamespaceMode.POD };

  const initList = listAt(spec.initContainers, 'spec.initContainers');
  const mainList = listAt(spec.containers, 'spec.containers');
  const all = [...initList.map((c, i) => ({ c, path: `spec.initContainers[${i}]` })), ...mainList.map((c, i) => ({ c, path: `spec.containers[${i}]` }))];
  const privileged = all.some(({ c }) => objAt(c.securityContext, '').privileged === true);

  const sandbox: PodSandboxConfig = {
    metadata: { name: pod.metadata.name, namespace: pod.metadata.namespace, uid: pod.metadata.uid, attempt: 0 },
    hostname: hostNetwork ? '' : pod.metadata.name,
    logDirectory: node.logDirectory,
    ...(clusterDns
      ? { dnsConfig: { servers: [node.clusterDns.server], searches: [`${pod.metadata.namespace}.svc.${d}`, `svc.${d}`, d], options: ['ndots:5'] } }
      : {}),
    labels: {
      ...labels,
      'io.kubernetes.pod.name': pod.metadata.name,
      'io.kubernetes.pod.namespace': pod.metadata.namespace,
      'io.kubernetes.pod.uid': pod.metadata.uid,
    },
    annotations,
    linux: {
      securityContext: {
        namespaceOptions,
        ...(podSc.runAsUser !== undefined ? { runAsUser: { value: int(podSc.runAsUser, 'spec.securityContext.runAsUser')! } } : {}),
        ...(podSc.runAsGroup !== undefined ? { runAsGroup: { value: int(podSc.runAsGroup, 'spec.securityContext.runAsGroup')! } } : {}),
        supplementalGroups: supplemental,
        privileged,
        seccomp: podSeccomp ?? { profileType: 1 },
      },
    },
  };

  // Mount points inside configMap/secret volumes (kubelet creates them in the volume: it is read-only in the container).
  const mountsOf = (c: Obj, path: string) => listAt(c.volumeMounts, `${path}.volumeMounts`);
  const nestedOf = (volume: string): string[] => {
    const out = new Set<string>();
    for (const { c, path } of all) {
      const ms = mountsOf(c, path);
      for (const m of ms.filter((x) => x.name === volume)) {
        const base = String(m.mountPath).replace(/\/+$/, '');
        for (const o of ms) if (String(o.mountPath).startsWith(`${base}/`)) out.add(String(o.mountPath).slice(base.length + 1));
      }
    }
    return [...out].sort();
  };
  const volumes = planVolumes(pod, node, fsGroup, nestedOf);
  if (automount) {
    volumes.push({
      name: 'kube-api-access',
      kind: 'files',
      dir: `${node.volumeRoot}/kube-api-access`,
      files: [
        { path: 'token', content: node.serviceAccount.token, mode: 0o644 },
        { path: 'ca.crt', content: node.serviceAccount.caCrt, mode: 0o644 },
        { path: 'namespace', content: pod.metadata.namespace, mode: 0o644 },
      ],
      nested: [],
      ...(fsGroup !== undefined ? { gid: fsGroup } : {}),
    });
  }
  const hostPathOf = (v: VolumePlan): string => (v.kind === 'hostPath' ? v.path : v.dir);

  const plan = (c: Obj, path: string): ContainerPlan => {
    onlyKnown(c, path, CONTAINER_FIELDS);
    const name = String(c.name);
    if (c.imagePullPolicy !== undefined && c.imagePullPolicy !== 'IfNotPresent' && c.imagePullPolicy !== 'Never') {
      throw new UnsupportedFieldError(`${path}.imagePullPolicy`, `${JSON.stringify(c.imagePullPolicy)}: the test kubelet never pulls (IfNotPresent, Never)`);
    }
    const env = containerEnv(c, path, src, spec.enableServiceLinks !== false);
    const look = (n: string): string | undefined => env.get(n);
    const sc = objAt(c.securityContext, `${path}.securityContext`);
    onlyKnown(sc, `${path}.securityContext`, CONTAINER_SC_FIELDS);
    const caps = objAt(sc.capabilities, `${path}.securityContext.capabilities`);
    onlyKnown(caps, `${path}.securityContext.capabilities`, ['add', 'drop']);
    const runAsUser = int(sc.runAsUser, `${path}.securityContext.runAsUser`) ?? int(podSc.runAsUser, 'spec.securityContext.runAsUser');
    const runAsGroup = int(sc.runAsGroup, `${path}.securityContext.runAsGroup`) ?? int(podSc.runAsGroup, 'spec.securityContext.runAsGroup');
    const nonRoot = (sc.runAsNonRoot ?? podSc.runAsNonRoot) === true;
    if (nonRoot && runAsUser === undefined)
      throw new UnsupportedFieldError(
        `${path}.securityContext.runAsNonRoot`,
        'cannot be verified without runAsUser (the test kubelet does not read the image USER)',
      );
    if (nonRoot && runAsUser === 0)
      throw new UnsupportedFieldError(`${path}.securityContext.runAsNonRoot`, 'container has runAsNonRoot and runAsUser 0 (kubelet refuses to start it)');
    const mounts: CriMount[] = mountsOf(c, path).map((m, i) => {
      const mp = `${path}.volumeMounts[${i}]`;
      onlyKnown(m, mp, ['name', 'mountPath', 'readOnly', 'subPath']);
      const v = volumes.find((x) => x.name === m.name);
      if (v === undefined) throw new UnsupportedFieldError(`${mp}.name`, `no volume ${JSON.stringify(m.name)} in spec.volumes`);
      const sub = typeof m.subPath === 'string' && m.subPath !== '' ? `/${m.subPath}` : '';
      // configMap, secret and token volumes are read-only whatever the mount says (as kubelet makes them).
      return { containerPath: String(m.mountPath), hostPath: hostPathOf(v) + sub, readonly: m.readOnly === true || v.kind === 'files' };
    });
    if (automount && !mounts.some((m) => m.containerPath === SERVICE_ACCOUNT_DIR))
      mounts.push({ containerPath: SERVICE_ACCOUNT_DIR, hostPath: `${node.volumeRoot}/kube-api-access`, readonly: true });
    const ports = new Map<string, number>();
    for (const [i, p] of listAt(c.ports, `${path}.ports`).entries()) {
      onlyKnown(p, `${path}.ports[${i}]`, ['name', 'containerPort', 'protocol']);
      if (typeof p.name === 'string') ports.set(p.name, Number(p.containerPort));
    }
    const probeHost = hostNetwork ? node.hostIP : podIP;
    const seccomp = seccompOf(sc.seccompProfile, `${path}.securityContext.seccompProfile`) ?? podSeccomp;
    const config: ContainerConfig = {
      metadata: { name, attempt: 0 },
      image: { image: String(c.image), userSpecifiedImage: String(c.image) },
      command: ((c.command as string[] | undefined) ?? []).map((a) => expandVars(a, look)),
      args: ((c.args as string[] | undefined) ?? []).map((a) => expandVars(a, look)),
      workingDir: typeof c.workingDir === 'string' ? c.workingDir : '',
      envs: [...env].map(([key, value]) => ({ key, value })),
      mounts,
      labels: {
        'io.kubernetes.container.name': name,
        'io.kubernetes.pod.name': pod.metadata.name,
        'io.kubernetes.pod.namespace': pod.metadata.namespace,
        'io.kubernetes.pod.uid': pod.metadata.uid,
      },
      annotations: {},
      logPath: `${name}/0.log`,
      linux: {
        securityContext: {
          capabilities: {
            addCapabilities: ((caps.add as string[] | undefined) ?? []).map(String),
            dropCapabilities: ((caps.drop as string[] | undefined) ?? []).map(String),
          },
          privileged: sc.privileged === true,
          namespaceOptions,
          ...(runAsUser !== undefined ? { runAsUser: { value: runAsUser } } : {}),
          ...(runAsGroup !== undefined ? { runAsGroup: { value: runAsGroup } } : {}),
          readonlyRootfs: sc.readOnlyRootFilesystem === true,
          supplementalGroups: supplemental,
          noNewPrivs: sc.allowPrivilegeEscalation === false,
          seccomp: seccomp ?? { profileType: 1 },
        },
      },
    };
    const readiness = probeOf(c.readinessProbe, `${path}.readinessProbe`, probeHost, ports);
    const liveness = probeOf(c.livenessProbe, `${path}.livenessProbe`, probeHost, ports);
    const startup = probeOf(c.startupProbe, `${path}.startupProbe`, probeHost, ports);
    return { name, path, config, ...(readiness ? { readiness } : {}), ...(liveness ? { liveness } : {}), ...(startup ? { startup } : {}) };
  };
  for (const { c, path } of initList.map((c, i) => ({ c, path: `spec.initContainers[${i}]` }))) {
    for (const k of ['readinessProbe', 'livenessProbe', 'startupProbe'])
      if (c[k] !== undefined) throw new UnsupportedFieldError(`${path}.${k}`, 'an init container may not have probes');
  }
  return {
    sandbox,
    volumes,
    initContainers: initList.map((c, i) => plan(c, `spec.initContainers[${i}]`)),
    containers: mainList.map((c, i) => plan(c, `spec.containers[${i}]`)),
    terminationGracePeriodSeconds: int(spec.terminationGracePeriodSeconds, 'spec.terminationGracePeriodSeconds') ?? 30,
  };
}
