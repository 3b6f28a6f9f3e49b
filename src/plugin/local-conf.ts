/**
 * The CNI config decoded into the `local` back end's configuration (src/local/local-config.ts): exactly host-local's keys (`ranges`, legacy
 * `subnet`/`rangeStart`/`rangeEnd`/`gateway`, `routes`, `dataDir`, `resolvConf`, plus
 * `runtimeConfig.ipRanges`/`ips`, `args.cni.ips` and CNI_ARGS `IP=`), validated once into typed
 * values. Every failure is a CniError naming the field and the value (code 7; 4 for CNI_ARGS).
 */
import { path } from '../util/builtins.js';
import type { NetConf } from '../cni/types.js';
import { parseRoutes } from './config-decode.js';
import { DEFAULT_DATA_DIR, type LocalConfig } from '../local/local-config.js';
import { configError, optString } from './config-decode.js';
import { resolveRangeSets } from './range-sets.js';
import { requestedAddrs } from './requested-addrs.js';
import { CniCode, CniError } from '../cni/errors.js';
import { DEFAULT_LOCK_TIMEOUT_MS } from '../local/file-lock.js';

/** The environment variable that overrides the lock wait (milliseconds, 0–3600000). */
export const LOCK_TIMEOUT_ENV = 'PODIPAM_LOCK_TIMEOUT_MS';

/** PODIPAM_LOCK_TIMEOUT_MS, validated (CniError 4 naming the variable and value); `dflt` when unset or empty. */
export function lockTimeoutOf(env: NodeJS.ProcessEnv, dflt: number): number {
  const v = env[LOCK_TIMEOUT_ENV];
  if (v === undefined || v === '') return dflt;
  if (!/^[0-9]{1,7}$/.test(v) || Number(v) > 3_600_000) {
    throw new CniError(CniCode.InvalidEnv, `${LOCK_TIMEOUT_ENV} must be a whole number of milliseconds from 0 to 3600000: got ${JSON.stringify(v)}`);
  }
  return Number(v);
}

/** Validates `conf.ipam` (and the request-carrying parts of conf and CNI_ARGS) for the local back end. */
export async function loadLocalConfig(conf: NetConf, cniArgs: ReadonlyMap<string, string> = new Map()): Promise<LocalConfig> {
  const ipam = conf.ipam;
  const dataDir = optString(ipam, 'dataDir', 'ipam') || DEFAULT_DATA_DIR;
  if (!path.isAbsolute(dataDir) || dataDir.includes('\0')) {
    throw configError('ipam.dataDir', `${JSON.stringify(dataDir)} must be an absolute path`);
  }
  const resolvConf = optString(ipam, 'resolvConf', 'ipam') || undefined;
  const routes = parseRoutes(ipam);
  const requested = requestedAddrs(conf, cniArgs);
  const rangeSets = await resolveRangeSets(conf);
  const dir = path.join(path.normalize(dataDir), conf.name);
  const lockTimeoutMs = lockTimeoutOf(process.env, DEFAULT_LOCK_TIMEOUT_MS);
  return { name: conf.name, cniVersion: conf.cniVersion, dataDir: path.normalize(dataDir), dir, rangeSets, routes, resolvConf, requested, lockTimeoutMs };
}
