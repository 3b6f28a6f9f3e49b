/**
 * What the allocation loop needs of a store, as host-local's `backend.Store` (its disk store is
 * DiskStore, disk-store.ts): reserve an address, the round-robin hint, release, list. Called
 * under the store's lock; the service (local-ipam.ts) takes and drops it.
 */
import type { Addr } from '../ip/addr.js';
import type { StoreFile } from './disk-store.js';

export interface LocalStore {
  /**
   * Reserves `addr` for (id, ifname) unless it is taken, and records it as range set
   * `rangeSet`'s last reserved address. False when taken; throws on I/O errors.
   */
  reserve(id: string, ifname: string, addr: Addr, rangeSet: number): boolean;
  /** The last address reserved in range set `rangeSet` (where round robin resumes), if known. */
  lastReserved(rangeSet: number): Addr | undefined;
  /** Releases the reservation named `name`; false when it was already gone. */
  remove(name: string): boolean;
  /** Every reservation (and other file) with its content, sorted by name. */
  scan(): StoreFile[];
}

/** Who holds a reservation: the attachment (container id, interface name). */
export interface Holder {
  readonly containerId: string;
  readonly ifname: string;
}
