/**
 * The local back end's configuration, validated: host-local's keys read into typed values
 * (the CNI config is decoded into it at the plugin edge, src/plugin/local-conf.ts). Every field
 * is final: the service checks nothing again.
 */
import type { Route } from '../model/route.js';
import type { Addr } from '../ip/addr.js';
import type { AllocRangeSet } from './range-allocator.js';

/** host-local's default state directory. */
export const DEFAULT_DATA_DIR = '/var/lib/cni/networks';

export interface LocalConfig {
  /** The network name: the directory under dataDir (already checked against the name class). */
  readonly name: string;
  readonly cniVersion: string;
  /** Absolute, normalised. */
  readonly dataDir: string;
  /** `<dataDir>/<name>`: everything this back end writes is inside it. */
  readonly dir: string;
  readonly rangeSets: readonly AllocRangeSet[];
  /** Routes, normalised as host-local prints them (dst keeps host bits, canonical text). */
  readonly routes: readonly Route[];
  readonly resolvConf?: string;
  /** Requested addresses, CNI_ARGS `IP` first, then `args.cni.ips`, then `runtimeConfig.ips`; no duplicates. */
  readonly requested: readonly Addr[];
  /** Longest wait for the directory's lock (PODIPAM_LOCK_TIMEOUT_MS, default 10 s); then LockTimeoutError. */
  readonly lockTimeoutMs: number;
}
