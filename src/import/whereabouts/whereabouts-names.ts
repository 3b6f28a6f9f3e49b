/**
 * How Whereabouts names its objects (its Kubernetes storage back end, restated here):
 * - an IPPool is named after its range, "/" and ":" written "-" (an IPv6 range ending in ":"
 *   gets a "0" first): `10.0.0.0-24`, `fd00--40-120`; with the IPAM config's `network_name`
 *   set, `<network_name>-<range>`; with node slices, `<node>-<range>` or
 *   `<network_name>-<node>-<range>`.
 * - an OverlappingRangeIPReservation is named after its IP the same way: `10.0.0.5`,
 *   `fd00--5`, `<network_name>-fd00--5`.
 * Pure.
 */
import { type Addr, formatAddr, tryParseAddr } from '../../ip/index.js';

/** The name part Whereabouts derives from a range text (`10.0.0.0/24` → `10.0.0.0-24`). */
export function normalizedRange(range: string): string {
  const r = range.endsWith(':') ? `${range}0` : range;
  return r.replaceAll(':', '-').replaceAll('/', '-');
}

/** The name part Whereabouts derives from an IP (`fd00::5` → `fd00--5`). */
export function normalizedIp(ip: Addr): string {
  const t = formatAddr(ip);
  return (t.endsWith(':') ? `${t}0` : t).replaceAll(':', '-');
}

/**
 * The prefix before `-<normalized range>` in an IPPool's name (its network name, or network
 * and node with node slices): '' when the name is the range alone, undefined when the name
 * does not end with the range (renamed by hand).
 */
export function poolNamePrefix(name: string, range: string): string | undefined {
  const tail = normalizedRange(range);
  if (name === tail) return '';
  return name.endsWith(`-${tail}`) ? name.slice(0, -tail.length - 1) : undefined;
}

/**
 * The IP an OverlappingRangeIPReservation's name stands for, given the network-name prefixes
 * that may precede it ('' for none): the longest prefix that leaves a parsable IP wins.
 * undefined when no reading gives an IP.
 */
export function reservationIp(name: string, prefixes: readonly string[]): Addr | undefined {
  const sorted = [...new Set(['', ...prefixes])].sort((a, b) => b.length - a.length);
  for (const p of sorted) {
    if (p !== '' && !name.startsWith(`${p}-`)) continue;
    const rest = p === '' ? name : name.slice(p.length + 1);
    const ip = tryParseAddr(rest.includes('.') ? rest : rest.replaceAll('-', ':'));
    if (ip && normalizedIp(ip) === rest) return ip;
  }
  return undefined;
}
