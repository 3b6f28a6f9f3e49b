import { formatAddr, tryParseAddr } from '../ip/addr.js';

/** The canonical text of an address (the form history rows are kept and looked up in); other text as given. */
export function canonicalAddress(text: string): string {
  const a = tryParseAddr(text);
  return a === undefined ? text : formatAddr(a);
}
