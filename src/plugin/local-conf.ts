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

/**
 * Decoded configs by what they are decoded from: the config's text (`conf.source`), CNI_ARGS and
 * PODIPAM_LOCK_TIMEOUT_MS. The agent decodes the same network config for every pod; the text
 * decides everything read from it, so an equal key gives an equal result, and any changed byte
 * is another key. Not kept: a config asking for the node's pod CIDR (read from outside the
 * text, or in a text with a `\u` escape, which could spell that token), a text longer than MAX_CACHED_TEXT, a config that failed. At most CACHE_ENTRIES, the
 * oldest dropped first; the values are frozen (shared by calls).
 */
const cache = new Map<string, LocalConfig>();
const CACHE_ENTRIES = 32;
const MAX_CACHED_TEXT = 16 << 10;

/** Validates `conf.ipam` (and the request-carrying parts of conf and CNI_ARGS) for the local back end. */
export async function loadLocalConfig(conf: NetConf, cniArgs: ReadonlyMap<string, string> = new Map()): Promise<LocalConfig> {
  const text = conf.source;
  const key =
    text !== undefined && text.length <= MAX_CACHED_TEXT && !text.includes('usePodCidr') && !text.includes('\\u')
      ? cacheKey(text, cniArgs, process.env[LOCK_TIMEOUT_ENV])
      : undefined;
  const hit = key === undefined ? undefined : cache.get(key);
  if (hit) return hit;
  const cfg = await decodeLocalConfig(conf, cniArgs);
  if (key !== undefined) {
    if (cache.size >= CACHE_ENTRIES) cache.delete(cache.keys().next().value as string);
    cache.set(key, frozen(cfg));
  }
  return cfg;
}

/**
 * One string for the three: environment values hold no NUL, and the text, valid JSON, holds
 * none either, so NUL-terminated fields (and the text last) cannot run into each other. Of
 * CNI_ARGS only what the decoding reads: `IP` and `IgnoreUnknown` as given, and whether any other
 * arg is there (refused unless IgnoreUnknown: a failure, never kept) — not the values of the
 * others, the pod's `K8S_POD_*` among them, which differ at every pod's call (keyed by them, no
 * runtime's call ever hit the cache).
 */
function cacheKey(text: string, cniArgs: ReadonlyMap<string, string>, lockTimeout: string | undefined): string {
  let key = lockTimeout === undefined ? '\0' : `=${lockTimeout}\0`;
  let others = false;
  for (const [k, v] of cniArgs) {
    if (k === 'IP' || k === 'IgnoreUnknown') key += `${k}\0${v}\0`;
    else others = true;
  }
  return `${key}${others ? '+' : ''}\0${text}`;
}

function frozen(cfg: LocalConfig): LocalConfig {
  for (const set of cfg.rangeSets) {
    for (const r of set) Object.freeze(r);
    Object.freeze(set);
  }
  Object.freeze(cfg.rangeSets);
  Object.freeze(cfg.routes);
  Object.freeze(cfg.requested);
  return Object.freeze(cfg);
}

async function decodeLocalConfig(conf: NetConf, cniArgs: ReadonlyMap<string, string>): Promise<LocalConfig> {
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
