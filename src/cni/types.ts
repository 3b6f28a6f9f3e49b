/**
 * The CNI protocol's values as podipam reads and writes them: the network configuration from
 * stdin, an attachment, and a result in the 1.x shape (src/cni/result.ts prints it in the
 * config's version; src/cni/prev-result.ts reads a prevResult of any version into it).
 */
import type { Route } from '../model/route.js';

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
  /**
   * The text `raw` was parsed from (stdin), when the plugin's edge decoded it: what a back end's
   * cache of decoded configs keys on (the bytes decide everything decoded from them).
   */
  readonly source?: string;
}

/** One attachment: what ADD/DEL/CHECK identify and GC's valid-attachments list holds. */
export interface Attachment {
  readonly containerId: string;
  readonly ifname: string;
}

/** An address in a result, in the 1.x shape: "10.1.0.5/24" plus an optional gateway. */
export interface IpConfig {
  readonly address: string;
  readonly gateway?: string;
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
