/**
 * A CRI client for tests: what kubelet sends a container runtime to start and stop a pod's
 * sandbox (RunPodSandbox with the pod's metadata, labels and annotations; PodSandboxStatus;
 * StopPodSandbox; RemovePodSandbox; ListPodSandbox), over the runtime's unix socket with
 * @grpc/grpc-js. The messages are the subset of runtime.v1 in cri.proto beside this file.
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

export interface CriClient {
  version(): Promise<{ runtimeName: string; runtimeVersion: string; runtimeApiVersion: string }>;
  /** Resolves with the sandbox id; rejects with the runtime's error (its `details` carry the CNI message). */
  runPodSandbox(pod: PodMeta, logDirectory: string): Promise<string>;
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
    status: async (id) => {
      const r = await call<{ status: { id: string; state: number; network: { ip: string; additionalIps: { ip: string }[] } | null } }>('podSandboxStatus', { podSandboxId: id });
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
