/**
 * The `local` back end: a drop-in for the reference host-local plugin — same configuration, same
 * results, same files, same lock — so a node can switch between the two without losing a
 * reservation. Thin, like host-local's main.go: load config, open the store, allocate per range
 * set (undoing this ADD's own reservations if a later set fails), print, close.
 *
 * Errors keep host-local's texts, with spec codes instead of its catch-all 999:
 * exhaustion → 100 (CniCode.Exhausted); a requested address that is taken, outside every range
 * or the gateway, and a duplicate ADD → 101 (AddressUnavailable); CHECK finding nothing → 102
 * (NotFound); bad config → 7; bad CNI_ARGS → 4; file-system failures → 5.
 */
import { CniCode, CniError } from '../cni/errors.js';
import { failureOf } from '../model/failure.js';
import { prevResultAddrs } from '../cni/prev-result.js';
import type { IpamBackend, IpamRequest } from './ipam-backend.js';
import type { Attachment, IpamResult, IpConfig, NetConf } from '../cni/types.js';
import { candidates, checkRequested, formatRangeSet, isExhausted, rangeIndexOf } from '../alloc/range-allocator.js';
import { type Addr, formatAddr } from '../ip/addr.js';
import { formatAddrWithLen } from '../ip/prefix.js';
import { type LocalConfig, loadLocalConfig } from './local-conf.js';
import type { ScanCache } from '../local/scan-cache.js';
import { crashPoint } from '../util/crash-point.js';
import { DiskStore, addrOfName, listNames, matchesAttachment, matchesLegacy, type StoreFile } from '../local/disk-store.js';

/**
 * `asyncLockWait`: wait for a busy directory lock without blocking the event loop; `scanCache`:
 * remember directories between calls and read only what changed (both: the agent).
 */
export function createLocalBackend(options: { readonly asyncLockWait?: boolean; readonly scanCache?: ScanCache } = {}): IpamBackend {
  return new LocalBackend(options.asyncLockWait ?? false, options.scanCache);
}

export class LocalBackend implements IpamBackend {
  readonly #asyncLockWait: boolean;
  readonly #cache: ScanCache | undefined;

  constructor(asyncLockWait = false, scanCache?: ScanCache) {
    this.#asyncLockWait = asyncLockWait;
    this.#cache = scanCache;
  }

  async add(req: IpamRequest): Promise<IpamResult> {
    const cfg = await loadLocalConfig(req.conf, req.cniArgs);
    const dns = cfg.resolvConf ? (await import('./resolv-conf.js')).readResolvConf(cfg.resolvConf) : undefined;
    const ips = await withStore(cfg, this.#asyncLockWait, this.#cache, (store) => allocate(store, cfg, req));
    crashPoint('local.add.before-answer');
    return { ips, routes: cfg.routes, dns };
  }

  async del(req: IpamRequest): Promise<void> {
    const cfg = await loadLocalConfig(req.conf, req.cniArgs);
    await withStore(cfg, this.#asyncLockWait, this.#cache, (store) => {
      const files = store.scan();
      const errors: string[] = [];
      for (const f of releasable(files, req, cfg.rangeSets.length)) {
        try {
          store.remove(f.name);
          crashPoint('local.del.removed');
        } catch (e) {
          errors.push((e as Error).message);
        }
      }
      // Released what it could; entries it refuses to open are reported after.
      for (const f of files) if (f.refused) errors.push(f.refused.message);
      if (errors.length) throw new CniError(CniCode.IoFailure, errors.join(';'));
    });
  }

  async check(req: IpamRequest): Promise<void> {
    const cfg = await loadLocalConfig(req.conf, req.cniArgs);
    await withStore(cfg, this.#asyncLockWait, this.#cache, (store) => {
      const files = refuseUnsafe(store.scan());
      const mine = files.filter((f) => matchesAttachment(f.content, req.containerId, req.ifname));
      const held = mine.length ? mine : files.filter((f) => matchesLegacy(f.content, req.containerId));
      if (held.length === 0) {
        throw new CniError(CniCode.NotFound, `host-local: Failed to find address added by container ${req.containerId}`);
      }
      checkPrevResult(req, cfg, new Set(held.map((f) => f.name)));
    });
  }

  async gc(conf: NetConf, valid: readonly Attachment[]): Promise<void> {
    const cfg = await loadLocalConfig(conf);
    const keep = new Set(valid.map((a) => `${a.containerId.trim()}\r\n${a.ifname}`));
    const keepIds = new Set(valid.map((a) => a.containerId.trim()));
    await withStore(cfg, this.#asyncLockWait, this.#cache, (store) => {
      const errors: string[] = [];
      for (const f of store.scan()) {
        if (f.refused) {
          errors.push(f.refused.message); // never opened, never removed: the operator looks at it
          continue;
        }
        if (!addrOfName(f.name)) continue; // lock, last_reserved_ip.*, anything not an address
        const c = f.content?.trim();
        if (c !== undefined && (keep.has(c) || keepIds.has(c))) continue;
        try {
          store.remove(f.name);
          crashPoint('local.gc.removed');
        } catch (e) {
          errors.push(`${f.name}: ${(e as Error).message}`);
        }
      }
      if (errors.length) throw new CniError(CniCode.IoFailure, `GC could not release: ${errors.join('; ')}`);
    });
  }

  async status(conf: NetConf): Promise<void> {
    const cfg = await loadLocalConfig(conf);
    // Read without creating or locking anything: a status probe must not write.
    const taken = listNames(cfg.dir).flatMap((n) => {
      const a = addrOfName(n);
      return a && formatAddr(a) === n ? [a] : [];
    });
    cfg.rangeSets.forEach((set, i) => {
      if (isExhausted(set, taken)) {
        throw new CniError(CniCode.NotAvailable, `range set ${i}: no IP addresses available in range set: ${formatRangeSet(set)}`);
      }
    });
  }
}

/**
 * Opens the network directory, runs `fn` under the lock (waiting at most cfg.lockTimeoutMs,
 * then code 11), always unlocks and closes. `fn` runs synchronously once the lock is held; with
 * `asyncWait` only the wait for a lock another process holds yields to the event loop.
 */
async function withStore<T>(cfg: LocalConfig, asyncWait: boolean, cache: ScanCache | undefined, fn: (store: DiskStore) => T): Promise<T> {
  let store: DiskStore;
  try {
    store = DiskStore.open(cfg.dir, cache);
  } catch (e) {
    if (e instanceof CniError || failureOf(e)) throw e;
    throw new CniError(CniCode.IoFailure, `cannot open ${cfg.dir}: ${(e as Error).message}`);
  }
  try {
    if (asyncWait) await store.lockAsync(cfg.lockTimeoutMs);
    else store.lock(cfg.lockTimeoutMs);
    crashPoint('local.lock.held');
    return fn(store);
  } finally {
    store.close(); // closing drops the lock
  }
}

/**
 * host-local's ADD under one lock: per range set, the requested address that falls in it, or
 * the next free one round-robin. On failure releases what this call reserved (host-local
 * releases everything the attachment holds, even addresses of an earlier ADD; we do not).
 */
function allocate(store: DiskStore, cfg: LocalConfig, req: IpamRequest): IpConfig[] {
  const files = refuseUnsafe(store.scan());
  const taken = new Set(files.map((f) => f.name));
  const held = files.flatMap((f) => {
    // Content first: parsing every file's name as an address is the dearer test.
    const mine = matchesAttachment(f.content, req.containerId, req.ifname) || matchesLegacy(f.content, req.containerId);
    const a = mine ? addrOfName(f.name) : undefined;
    return a ? [a] : [];
  });
  const requests = [...cfg.requested];
  const reserved: string[] = [];
  const undo = () => {
    for (const n of reserved) {
      try {
        store.remove(n);
      } catch {
        // keep undoing; a file left behind is matched and released by the attachment's DEL
      }
    }
  };
  const out: IpConfig[] = [];
  try {
    cfg.rangeSets.forEach((set, idx) => {
      const fail = (code: number, msg: string) => new CniError(code, `failed to allocate for range ${idx}: ${msg}`);
      const r = requests.findIndex((a) => rangeIndexOf(set, a) >= 0);
      let got: { addr: Addr; range: number } | undefined;
      if (r >= 0) {
        const want = requests.splice(r, 1)[0]!;
        const check = checkRequested(set, want);
        if (!check.ok) throw fail(CniCode.AddressUnavailable, `requested ip ${formatAddr(want)} is subnet's gateway`);
        if (!store.reserve(req.containerId, req.ifname, want, idx)) {
          throw fail(CniCode.AddressUnavailable, `requested IP address ${formatAddr(want)} is not available in range set ${formatRangeSet(set)}`);
        }
        got = { addr: want, range: check.range };
      } else {
        const dup = held.find((a) => rangeIndexOf(set, a) >= 0);
        if (dup) {
          throw fail(CniCode.AddressUnavailable, `${formatAddr(dup)} has been allocated to ${req.containerId}, duplicate allocation is not allowed`);
        }
        for (const c of candidates(set, store.lastReserved(idx))) {
          const name = formatAddr(c.addr);
          if (taken.has(name)) continue;
          if (store.reserve(req.containerId, req.ifname, c.addr, idx)) {
            got = c;
            break;
          }
          taken.add(name); // created behind the lock's back: skip it
        }
        if (!got) throw fail(CniCode.Exhausted, `no IP addresses available in range set: ${formatRangeSet(set)}`);
      }
      const name = formatAddr(got.addr);
      reserved.push(name);
      taken.add(name);
      const range = set[got.range]!;
      out.push({ address: formatAddrWithLen(got.addr, range.subnet.len), gateway: formatAddr(range.gateway) });
    });
    if (requests.length > 0) {
      throw new CniError(CniCode.AddressUnavailable, `failed to allocate all requested IPs: ${requests.map(formatAddr).join(' ')}`);
    }
  } catch (e) {
    undo();
    if (e instanceof CniError || failureOf(e)) throw e;
    throw new CniError(CniCode.IoFailure, (e as Error).message);
  }
  return out;
}

/** `files`, when none is refused; else the refusal (code 5) naming every such entry. */
function refuseUnsafe(files: readonly StoreFile[]): readonly StoreFile[] {
  const refused = files.flatMap((f) => (f.refused ? [f.refused] : []));
  if (refused.length === 1) throw refused[0]!;
  if (refused.length > 1) throw new CniError(CniCode.IoFailure, refused.map((e) => e.message).join('; '));
  return files;
}

/**
 * The files DEL removes, as host-local does it: every file matching (id, ifname); when there is
 * none, the legacy files matching the bare id. host-local repeats its release once per range set,
 * so with two or more sets the legacy files go as well.
 */
function releasable(files: readonly StoreFile[], req: Attachment, rangeSets: number): StoreFile[] {
  const exact = files.filter((f) => matchesAttachment(f.content, req.containerId, req.ifname));
  if (exact.length > 0 && rangeSets < 2) return exact;
  return [...exact, ...files.filter((f) => matchesLegacy(f.content, req.containerId))];
}

/**
 * CHECK beyond host-local: when `prevResult` lists addresses, each one inside this network's
 * range sets must be held by the attachment.
 */
function checkPrevResult(req: IpamRequest, cfg: LocalConfig, held: ReadonlySet<string>): void {
  for (const { text, addr: a } of prevResultAddrs(req.conf.prevResult)) {
    if (!cfg.rangeSets.some((s) => rangeIndexOf(s, a) >= 0)) continue;
    if (!held.has(formatAddr(a))) {
      throw new CniError(
        CniCode.NotFound,
        `prevResult address ${text} is not held by container ${req.containerId} interface ${req.ifname}`,
      );
    }
  }
}
