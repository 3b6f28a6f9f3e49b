/**
 * The local (host-local compatible) back end's allocations under one data directory
 * (`/var/lib/cni/networks` by default): `<dataDir>/<network>/<address>` files holding
 * `containerId\r\nifname`. One allocation per (network, container id, ifname), made when its
 * oldest file was last written (the file's mtime: an upper bound on when the ADD wrote it).
 * Files of the pre-2018 format (a bare id: no interface) and anything that is not a regular
 * address file are left alone. Freed with the back end's own locked removal
 * (LocalIpam.releaseHeld): only files the attachment still holds.
 */
import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CNI_NAME } from '../model/cni-name.js';
import { formatAddr } from '../ip/addr.js';
import { addrOfName, parseFileContent } from '../local/disk-store.js';
import { LocalIpam } from '../local/local-ipam.js';
import type { AllocationSource, SourcedAllocation } from './allocation-source.js';

/** Longest wait for a network directory's lock (as the plugin's default). */
const LOCK_TIMEOUT_MS = 10_000;

interface LocalAllocation extends SourcedAllocation {
  readonly dir: string;
  readonly files: readonly string[];
}

/** The source for `dataDir` (absolute); a data directory that does not exist holds nothing. */
export function localAllocations(dataDir: string): AllocationSource {
  const name = `local ${dataDir}`;
  const ipam = new LocalIpam({ asyncLockWait: true });
  return {
    name,
    list: () => Promise.resolve(listDataDir(name, dataDir)),
    async release(a) {
      const l = a as LocalAllocation;
      return ipam.releaseHeld({ dir: l.dir, lockTimeoutMs: LOCK_TIMEOUT_MS }, { containerId: l.containerId, ifname: l.ifname }, l.files);
    },
  };
}

function listDataDir(source: string, dataDir: string): LocalAllocation[] {
  let networks: string[];
  try {
    networks = readdirSync(dataDir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new Error(`cannot read ${dataDir}: ${(e as Error).message}`, { cause: e });
  }
  const out: LocalAllocation[] = [];
  for (const network of networks.sort()) {
    const dir = join(dataDir, network);
    if (!CNI_NAME.test(network) || !lstatSync(dir).isDirectory()) continue;
    const byAttachment = new Map<string, { containerId: string; ifname: string; files: string[]; since: number }>();
    for (const file of readdirSync(dir).sort()) {
      const addr = addrOfName(file);
      if (!addr || formatAddr(addr) !== file) continue;
      const path = join(dir, file);
      let content: string;
      let mtime: number;
      try {
        const st = lstatSync(path);
        if (!st.isFile() || st.size > 4096) continue;
        mtime = st.mtimeMs;
        content = readFileSync(path, 'utf8');
      } catch {
        continue; // released meanwhile
      }
      const holder = parseFileContent(content);
      if (!holder || holder.ifname === undefined) continue;
      const key = `${holder.containerId}\r\n${holder.ifname}`;
      const a = byAttachment.get(key);
      if (a) {
        a.files.push(file);
        a.since = Math.min(a.since, mtime);
      } else byAttachment.set(key, { containerId: holder.containerId, ifname: holder.ifname, files: [file], since: mtime });
    }
    for (const a of byAttachment.values()) {
      const since = Math.floor(a.since);
      out.push({
        id: `${source}|${network}|${a.containerId}|${a.ifname}|${a.files.join(',')}|${since}`,
        source,
        network,
        containerId: a.containerId,
        ifname: a.ifname,
        since,
        addresses: a.files,
        dir,
        files: a.files,
      });
    }
  }
  return out;
}
