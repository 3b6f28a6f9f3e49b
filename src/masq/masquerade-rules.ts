/**
 * The masquerade podipam keeps on a node for the cluster and agent back ends (pure: pool
 * prefixes in, iptables text out; src/masq/masquerade-iptables.ts applies it).
 *
 * Why podipam does it and not the interface plugin: the reference `ptp` plugin's `ipMasq`
 * (containernetworking/plugins, pkg/ip/ipmasq_linux.go) adds, per pod, a nat chain that ACCEPTs
 * traffic to the pod's own IPAM result network and MASQUERADEs everything else (multicast
 * aside). With block IPAM that network is the pod's BLOCK (a /26, say), so traffic from a pod to
 * a pod of any other block — on the same node or another — left with the node's address:
 * source NAT between pods, which the Kubernetes network model forbids (pods see each other's
 * real addresses). Answering a wider prefix in the IPAM result would change ptp's masquerade
 * but also the pod's on-link routes (the block model routes each pod by /32, /128); the
 * reference `portmap` and `firewall` plugins do no source NAT. So the conflist of the block
 * back ends says `ipMasq: false` and podipam masquerades as operators know it from Calico's
 * natOutgoing: traffic FROM a pod pool TO anything outside EVERY pod pool is masqueraded,
 * pod-to-pod traffic never is, whatever the blocks, pools and nodes.
 *
 * One chain per family in the nat table, {@link MASQ_CHAIN}, jumped to from the END of
 * POSTROUTING by one rule ({@link JUMP_RULE}, appended, never inserted: the operator's own
 * POSTROUTING rules, exemptions included, come first); the chain is written whole by one `iptables-restore --noflush`
 * (declaring a chain there flushes it: the swap is atomic, a pool removed loses its rules), so
 * a sync is idempotent and never leaves a half-written chain:
 *
 *   -d <each pool of the family> -j RETURN        to a pod: no NAT
 *   -d 224.0.0.0/4 | ff00::/8 -j RETURN            multicast, as ptp
 *   -s <each pool of the family> -j MASQUERADE    from a pod to anything else
 *
 * A family without pools gets an empty chain (nothing masqueraded), so removing the last pool of
 * a family removes its rules too.
 */
import { type Family, formatPrefix, type Prefix } from '../ip/index.js';

export const MASQ_CHAIN = 'PODIPAM-MASQ';

/** The POSTROUTING rule that sends every packet through {@link MASQ_CHAIN} (after `-t nat -A|-C|-D|-I POSTROUTING`). */
export const JUMP_RULE: readonly string[] = ['-m', 'comment', '--comment', 'podipam: masquerade pod traffic leaving the pod pools', '-j', MASQ_CHAIN];

/**
 * The `iptables` arguments that check for (`-C`), add (`-A`) or delete (`-D`) the jump. Adding
 * always appends: inserting at the top would pre-empt every rule the operator keeps in
 * POSTROUTING (a `-d X -j RETURN` exemption would never be reached for pod traffic).
 */
export function jumpArgs(op: '-C' | '-A' | '-D'): string[] {
  return ['-w', '5', '-t', 'nat', op, 'POSTROUTING', ...JUMP_RULE];
}

export interface MasqueradeFamily {
  readonly family: Family;
  /** The program that writes this family's rules. */
  readonly tool: 'iptables' | 'ip6tables';
  /** The pools of this family, canonical, sorted, each once. */
  readonly cidrs: readonly string[];
}

const MULTICAST: Record<Family, string> = { 4: '224.0.0.0/4', 6: 'ff00::/8' };

/** Both families (IPv4 first), each with its pools' prefixes. */
export function masqueradeFamilies(pools: readonly Prefix[]): MasqueradeFamily[] {
  return ([4, 6] as const).map((family) => {
    const of = pools.filter((p) => p.family === family).sort((a, b) => (a.base < b.base ? -1 : a.base > b.base ? 1 : a.len - b.len));
    const cidrs = [...new Set(of.map(formatPrefix))];
    return { family, tool: family === 4 ? 'iptables' : 'ip6tables', cidrs };
  });
}

/** The `iptables-restore --noflush` input that (re)writes the family's chain, whole. */
export function chainRestoreText(f: MasqueradeFamily): string {
  const rule = (match: string, target: string, comment: string): string => `-A ${MASQ_CHAIN} ${match} -m comment --comment "${comment}" -j ${target}`;
  const lines = [
    '*nat',
    `:${MASQ_CHAIN} - [0:0]`,
    ...(f.cidrs.length > 0
      ? [
          ...f.cidrs.map((c) => rule(`-d ${c}`, 'RETURN', 'podipam: to a pod, no NAT')),
          rule(`-d ${MULTICAST[f.family]}`, 'RETURN', 'podipam: multicast, no NAT'),
          ...f.cidrs.map((c) => rule(`-s ${c}`, 'MASQUERADE', 'podipam: from a pod to outside the pod pools')),
        ]
      : []),
    'COMMIT',
  ];
  return `${lines.join('\n')}\n`;
}
