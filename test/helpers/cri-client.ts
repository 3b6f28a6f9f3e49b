/**
 * A CRI client for tests: what kubelet sends a container runtime to start and stop a pod's
 * sandbox (RunPodSandbox with the pod's metadata, labels and annotations, or a whole
 * PodSandboxConfig; PodSandboxStatus; StopPodSandbox; RemovePodSandbox; ListPodSandbox) and
 * its containers (CreateContainer, StartContainer, StopContainer, RemoveContainer,
 * ContainerStatus, ListContainers, ExecSync for exec probes), over the runtime's unix socket
 * with @grpc/grpc-js. The messages are the subset of runtime.v1 in cri.proto beside this file;
 * the config types below are those messages in proto-loader's camelCase.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { REPO_ROOT } from './plugin.js';

const require = createRequire(import.meta.url);

export interface PodMeta {
  readonly name: string;
  readonly namespace: string;
  readonly uid: string;
  readonly attempt?: number;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
}

export interface SandboxStatus {
  readonly id: string;
  /** 0 = SANDBOX_READY, 1 = SANDBOX_NOTREADY. */
  readonly state: number;
  /** The pod's addresses as the runtime reports them (first the primary). */
  readonly ips: readonly string[];
}

/** runtime.v1 NamespaceMode. */
export const NamespaceMode = { POD: 0, CONTAINER: 1, NODE: 2, TARGET: 3 } as const;
/** runtime.v1 ContainerState. */
export const ContainerState = { CREATED: 0, RUNNING: 1, EXITED: 2, UNKNOWN: 3 } as const;

export interface NamespaceOption {
  network?: number;
  pid?: number;
  ipc?: number;
}
export interface SecurityProfile {
  /** 0 RuntimeDefault, 1 Unconfined, 2 Localhost. */
  profileType: number;
  localhostRef?: string;
}
export interface PodSandboxConfig {
  metadata: { name: string; namespace: string; uid: string; attempt: number };
  hostname: string;
  logDirectory: string;
  dnsConfig?: { servers: string[]; searches: string[]; options: string[] };
  labels: Record<string, string>;
  annotations: Record<string, string>;
  linux: {
    securityContext?: {
      namespaceOptions?: NamespaceOption;
      runAsUser?: { value: number };
      runAsGroup?: { value: number };
      readonlyRootfs?: boolean;
      supplementalGroups?: number[];
      privileged?: boolean;
      seccomp?: SecurityProfile;
    };
    sysctls?: Record<string, string>;
  };
}
export interface CriMount {
  containerPath: string;
  hostPath: string;
  readonly: boolean;
}
export interface ContainerConfig {
  metadata: { name: string; attempt: number };
  image: { image: string; userSpecifiedImage?: string };
  command: string[];
  args: string[];
  workingDir: string;
  envs: { key: string; value: string }[];
  mounts: CriMount[];
  labels: Record<string, string>;
  annotations: Record<string, string>;
  logPath: string;
  linux: {
    securityContext: {
      capabilities: { addCapabilities: string[]; dropCapabilities: string[] };
      privileged: boolean;
      namespaceOptions: NamespaceOption;
      runAsUser?: { value: number };
      runAsGroup?: { value: number };
      readonlyRootfs: boolean;
      supplementalGroups: number[];
      noNewPrivs: boolean;
      seccomp?: SecurityProfile;
    };
  };
}
export interface ContainerStatus {
  readonly id: string;
  readonly name: string;
  /** ContainerState. */
  readonly state: number;
  readonly exitCode: number;
  readonly reason: string;
  readonly message: string;
  readonly logPath: string;
}

export interface CriClient {
  version(): Promise<{ runtimeName: string; runtimeVersion: string; runtimeApiVersion: string }>;
  /** Resolves with the sandbox id; rejects with the runtime's error (its `details` carry the CNI message). */
  runPodSandbox(pod: PodMeta, logDirectory: string): Promise<string>;
  /** RunPodSandbox with a whole config (as kubelet sends it); resolves with the sandbox id. */
  runPodSandboxConfig(config: PodSandboxConfig): Promise<string>;
  createContainer(sandboxId: string, config: ContainerConfig, sandboxConfig: PodSandboxConfig): Promise<string>;
  startContainer(id: string): Promise<void>;
  /** Stops with SIGTERM, then SIGKILL after `timeoutSeconds`. */
  stopContainer(id: string, timeoutSeconds: number): Promise<void>;
  removeContainer(id: string): Promise<void>;
  containerStatus(id: string): Promise<ContainerStatus>;
  listContainers(sandboxId?: string): Promise<{ id: string; sandboxId: string; name: string; state: number }[]>;
  /** Runs `cmd` in the container (an exec probe); `timeoutSeconds` 0 means no limit. */
  execSync(id: string, cmd: readonly string[], timeoutSeconds: number): Promise<{ stdout: string; stderr: string; exitCode: number }>;
  status(id: string): Promise<SandboxStatus>;
  stopPodSandbox(id: string): Promise<void>;
  removePodSandbox(id: string): Promise<void>;
  listPodSandboxes(): Promise<{ id: string; name: string; namespace: string; state: number }[]>;
  close(): void;
}

type Callback = (e: Error | null, r: unknown) => void;
type Rpc = (req: unknown, opts: { deadline: number }, cb: Callback) => void;
interface GrpcModule {
  credentials: { createInsecure(): unknown };
  loadPackageDefinition(d: unknown): { runtime: { v1: { RuntimeService: new (address: string, creds: unknown) => Record<string, Rpc> & { close(): void } } } };
}
interface ProtoLoader {
  loadSync(file: string, o: Record<string, unknown>): unknown;
}

/** A client of the CRI socket at `socket` (an absolute path); each call times out after `timeoutMs`. */
export function criClient(socket: string, timeoutMs = 120_000): CriClient {
  const grpc = require('@grpc/grpc-js') as GrpcModule;
  const loader = require('@grpc/proto-loader') as ProtoLoader;
  const def = loader.loadSync(join(REPO_ROOT, 'test', 'helpers', 'cri.proto'), { keepCase: false, longs: String, defaults: true });
  const Service = grpc.loadPackageDefinition(def).runtime.v1.RuntimeService;
  const c = new Service(`unix://${socket}`, grpc.credentials.createInsecure());
  const call = <T>(method: string, req: unknown): Promise<T> =>
    new Promise((resolve, reject) => {
      c[method]!(req, { deadline: Date.now() + timeoutMs }, (e, r) => (e ? reject(e) : resolve(r as T)));
    });
  return {
    version: () => call('version', {}),
    runPodSandbox: async (pod, logDirectory) => {
      const r = await call<{ podSandboxId: string }>('runPodSandbox', {
        config: {
          metadata: { name: pod.name, namespace: pod.namespace, uid: pod.uid, attempt: pod.attempt ?? 0 },
          hostname: pod.name,
          logDirectory,
          labels: { ...pod.labels },
          annotations: { ...pod.annotations },
          linux: {},
        },
      });
      return r.podSandboxId;
    },
    runPodSandboxConfig: async (config) => (await call<{ podSandboxId: string }>('runPodSandbox', { config })).podSandboxId,
    createContainer: async (podSandboxId, config, sandboxConfig) =>
      (await call<{ containerId: string }>('createContainer', { podSandboxId, config, sandboxConfig })).containerId,
    startContainer: async (containerId) => {
      await call('startContainer', { containerId });
    },
    stopContainer: async (containerId, timeout) => {
      await call('stopContainer', { containerId, timeout });
    },
    removeContainer: async (containerId) => {
      await call('removeContainer', { containerId });
    },
    containerStatus: async (containerId) => {
      const r = await call<{
        status: { id: string; metadata: { name: string } | null; state: number; exitCode: number; reason: string; message: string; logPath: string };
      }>('containerStatus', { containerId });
      const s = r.status;
      return { id: s.id, name: s.metadata?.name ?? '', state: s.state, exitCode: s.exitCode, reason: s.reason, message: s.message, logPath: s.logPath };
    },
    listContainers: async (podSandboxId) => {
      const r = await call<{ containers: { id: string; podSandboxId: string; state: number; metadata: { name: string } | null }[] }>('listContainers', {
        filter: { podSandboxId: podSandboxId ?? '' },
      });
      return r.containers.map((x) => ({ id: x.id, sandboxId: x.podSandboxId, name: x.metadata?.name ?? '', state: x.state }));
    },
    execSync: async (containerId, cmd, timeout) => {
      const r = await call<{ stdout: Buffer; stderr: Buffer; exitCode: number }>('execSync', { containerId, cmd, timeout });
      return { stdout: r.stdout.toString('utf8'), stderr: r.stderr.toString('utf8'), exitCode: r.exitCode };
    },
    status: async (id) => {
      const r = await call<{ status: { id: string; state: number; network: { ip: string; additionalIps: { ip: string }[] } | null } }>('podSandboxStatus', {
        podSandboxId: id,
      });
      const n = r.status.network;
      return { id: r.status.id, state: r.status.state, ips: n ? [n.ip, ...n.additionalIps.map((x) => x.ip)].filter((x) => x !== '') : [] };
    },
    stopPodSandbox: async (id) => {
      await call('stopPodSandbox', { podSandboxId: id });
    },
    removePodSandbox: async (id) => {
      await call('removePodSandbox', { podSandboxId: id });
    },
    listPodSandboxes: async () => {
      const r = await call<{ items: { id: string; state: number; metadata: { name: string; namespace: string } | null }[] }>('listPodSandbox', {});
      return r.items.map((s) => ({ id: s.id, state: s.state, name: s.metadata?.name ?? '', namespace: s.metadata?.namespace ?? '' }));
    },
    close: () => c.close(),
  };
}

/** The message of a failed CRI call (gRPC puts the runtime's error in `details`). */
export function criErrorText(e: unknown): string {
  const d = (e as { details?: unknown }).details;
  return typeof d === 'string' && d !== '' ? d : e instanceof Error ? e.message : String(e);
}
