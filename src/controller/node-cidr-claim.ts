/**
 * Claim keys: `nodecidrs/<cidr>` → `{"node": NAME}`. Written in the same transaction as the
 * node record that lists the CIDR, with a compare that the key does not exist, so two
 * controllers (or a controller restarted with an empty bitmap) can never record one CIDR for
 * two nodes: the in-memory bitmap is only a hint, the claim is the truth.
 */

/** The key prefix of every claim. */
export const NODE_CIDR_CLAIM_PREFIX = 'nodecidrs/';

/** The claim key of a pod CIDR in canonical text ("10.244.3.0/24"). */
export function nodeCidrClaimKey(cidr: string): string {
  return `${NODE_CIDR_CLAIM_PREFIX}${cidr}`;
}

/** The claim value naming its node. */
export function encodeNodeCidrClaim(node: string): string {
  return JSON.stringify({ node });
}

/** The node a claim value names, or undefined when the value is not a claim. */
export function decodeNodeCidrClaim(value: string): string | undefined {
  try {
    const o = JSON.parse(value) as { node?: unknown };
    return typeof o?.node === 'string' ? o.node : undefined;
  } catch {
    return undefined;
  }
}
