/**
 * The result cache, byte-compatible with libcni's (libcni/api.go `cacheAdd`): one file per
 * attachment at `<cacheDir>/results/<network>-<containerID>-<ifname>`, mode 0600 in a 0700
 * directory, holding `json.Marshal(cachedInfo)`:
 *   {"kind":"cniCacheV1","containerId":…,"config":<base64 of the list's bytes>,"ifName":…,
 *    "networkName":…,"netns":…,"cniArgs":[[k,v]…],"capabilityArgs":{…},"result":{…}}
 * in that order, `netns`/`cniArgs`/`capabilityArgs`/`result` left out when empty, and the
 * result and capability args re-marshalled as Go maps (keys sorted). So containerd (go-cni on
 * libcni) and podipam can each DEL what the other ADDed. Reads accept libcni's legacy format
 * too (the file is the bare result).
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { goMarshal, type GoJsonValue } from '../cni/go-json.js';
import { isObject } from '../cni/go-decode.js';
import { goCompare, goMapValue } from './go-map.js';
import { type GoResult, ResultFormatError, resultAsVersion, shapeResult } from './go-result.js';

/** libcni's `CacheDir`. */
export const DEFAULT_CACHE_DIR = '/var/lib/cni';
export const CACHE_KIND = 'cniCacheV1';

/** One attachment as the cache records it (libcni's NetworkAttachment plus the result). */
export interface CachedAttachment {
  readonly containerId: string;
  readonly network: string;
  readonly ifname: string;
  /** The network config list's bytes at ADD time. */
  readonly config: Buffer;
  readonly netns: string;
  readonly cniArgs: readonly (readonly [string, string])[];
  readonly capabilityArgs: Readonly<Record<string, unknown>>;
  /** The final result of the chain, as cached (any version). */
  readonly result: unknown;
}

/** The file's bytes, exactly as libcni's json.Marshal writes them. */
export function encodeCacheFile(a: CachedAttachment): string {
  const caps = Object.keys(a.capabilityArgs).length ? goMapValue(a.capabilityArgs) : undefined;
  const result = isObject(a.result) && Object.keys(a.result).length ? goMapValue(a.result) : undefined;
  const doc: { [k: string]: GoJsonValue } = {
    kind: CACHE_KIND,
    containerId: a.containerId,
    config: a.config.toString('base64'),
    ifName: a.ifname,
    networkName: a.network,
    netns: a.netns || undefined,
    cniArgs: a.cniArgs.length ? a.cniArgs.map(([k, v]) => [k, v]) : undefined,
    capabilityArgs: caps,
    result,
  };
  return goMarshal(doc);
}

/** Decodes a cache file's text; undefined when it is not a cniCacheV1 document. */
export function decodeCacheFile(text: string): CachedAttachment | undefined {
  let o: unknown;
  try {
    o = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isObject(o) || o.kind !== CACHE_KIND) return undefined;
  const s = (k: string) => (typeof o[k] === 'string' ? o[k] : '');
  const args = Array.isArray(o.cniArgs)
    ? o.cniArgs.filter((p): p is [string, string] => Array.isArray(p) && p.length === 2 && p.every((x) => typeof x === 'string'))
    : [];
  return {
    containerId: s('containerId'),
    network: s('networkName'),
    ifname: s('ifName'),
    config: Buffer.from(s('config'), 'base64'),
    netns: s('netns'),
    cniArgs: args,
    capabilityArgs: isObject(o.capabilityArgs) ? o.capabilityArgs : {},
    result: o.result,
  };
}

/** A results directory (`<dir>/results`). */
export class ResultCache {
  readonly dir: string;
  constructor(cacheDir: string = DEFAULT_CACHE_DIR) {
    this.dir = join(cacheDir, 'results');
  }

  /** libcni's getCacheFilePath; the three parts must be non-empty. */
  path(network: string, containerId: string, ifname: string): string {
    if (!network || !containerId || !ifname) {
      throw new TypeError(
        `cache file path requires network name (${JSON.stringify(network)}), container ID (${JSON.stringify(containerId)}), and interface name (${JSON.stringify(ifname)})`,
      );
    }
    return join(this.dir, `${network}-${containerId}-${ifname}`);
  }

  /** Writes the entry (write to a temp file, then rename: never a half-written file). */
  write(a: CachedAttachment): void {
    const file = this.path(a.network, a.containerId, a.ifname);
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const tmp = join(this.dir, `.${a.network}-${a.containerId}-${a.ifname}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
    writeFileSync(tmp, encodeCacheFile(a), { mode: 0o600 });
    renameSync(tmp, file);
  }

  /** The raw text of an attachment's file; undefined when there is none (read errors ignored, as libcni). */
  #readText(network: string, containerId: string, ifname: string): string | undefined {
    try {
      return readFileSync(this.path(network, containerId, ifname), 'utf8');
    } catch {
      return undefined;
    }
  }

  /** The cached entry (cniCacheV1 only); undefined when there is none. */
  get(network: string, containerId: string, ifname: string): CachedAttachment | undefined {
    const t = this.#readText(network, containerId, ifname);
    return t === undefined ? undefined : decodeCacheFile(t);
  }

  /**
   * The cached result converted to `cniVersion` (libcni's getCachedResult, legacy files
   * included); undefined when nothing is cached. Throws ResultFormatError when it cannot be read.
   */
  result(network: string, cniVersion: string, containerId: string, ifname: string): GoResult | undefined {
    const t = this.#readText(network, containerId, ifname);
    if (t === undefined) return undefined;
    const entry = decodeCacheFile(t);
    let raw: unknown = entry?.result;
    if (!entry) {
      try {
        raw = JSON.parse(t);
      } catch (e) {
        throw new ResultFormatError(`cached result of network "${network}" is not JSON: ${(e as Error).message}`, { cause: e });
      }
    }
    if (!isObject(raw)) throw new ResultFormatError(`cached result of network "${network}" is not an object`);
    return resultAsVersion(shapeResult(raw), cniVersion || '0.1.0');
  }

  /** Removes an attachment's file; no error when there is none. */
  delete(network: string, containerId: string, ifname: string): void {
    rmSync(this.path(network, containerId, ifname), { force: true });
  }

  /**
   * Every cached attachment (libcni's GetCachedAttachments): files in name order, unreadable or
   * non-cniCacheV1 ones skipped, optionally only those of one container.
   */
  list(containerId?: string): CachedAttachment[] {
    let names: string[];
    try {
      names = readdirSync(this.dir).sort(goCompare);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw e;
    }
    const out: CachedAttachment[] = [];
    for (const name of names) {
      if (containerId) {
        const pos = name.indexOf(`-${containerId}-`);
        if (pos <= 0 || pos + containerId.length + 2 >= name.length) continue;
      }
      let text: string;
      try {
        text = readFileSync(join(this.dir, name), 'utf8');
      } catch {
        continue;
      }
      const a = decodeCacheFile(text);
      if (!a || !a.ifname || !a.network) continue;
      if (containerId && a.containerId !== containerId) continue;
      out.push(a);
    }
    return out;
  }
}
