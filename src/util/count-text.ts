/**
 * The one text rule for big counts, shared by the CLI's tables and the dashboard (pure, no
 * Node.js or DOM): from 2^32 up, a count that is a power of two prints as "2^N", and one
 * with a small odd factor as "M*2^N" — an IPv6 pool's 2^72 addresses, or the 31*2^67 usable
 * ones of its /122 blocks, not 22 digits. Anything else prints in full (`undefined` here).
 */
const POWER_TEXT_FROM = 1n << 32n;
const MAX_FACTOR = 1n << 16n;

/** "2^N" or "M*2^N" for `v` as described above, else undefined (print it in full). */
export function powerText(v: bigint): string | undefined {
  if (v < POWER_TEXT_FROM) return undefined;
  let m = v;
  let n = 0;
  while ((m & 1n) === 0n) {
    m >>= 1n;
    n++;
  }
  if (m === 1n) return `2^${n}`;
  if (m < MAX_FACTOR && n >= 16) return `${m}*2^${n}`;
  return undefined;
}
