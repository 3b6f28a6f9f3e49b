/**
 * host-local's ADD, under the store's lock: per range set, the requested address that falls in
 * it, or the next free one round robin from the set's last reserved address. On failure
 * releases what this call reserved (host-local releases everything the attachment holds, even
 * addresses of an earlier ADD; we do not). An attachment already holding an address of a range
 * set gets no second one there: "duplicate allocation is not allowed" (code 101) — host-local
 * says so for an automatic address but reserves a requested one (CNI_ARGS IP=) beside it; we
 * refuse that too, so a repeated ADD never gives one attachment two addresses.
 */
import { type Addr, formatAddr } from '../ip/addr.js';
import { failureOf } from '../model/failure.js';
import { addrOfName, matchesAttachment, matchesLegacy } from './disk-store.js';
import { AllocationError, DirectoryError, UnallocatedRequestsError } from './errors.js';
import type { LocalConfig } from './local-config.js';
import type { Holder, LocalStore } from './local-store.js';
import { type AllocRange, candidates, checkRequested, formatRangeSet, rangeIndexOf } from './range-allocator.js';
import { refuseUnsafe } from './refuse-unsafe.js';

/** One address handed out, with the range it came from (its subnet and gateway). */
export interface Allocation {
  readonly addr: Addr;
  readonly range: AllocRange;
}

export function allocate(store: LocalStore, cfg: Pick<LocalConfig, 'rangeSets' | 'requested'>, who: Holder): Allocation[] {
  const files = refuseUnsafe(store.scan());
  const taken = new Set(files.map((f) => f.name));
  const held = files.flatMap((f) => {
    // Content first: parsing every file's name as an address is the dearer test.
    const mine = matchesAttachment(f.content, who.containerId, who.ifname) || matchesLegacy(f.content, who.containerId);
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
  const out: Allocation[] = [];
  try {
    cfg.rangeSets.forEach((set, idx) => {
      const r = requests.findIndex((a) => rangeIndexOf(set, a) >= 0);
      let got: { addr: Addr; range: number } | undefined;
      const dup = held.find((a) => rangeIndexOf(set, a) >= 0);
      if (r >= 0) {
        const want = requests.splice(r, 1)[0]!;
        if (dup && formatAddr(dup) !== formatAddr(want)) {
          throw new AllocationError(
            'address-unavailable',
            idx,
            `${formatAddr(dup)} has been allocated to ${who.containerId}, duplicate allocation is not allowed`,
          );
        }
        const check = checkRequested(set, want);
        if (!check.ok) throw new AllocationError('address-unavailable', idx, `requested ip ${formatAddr(want)} is subnet's gateway`);
        if (!store.reserve(who.containerId, who.ifname, want, idx)) {
          throw new AllocationError(
            'address-unavailable',
            idx,
            `requested IP address ${formatAddr(want)} is not available in range set ${formatRangeSet(set)}`,
          );
        }
        got = { addr: want, range: check.range };
      } else {
        if (dup) {
          throw new AllocationError(
            'address-unavailable',
            idx,
            `${formatAddr(dup)} has been allocated to ${who.containerId}, duplicate allocation is not allowed`,
          );
        }
        for (const c of candidates(set, store.lastReserved(idx))) {
          const name = formatAddr(c.addr);
          if (taken.has(name)) continue;
          if (store.reserve(who.containerId, who.ifname, c.addr, idx)) {
            got = c;
            break;
          }
          taken.add(name); // created behind the lock's back: skip it
        }
        if (!got) throw new AllocationError('exhausted', idx, `no IP addresses available in range set: ${formatRangeSet(set)}`);
      }
      const name = formatAddr(got.addr);
      reserved.push(name);
      taken.add(name);
      out.push({ addr: got.addr, range: set[got.range]! });
    });
    if (requests.length > 0) throw new UnallocatedRequestsError(requests.map(formatAddr));
  } catch (e) {
    undo();
    if (failureOf(e)) throw e;
    throw new DirectoryError([(e as Error).message], undefined, undefined, { cause: e });
  }
  return out;
}
