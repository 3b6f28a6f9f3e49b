/**
 * Records written under the old dotted handle id `<network>.<containerID>.<ifname>`
 * (handle-id.ts says why it was replaced). They stay where they are; DEL and CHECK of an
 * attachment look them up after its new id, and GC keeps or releases them by the attachment
 * their record names — but only a record that belongs to the attachment without doubt:
 *
 * - its record names (network, containerId, ifname) — as every plugin ADD wrote it — and they
 *   are exactly the attachment's; or
 * - it names no container (written by a tool under a bare handle) and the dotted id can be
 *   split only one way: no part contains a dot.
 *
 * So a DEL of network `net` + container `a.c1` never releases the `net.a.c1.eth0` that network
 * `net.a` + container `c1` holds.
 */
import type { Store } from '../../store/index.js';
import { decodeHandle, type HandleRecord } from './handle-record.js';
import { legacyCniHandleId } from '../../model/handle-id.js';
import { handleKey } from './keys.js';

export interface CniAttachment {
  readonly network: string;
  readonly containerId: string;
  readonly ifname: string;
}

/** Whether the record stored under the attachment's legacy id belongs to that attachment. */
export function legacyRecordMatches(rec: HandleRecord, a: CniAttachment): boolean {
  if (rec.containerId !== undefined) return rec.network === a.network && rec.containerId === a.containerId && rec.ifname === a.ifname;
  if (rec.network !== undefined && rec.network !== a.network) return false;
  return !a.network.includes('.') && !a.containerId.includes('.') && !a.ifname.includes('.');
}

/**
 * The attachment's legacy handle id when a record exists under it and belongs to the
 * attachment (see above); otherwise undefined. One read. Throws what the store throws, and
 * CorruptRecordError for an undecodable record.
 */
export async function legacyHandleOf(store: Store, a: CniAttachment): Promise<string | undefined> {
  const id = legacyCniHandleId(a.network, a.containerId, a.ifname);
  const entry = await store.get(handleKey(id));
  return entry && legacyRecordMatches(decodeHandle(entry), a) ? id : undefined;
}
