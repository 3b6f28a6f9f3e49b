/**
 * The contract between the CNI plugin edge (src/plugin: env + stdin → verb) and its back-end
 * adapters (src/plugin/local-backend.ts, cluster-backend.ts, the agent's warm pool). The edge
 * parses env + stdin, validates the protocol, picks the back end from the `ipam` section, and
 * converts results to the cniVersion the config asks for; back ends see only typed values
 * (the protocol's own types are in src/cni/types.ts).
 */
import type { Attachment, IpamResult, NetConf } from '../cni/types.js';
import type { PodRef } from '../model/pod-ref.js';
import type { PodDirectory } from '../model/pod-directory.js';

export interface IpamRequest extends Attachment {
  readonly netns?: string;
  /** CNI_ARGS, parsed (`IP`, `IgnoreUnknown`, `K8S_POD_NAME`, …). */
  readonly cniArgs: ReadonlyMap<string, string>;
  readonly conf: NetConf;
  /** The pod, from CNI_ARGS `K8S_POD_NAMESPACE`/`K8S_POD_NAME`/`K8S_POD_UID` (src/model/pod-ref.ts). */
  readonly pod?: PodRef;
  /**
   * The pod's annotations as the runtime passed them (`runtimeConfig["io.kubernetes.cri.pod-annotations"]`,
   * when the conflist entry declares that capability); undefined when it passed none.
   */
  readonly podAnnotations?: Readonly<Record<string, string>>;
}

/**
 * An allocation back end. Throw CniError (src/cni/errors.ts) or a service's typed error (mapped by src/cni/cni-error-of.ts) for anything the caller must see
 * with a specific code; other errors become code 999 with their message.
 */
export interface IpamBackend {
  /** Allocate one address per range set / family; all or nothing. */
  add(req: IpamRequest): Promise<IpamResult>;
  /** Release everything held by (containerId, ifname); succeeds when nothing is held. */
  del(req: IpamRequest): Promise<void>;
  /** Succeed if the attachment holds its addresses; else throw. */
  check(req: IpamRequest): Promise<void>;
  /** Release every reservation of this network not in `valid`; keep going, report at the end. */
  gc(conf: NetConf, valid: readonly Attachment[]): Promise<void>;
  /** Throw CniError 50/51 when ADD cannot be served now. */
  status(conf: NetConf): Promise<void>;
}

/**
 * Which back end serves a call, as `selectBackend` chooses it from the parsed config: the
 * labels of the agent's status and metrics. `usePodCidr` is the local back end taking its range
 * from the node's pod CIDR.
 */
export type BackendKind = 'local' | 'usePodCidr' | 'cluster' | 'warm';

/**
 * Long-lived services a hosting process (the node agent, src/agent) lends the back ends so a
 * call costs no store opening and no hint-file reading. Absent in the per-pod plugin, where
 * each back end opens what it needs and closes it at the end of the call.
 */
export interface BackendHost {
  /** The cluster back end's services (see src/cluster/service/cluster-host.ts). */
  readonly cluster?: import('../cluster/service/index.js').ClusterHost;
  /**
   * The local back end waits for a busy directory lock without blocking the event loop, and
   * remembers directories between calls (src/local/scan-cache.ts); `alone()`: no other call is
   * in flight in this process, so an ADD takes the lock at once instead of waiting a turn of the
   * event loop for ADDs to batch with.
   */
  readonly local?: {
    readonly asyncLockWait: boolean;
    readonly scanCache?: import('../local/scan-cache.js').ScanCache;
    readonly alone?: () => boolean;
  };
  /** The warm-pool back end (src/plugin/warm-backend.ts over src/warm/warm-service.ts), when the agent runs one. */
  readonly warm?: IpamBackend;
  /** The agent's watch-fed pod and namespace cache (annotations, owners), when it has an API server. */
  readonly pods?: PodDirectory;
}
