/**
 * The `local` back end's CNI adapter: a drop-in for the reference host-local plugin — same
 * configuration, same results, same files, same lock. Thin, like host-local's main.go: decode
 * the config (local-conf.ts), call the service (src/local/local-ipam.ts), map its typed
 * failures to CNI codes through the one table (src/cni/cni-error-of.ts), shape the result.
 *
 * Errors keep host-local's texts, with spec codes instead of its catch-all 999:
 * exhaustion → 100; a requested address that is taken, outside every range or the gateway, and
 * a duplicate ADD → 101; CHECK finding nothing → 102; bad config → 7; bad CNI_ARGS → 4;
 * file-system failures → 5; a busy lock → 11; STATUS with an exhausted range set → 50.
 */
import { cniErrorOf } from '../cni/cni-error-of.js';
import { prevResultAddrs } from '../cni/prev-result.js';
import type { IpamBackend, IpamRequest } from './ipam-backend.js';
import type { Attachment, IpamResult, NetConf } from '../cni/types.js';
import { formatAddr } from '../ip/addr.js';
import { formatAddrWithLen } from '../ip/prefix.js';
import { loadLocalConfig } from './local-conf.js';
import { LocalIpam, type LocalIpamOptions } from '../local/local-ipam.js';

/** The local back end with LocalIpam's options (the agent's: asyncLockWait, scanCache, alone). */
export function createLocalBackend(options: LocalIpamOptions = {}): IpamBackend {
  return new LocalBackend(options);
}

/** Runs `fn`; what it throws becomes the CNI error of `verb` (one table). */
async function mapped<T>(verb: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    throw cniErrorOf(e, verb);
  }
}

export class LocalBackend implements IpamBackend {
  readonly #ipam: LocalIpam;

  constructor(options: LocalIpamOptions = {}) {
    this.#ipam = new LocalIpam(options);
  }

  add(req: IpamRequest): Promise<IpamResult> {
    return mapped('ADD', async () => {
      const cfg = await loadLocalConfig(req.conf, req.cniArgs);
      const { allocations, dns } = await this.#ipam.add(cfg, req);
      const ips = allocations.map(({ addr, range }) => ({ address: formatAddrWithLen(addr, range.subnet.len), gateway: formatAddr(range.gateway) }));
      return { ips, routes: cfg.routes, dns };
    });
  }

  del(req: IpamRequest): Promise<void> {
    return mapped('DEL', async () => this.#ipam.del(await loadLocalConfig(req.conf, req.cniArgs), req));
  }

  check(req: IpamRequest): Promise<void> {
    return mapped('CHECK', async () => this.#ipam.check(await loadLocalConfig(req.conf, req.cniArgs), req, prevResultAddrs(req.conf.prevResult)));
  }

  gc(conf: NetConf, valid: readonly Attachment[]): Promise<void> {
    return mapped('GC', async () => this.#ipam.gc(await loadLocalConfig(conf), valid));
  }

  status(conf: NetConf): Promise<void> {
    return mapped('STATUS', async () => this.#ipam.status(await loadLocalConfig(conf)));
  }
}
