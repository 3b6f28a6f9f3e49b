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
import { type StoreFile, byName, fileContent } from './disk-store.js';
import type { LocalStore } from './local-store.js';

const LAST_IP_PREFIX = 'last_reserved_ip.';

export class BatchStore implements LocalStore {
  readonly #disk: LocalStore;
  /** The directory as the first scan read it, updated by this view's writes. */
  #files: Map<string, StoreFile> | undefined;
  #sorted: StoreFile[] | undefined;
  /** Writes that went to disk through this view (for the trace and the tests). */
  writes = 0;

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

  reserve(id: string, ifname: string, addr: Addr, rangeSet: number): boolean {
    const ok = this.#disk.reserve(id, ifname, addr, rangeSet);
    if (!ok) return false; // created behind the lock's back: the caller skips it
    this.writes++;
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
    const gone = this.#disk.remove(name);
    if (this.#files?.delete(name)) this.#sorted = undefined;
    return gone;
  }

  #set(f: StoreFile): void {
    if (!this.#files) return; // nothing scanned yet: the first scan reads it from disk
    this.#files.set(f.name, f);
    this.#sorted = undefined;
  }
}
