/**
 * The `ipam` section of a network config in cluster mode, validated once into typed values:
 *   {"type": "podipam", "datastore": URL, "nodeName": N, "pools": [names],
 *    "cacheDir": DIR, "routes": [{"dst": CIDR, "gw": IP, "mtu": N, …}]}
 * Keys match case-insensitively (as Go's encoding/json). nodeName defaults to $NODENAME, then
 * $NODE_NAME, then the host name in lower case (src/model/node-name.ts). cacheDir (default /run/podipam/cluster; "" turns it off) holds
 * the node's hint file and lock. stickyFor (a duration: "10m", "90s", "1h", "500ms"; "0" turns
 * stickiness off; default "10m") is how long a sticky pod's addresses are kept for its next
 * incarnation after its DEL. Any other key, or a bad value, is CniError 7 naming the field
 * and the value.
 */
import { CniCode, CniError } from '../cni/errors.js';
import type { NetConf } from '../cni/types.js';
import type { Route } from '../model/route.js';
import { parseRoutes } from './config-decode.js';
import { goField } from '../cni/go-decode.js';
import { parseStoreUrl } from '../store/parse-store-url.js';
import { checkNodeName, defaultNodeName } from '../model/node-name.js';
import { checkResourceName } from '../model/names.js';

export interface ClusterConf {
  readonly datastore: string;
  readonly nodeName: string;
  /** Pools to use, in preference order; undefined = every enabled pool selecting the node. */
  readonly pools: readonly string[] | undefined;
  /** Directory for the node's hint file and lock; null = none. */
  readonly cacheDir: string | null;
  readonly routes: readonly Route[];
  /** How long a sticky pod's addresses are held after its DEL (ms); 0 = stickiness off. */
  readonly stickyForMs: number;
}

export const DEFAULT_CACHE_DIR = '/run/podipam/cluster';
/** The default `stickyFor`: 10 minutes (as the agent's --sticky-for). */
export const DEFAULT_STICKY_FOR_MS = 600_000;
/** The longest `stickyFor`: 30 days. */
const MAX_STICKY_FOR_MS = 30 * 86_400_000;

const KNOWN = ['type', 'datastore', 'nodename', 'pools', 'cachedir', 'routes', 'agent', 'stickyfor'];

/**
 * Datastore URLs that parseStoreUrl accepted (it is pure): an agent validates the same few
 * URLs on every call, so each is parsed once; bounded, cleared when full.
 */
const validUrls = new Set<string>();
const MAX_VALID_URLS = 64;

function bad(field: string, value: unknown, why: string): CniError {
  return new CniError(CniCode.InvalidConfig, `ipam.${field} ${JSON.stringify(value)}: ${why}`);
}

/** Validates `conf.ipam` for the cluster back end; CniError 7 naming field and value. */
export function parseClusterConf(conf: NetConf, env: NodeJS.ProcessEnv = process.env): ClusterConf {
  const ipam = conf.ipam;
  for (const k of Object.keys(ipam)) {
    if (!KNOWN.includes(k.toLowerCase()))
      throw bad(k, ipam[k], `unknown key for the cluster back end (known: type, datastore, nodeName, pools, cacheDir, routes, agent, stickyFor)`);
  }
  const datastore = goField(ipam, 'datastore');
  if (typeof datastore !== 'string') throw bad('datastore', datastore, 'must be a datastore URL string');
  if (!validUrls.has(datastore)) {
    try {
      parseStoreUrl(datastore);
    } catch (e) {
      throw bad('datastore', datastore, (e as Error).message);
    }
    if (validUrls.size >= MAX_VALID_URLS) validUrls.clear();
    validUrls.add(datastore);
  }
  const rawNode = goField(ipam, 'nodeName');
  const nodeName = rawNode ?? defaultNodeName(env);
  try {
    checkNodeName('node name', nodeName);
  } catch (e) {
    throw bad(rawNode === undefined ? 'nodeName (from $NODENAME, $NODE_NAME or the host name)' : 'nodeName', nodeName, (e as Error).message);
  }
  const pools = goField(ipam, 'pools');
  if (pools !== undefined) {
    if (!Array.isArray(pools) || pools.length === 0) throw bad('pools', pools, 'must be a non-empty array of pool names');
    pools.forEach((p, i) => {
      try {
        checkResourceName('pool name', p);
      } catch (e) {
        throw bad(`pools[${i}]`, p, (e as Error).message);
      }
    });
  }
  const cacheDir = goField(ipam, 'cacheDir');
  if (cacheDir !== undefined && (typeof cacheDir !== 'string' || (cacheDir !== '' && !cacheDir.startsWith('/')))) {
    throw bad('cacheDir', cacheDir, 'must be an absolute directory path, or "" for none');
  }
  return {
    datastore,
    nodeName,
    pools: pools as string[] | undefined,
    cacheDir: cacheDir === undefined ? DEFAULT_CACHE_DIR : cacheDir === '' ? null : cacheDir,
    routes: parseRoutes(ipam),
    stickyForMs: stickyForOf(goField(ipam, 'stickyFor')),
  };
}

/** `stickyFor`: "10m", "90s", "1h", "500ms" or "0" (off); CniError 7 naming the key and the value. */
function stickyForOf(v: unknown): number {
  if (v === undefined) return DEFAULT_STICKY_FOR_MS;
  const m = typeof v === 'string' ? /^([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)?$/.exec(v) : null;
  if (!m || (m[2] === undefined && m[1] !== '0')) throw bad('stickyFor', v, 'must be a duration such as "10m", "90s", "1h" or "500ms", or "0" for off');
  const ms = Math.round(Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? 'ms') as 'ms' | 's' | 'm' | 'h']);
  if (ms > MAX_STICKY_FOR_MS) throw bad('stickyFor', v, 'must be at most 30 days (720h)');
  return ms;
}
