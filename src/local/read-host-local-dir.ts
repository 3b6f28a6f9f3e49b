/**
 * Reads the reservations of a host-local data directory (for `podipam import host-local`, which
 * adopts them into the cluster store): each file `<ip>` holding `containerId\r\nifname` (or the
 * pre-2018 bare id) is one reservation. Reads only; never takes the lock or writes.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { CNI_NAME } from '../model/cni-name.js';
import { reservedNetwork } from '../model/reserved-network.js';
import { parseFileContent } from './disk-store.js';
import { type Addr, tryParseAddr } from '../ip/addr.js';

/**
 * The directory cannot be read as asked: `problem` says why; `field` names the option at fault
 * (`network`: the network name asked for), if one is.
 */
export class HostLocalDirError extends Error {
  override readonly name = 'HostLocalDirError';
  constructor(
    readonly problem: string,
    readonly field?: 'network',
    options?: ErrorOptions,
  ) {
    super(field ? `${field} ${problem}` : problem, options);
  }
}

/** One reservation read from a host-local directory. */
export interface HostLocalReservation {
  readonly network: string;
  readonly ip: Addr;
  readonly containerId: string;
  readonly ifname: string;
  /** True for a pre-2018 file holding only the container id (ifname assumed "eth0"). */
  readonly legacy: boolean;
  readonly file: string;
}

/**
 * Reads every reservation under `dir`: either one network's directory (IP-named files, the
 * network named by `network` or the directory's name) or a host-local `dataDir` holding one
 * directory per network (all of them, or only `network`). `lock` and `last_reserved_ip.*`
 * are skipped; `skipped` lists other files that are not reservations, with the reason.
 */
export function readHostLocalDir(dir: string, network?: string): { reservations: HostLocalReservation[]; skipped: string[] } {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (e) {
    throw new HostLocalDirError(`cannot read host-local directory ${dir}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, undefined, {
      cause: e,
    });
  }
  const reservations: HostLocalReservation[] = [];
  const skipped: string[] = [];
  const ipFiles = names.filter((n) => tryParseAddr(fileToIp(n)) !== undefined && statSync(join(dir, n)).isFile());
  if (ipFiles.length > 0 || names.includes('lock') || names.some((n) => n.startsWith('last_reserved_ip'))) {
    const net = network ?? basename(dir);
    if (!CNI_NAME.test(net)) throw new HostLocalDirError(`${JSON.stringify(net)} is not a valid CNI network name`, 'network');
    readNetwork(dir, net, names, reservations, skipped);
  } else {
    for (const n of names.sort()) {
      const sub = join(dir, n);
      if (!statSync(sub).isDirectory() || (network !== undefined && n !== network)) continue;
      readNetwork(sub, n, readdirSync(sub), reservations, skipped);
    }
    if (network !== undefined && !names.includes(network)) {
      throw new HostLocalDirError(`${network}: no directory ${join(dir, network)} and no reservation files in ${dir}`, 'network');
    }
  }
  return { reservations, skipped };
}

function readNetwork(dir: string, network: string, names: readonly string[], out: HostLocalReservation[], skipped: string[]): void {
  // Its handles would be taken for the node agent's warm stock: refuse before anything is written.
  const reserved = reservedNetwork('network', network);
  if (reserved !== undefined) throw new HostLocalDirError(`${dir}: ${reserved}`);
  for (const n of [...names].sort()) {
    if (n === 'lock' || n.startsWith('last_reserved_ip')) continue;
    const file = join(dir, n);
    const ip = tryParseAddr(fileToIp(n));
    if (!ip) {
      skipped.push(`${file}: not named after an IP address`);
      continue;
    }
    if (!statSync(file).isFile()) continue;
    // host-local writes "id\r\nifname" with no trailing newline; trim as its matcher does.
    const text = readFileSync(file, 'utf8').trim();
    const held = parseFileContent(text);
    if (!held) {
      skipped.push(`${file}: content ${JSON.stringify(text.slice(0, 60))} is not "containerId\\r\\nifname"`);
      continue;
    }
    out.push({ network, ip, containerId: held.containerId, ifname: held.ifname ?? 'eth0', legacy: held.ifname === undefined, file });
  }
}

/** host-local on Windows writes ':' as '_' in file names. */
function fileToIp(name: string): string {
  return name.includes('_') && !name.includes('.') ? name.replace(/_/g, ':') : name;
}
