/**
 * The handle of a CNI attachment: `<network>:<containerID>:<ifname>`, each part escaped, so
 * DEL by container and interface finds everything ADD wrote and nothing else. Calico uses
 * `<network>.<containerID>`; adding the interface lets one container hold addresses on two
 * interfaces of the same network.
 *
 * Why ":" and an escape: dots are legal in every part (network `net.a` + container `c1` and
 * network `net` + container `a.c1` both made `net.a.c1.eth0` in the old dotted form, so two
 * attachments shared one address). ":" can occur in none of them as CNI validates them, and
 * each part is escaped anyway — every character outside `A-Z a-z 0-9 _ . -` becomes `%XX` per
 * UTF-8 byte — so the encoding is injective whatever the input: `net.a:c1:eth0` and
 * `net:a.c1:eth0` stay apart, and common ids stay readable. Ids are at most MAX_HANDLE_LENGTH
 * characters (`checkHandle`), and `HANDLE_PATTERN` (the same rule, the server API's check) accepts every id
 * this function returns within that length, and every legacy id of the same characters.
 *
 * Records written before this encoding carry the dotted id: see legacy-handle.ts.
 */

/** The longest handle id the cluster back end stores (`checkHandle`). */
export const MAX_HANDLE_LENGTH = 1024;

/**
 * Every handle the cluster back end stores, and so the handles the server API accepts: 1–
 * MAX_HANDLE_LENGTH printable characters without "/" or white space — what `cniHandleId` writes,
 * the legacy dotted ids (whose interface part may hold any character CNI allows) and ids API
 * clients gave. `checkHandle` is this pattern with a message.
 */
// eslint-disable-next-line no-control-regex
export const HANDLE_PATTERN = /^[^\s/\u0000-\u001f\u007f]{1,1024}$/;

/** The CNI attachment's handle id (see above). Never throws; check the length with `checkHandle`. */
export function cniHandleId(network: string, containerId: string, ifname: string): string {
  return `${escapePart(network)}:${escapePart(containerId)}:${escapePart(ifname)}`;
}

/**
 * The parts of a handle `cniHandleId` wrote, or undefined for any other id (a legacy dotted id,
 * an API client's): exactly the inverse — the parts returned make `h` again.
 */
export function parseCniHandleId(h: string): { network: string; containerId: string; ifname: string } | undefined {
  const parts = h.split(':');
  if (parts.length !== 3) return undefined;
  let decoded: string[];
  try {
    decoded = parts.map((p) => decodeURIComponent(p));
  } catch {
    return undefined; // a "%" that is no escape of a UTF-8 byte
  }
  const [network, containerId, ifname] = decoded as [string, string, string];
  return cniHandleId(network, containerId, ifname) === h ? { network, containerId, ifname } : undefined;
}

/** The id podipam wrote before the escaped form: `<network>.<containerID>.<ifname>` (ambiguous). */
export function legacyCniHandleId(network: string, containerId: string, ifname: string): string {
  return `${network}.${containerId}.${ifname}`;
}

const UNSAFE = /[^A-Za-z0-9_.-]/gu;

/** One part of a handle id, escaped (see above). */
export function escapePart(s: string): string {
  return s.replace(UNSAFE, (ch) => {
    let out = '';
    for (const b of Buffer.from(ch, 'utf8')) out += `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
    return out;
  });
}

/**
 * Handles the cluster back end stores: 1–MAX_HANDLE_LENGTH printable characters without "/" or
 * white space (every id `cniHandleId` writes within that length, legacy ids, ids given by API
 * clients). TypeError naming the field and the value.
 */
export function checkHandle(field: string, handle: unknown): asserts handle is string {
  if (typeof handle !== 'string' || !HANDLE_PATTERN.test(handle)) {
    throw new TypeError(`invalid ${field} ${JSON.stringify(handle)}: a handle is 1-${MAX_HANDLE_LENGTH} printable characters without "/" or white space`);
  }
}
