/**
 * `"subnet": "usePodCidr"`: the node's pod CIDR(s), as the node-CIDR controller recorded them in
 * podipam's datastore (`nodes/<nodeName>`), with a per-node cache file so pods can still start
 * while the datastore is unreachable. Runs in the CNI plugin: the store is imported lazily.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { replaceFile } from '../util/replace-file.js';
import { join } from 'node:path';
import { decodeNodeRecord, nodeKey } from '../model/node-record.js';
import { validateNodeName } from '../model/node-name.js';
import { formatPrefix, parsePrefix, type Prefix } from '../ip/index.js';
import { StoreUnavailableError } from '../store/errors.js';

export interface PodCidrSourceOptions {
  /** Datastore URL (`ipam.datastore`). */
  readonly datastore: string;
  /** `ipam.nodeName`. */
  readonly nodeName: string;
  /** Where the cache file goes (the plugin's data directory). */
  readonly cacheDir: string;
  /** Per-request datastore timeout (default: the store's, 2 s). */
  readonly timeoutMs?: number;
}

/**
 * The node has no record (`unknown-node`: not registered yet, or a wrong nodeName) or no pod
 * CIDR yet (`no-cidr`: the controller has not got to it, or the cluster CIDRs are full). Both
 * are usually transient at node start-up: the local back end reports CNI code 11.
 */
export class PodCidrNotAssignedError extends Error {
  override readonly name = 'PodCidrNotAssignedError';
  readonly failure = 'transient';
  constructor(
    readonly nodeName: string,
    readonly reason: 'unknown-node' | 'no-cidr',
    readonly datastore: string,
  ) {
    super(
      reason === 'unknown-node'
        ? `usePodCidr: node "${nodeName}" is not registered in datastore ${datastore} (podipam node add, or the controller's Kubernetes adapter, registers it)`
        : `usePodCidr: node "${nodeName}" has no pod CIDR yet in datastore ${datastore} (the node-CIDR controller assigns one: is it running?)`,
    );
  }
}

interface CacheFile {
  readonly nodeName: string;
  readonly datastore: string;
  readonly podCIDRs: readonly string[];
}

/** The cache file of `nodeName` in `cacheDir`. */
export function podCidrCachePath(cacheDir: string, nodeName: string): string {
  return join(cacheDir, `podcidr-${nodeName}.json`);
}

/**
 * The pod CIDRs recorded for `nodeName`, in record order (one per family, cluster-CIDR order).
 * On success the cache file is refreshed (write to a temp file, rename) when its content
 * changed; a cache that cannot be written is not an error. When the datastore is unreachable
 * (StoreUnavailableError) the cached CIDRs are returned if a cache for this node and datastore
 * exists; otherwise that error is thrown. Throws TypeError for a nodeName that is not a node
 * name, PodCidrNotAssignedError as described there, and the store's other errors unchanged.
 */
export async function resolvePodCidrs(options: PodCidrSourceOptions): Promise<Prefix[]> {
  const { datastore, nodeName, cacheDir } = options;
  validateNodeName(nodeName);
  const cachePath = podCidrCachePath(cacheDir, nodeName);
  let value: { key: string; value: string } | undefined;
  try {
    const { openStore } = await import('../store/open-store.js');
    // One read and done (often in a per-call plugin): etcd's JSON gateway, whose client loads faster.
    const store = await openStore(datastore, { oneShot: true, ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }) });
    try {
      value = await store.get(nodeKey(nodeName));
    } finally {
      await store.close();
    }
  } catch (e) {
    const cached = e instanceof StoreUnavailableError ? readCache(cachePath, nodeName, datastore) : undefined;
    if (cached) return cached;
    throw e;
  }
  if (!value) throw new PodCidrNotAssignedError(nodeName, 'unknown-node', datastore);
  const record = decodeNodeRecord(value.key, value.value);
  const cidrs = record.podCIDRs.map((c) => parsePrefix(c));
  if (cidrs.length === 0) throw new PodCidrNotAssignedError(nodeName, 'no-cidr', datastore);
  writeCache(cachePath, { nodeName, datastore, podCIDRs: cidrs.map(formatPrefix) });
  return cidrs;
}

function readCache(path: string, nodeName: string, datastore: string): Prefix[] | undefined {
  try {
    const c = JSON.parse(readFileSync(path, 'utf8')) as Partial<CacheFile>;
    if (c.nodeName !== nodeName || c.datastore !== datastore || !Array.isArray(c.podCIDRs) || c.podCIDRs.length === 0) return undefined;
    return c.podCIDRs.map((s) => parsePrefix(String(s)));
  } catch {
    return undefined;
  }
}

function writeCache(path: string, content: CacheFile): void {
  const text = `${JSON.stringify(content)}\n`;
  try {
    if (readFileSync(path, 'utf8') === text) return;
  } catch {
    // absent or unreadable: write it
  }
  try {
    mkdirSync(join(path, '..'), { recursive: true });
    replaceFile(path, text, 0o644);
  } catch {
    // The cache only helps while the datastore is down; failing to keep it must not fail ADD.
  }
}
