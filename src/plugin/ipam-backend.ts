/**
 * The contract between the CNI plugin edge (src/cni, src/main.ts) and the allocation back ends
 * (src/local, src/cluster, later src/agent). The edge parses env + stdin, validates the
 * protocol, picks the back end from the `ipam` section, and converts results to the
 * cniVersion the config asks for; back ends only see these typed values.
 */

/** The network configuration read from stdin (only the fields IPAM cares about are typed). */
export interface NetConf {
  readonly cniVersion: string;
  readonly name: string;
  readonly type?: string;
  /** The raw `ipam` object; each back end validates its own keys into typed config. */
  readonly ipam: Readonly<Record<string, unknown>>;
  readonly args?: Readonly<Record<string, unknown>>;
  readonly runtimeConfig?: Readonly<Record<string, unknown>>;
  readonly prevResult?: unknown;
  /** The full parsed object, for back ends that need other keys. */
  readonly raw: Readonly<Record<string, unknown>>;
}

/** One attachment: what ADD/DEL/CHECK identify and GC's valid-attachments list holds. */
export interface Attachment {
  readonly containerId: string;
  readonly ifname: string;
}

export interface IpamRequest extends Attachment {
  readonly netns?: string;
  /** CNI_ARGS, parsed (`IP`, `IgnoreUnknown`, `K8S_POD_NAME`, …). */
  readonly cniArgs: ReadonlyMap<string, string>;
  readonly conf: NetConf;
}

/** An address in a result, in the 1.x shape: "10.1.0.5/24" plus an optional gateway. */
export interface IpConfig {
  readonly address: string;
  readonly gateway?: string;
}

export interface Route {
  readonly dst: string;
  readonly gw?: string;
  readonly [key: string]: unknown;
}

export interface Dns {
  readonly nameservers?: readonly string[];
  readonly domain?: string;
  readonly search?: readonly string[];
  readonly options?: readonly string[];
}

/** An IPAM result in the 1.x shape; the edge converts it to older versions. */
export interface IpamResult {
  readonly ips: readonly IpConfig[];
  readonly routes?: readonly Route[];
  readonly dns?: Dns;
}

/**
 * An allocation back end. Throw CniError (src/cni/errors.ts) for anything the caller must see
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
 * Long-lived services a hosting process (the node agent, src/agent) lends the back ends so a
 * call costs no store opening and no hint-file reading. Absent in the per-pod plugin, where
 * each back end opens what it needs and closes it at the end of the call.
 */
export interface BackendHost {
  /** The cluster back end's services (see src/cluster/cluster-host.ts). */
  readonly cluster?: import('../cluster/cluster-host.js').ClusterHost;
  /** The local back end waits for a busy directory lock without blocking the event loop. */
  readonly local?: { readonly asyncLockWait: boolean };
  /** The agent's warm-pool back end (src/agent/warm-service.ts), when the agent runs one. */
  readonly warm?: IpamBackend;
}
