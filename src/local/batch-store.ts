/**
 * The store the agent's batched ADDs share under ONE lock acquisition (local-ipam.ts): a
 * `LocalStore` over the locked `DiskStore` that reads the directory once and then keeps what it
 * lists up to date from its own writes, so the second and later ADDs of a batch see exactly what
 * a fresh locked scan would show them (the reservations of the ADDs before them, the moved
 * round-robin hint) without reading the directory again. Every write still goes to disk at
 * once, through the DiskStore, the same way as an unbatched ADD (temporary file hard-linked to
 * the address's name, then `last_reserved_ip.N`): the batch changes how often the directory is
 * opened, locked and scanned, never what is written or when.
 *
 * Sound because nothing else changes the directory while the lock is held (every writer of the
 * layout takes it: host-local, the per-pod plugin, other agents), and only the batch writes
 * through this view.
 */
import { type Addr, formatAddr, tryParseAddr } from '../ip/addr.js';
import { type StoreFile, TMP_FILE, byName, fileContent } from './disk-store.js';
import type { LocalStore } from './local-store.js';
import { TRACING } from '../util/call-trace.js';

const LAST_IP_PREFIX = 'last_reserved_ip.';

export class BatchStore implements LocalStore {
  readonly #disk: LocalStore;
  /** The directory as the first scan read it, updated by this view's writes. */
  #files: Map<string, StoreFile> | undefined;
  #sorted: StoreFile[] | undefined;
  /**
   * The state each name this view wrote is in now (a file, or undefined: gone), for the scan
   * cache (ScanCache.absorb); undefined once a write failed (its state is then not known).
   */
  #known: Map<string, StoreFile | undefined> | undefined = new Map();
  /** PODIPAM_TRACE=1: ms spent in the disk's reservation writes (else 0). */
  writeMs = 0;

  constructor(disk: LocalStore) {
    this.#disk = disk;
  }

  scan(): StoreFile[] {
    if (!this.#files) {
      const files = this.#disk.scan();
      this.#files = new Map(files.map((f) => [f.name, f]));
      this.#sorted = files;
    }
    return (this.#sorted ??= [...this.#files.values()].sort(byName)).slice();
  }

  /** What this view's writes left each name it wrote as; undefined when a write failed. */
  get known(): ReadonlyMap<string, StoreFile | undefined> | undefined {
    return this.#files ? this.#known : undefined;
  }

  reserve(id: string, ifname: string, addr: Addr, rangeSet: number): boolean {
    const known = this.#known;
    this.#known = undefined; // until the write returned
    const t0 = TRACING ? performance.now() : 0;
    const ok = this.#disk.reserve(id, ifname, addr, rangeSet);
    if (TRACING) this.writeMs += performance.now() - t0;
    this.#known = known;
    known?.set(TMP_FILE, undefined); // written and removed again either way
    if (!ok) return false; // created behind the lock's back (its content unknown): the caller skips it
    const name = formatAddr(addr);
    this.#set({ name, content: fileContent(id, ifname) });
    this.#set({ name: LAST_IP_PREFIX + rangeSet, content: name });
    return true;
  }

  lastReserved(rangeSet: number): Addr | undefined {
    // What this view wrote there (read back as DiskStore.lastReserved would); else the disk's.
    const mine = this.#files?.get(LAST_IP_PREFIX + rangeSet);
    if (mine && !mine.refused && mine.content !== undefined) return tryParseAddr(mine.content);
    return this.#disk.lastReserved(rangeSet);
  }

  remove(name: string): boolean {
    const known = this.#known;
    this.#known = undefined;
    const gone = this.#disk.remove(name);
    this.#known = known;
    known?.set(name, undefined);
    if (this.#files?.delete(name)) this.#sorted = undefined;
    return gone;
  }

  #set(f: StoreFile): void {
    this.#known?.set(f.name, f);
    if (!this.#files) return; // nothing scanned yet: the first scan reads it from disk
    this.#files.set(f.name, f);
    this.#sorted = undefined;
  }
}
