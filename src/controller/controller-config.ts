import type { NodeCidrAllocatorConfig } from '../alloc/node-cidr-allocator.js';
import { familyBits, formatPrefix, parsePrefix, prefixOverlaps, type Family, type Prefix } from '../ip/index.js';

/** The node-CIDR controller's validated configuration. */
export interface ControllerConfig extends NodeCidrAllocatorConfig {
  readonly nodeMaskSize: Readonly<Partial<Record<Family, number>>>;
  /** Service CIDRs (excluded from node blocks, as kube-controller-manager does). */
  readonly serviceCidrs: readonly Prefix[];
}

/** The flags as the command line gives them (strings, unvalidated). */
export interface ControllerFlags {
  readonly clusterCidr?: string;
  readonly nodeMaskSize?: string;
  readonly nodeMaskSizeV6?: string;
  readonly serviceCidr?: string;
}

/** Kubernetes' defaults for --node-cidr-mask-size-ipv4 / -ipv6. */
export const DEFAULT_NODE_MASK: Readonly<Record<Family, number>> = { 4: 24, 6: 64 };

function cidrList(flag: string, text: string): Prefix[] {
  const items = text.split(',').map((s) => s.trim());
  return items.map((s) => {
    try {
      return parsePrefix(s);
    } catch (e) {
      throw new TypeError(`invalid ${flag} ${JSON.stringify(s)}: ${(e as Error).message}`);
    }
  });
}

function maskFlag(flag: string, text: string): number {
  if (!/^[0-9]{1,3}$/.test(text)) throw new TypeError(`invalid ${flag} ${JSON.stringify(text)}: must be a prefix length (an integer)`);
  return Number(text);
}

/**
 * Validates the controller's flags into a ControllerConfig, naming flag and value on error
 * (TypeError): `--cluster-cidr` is a comma list of one or more CIDRs of either family, no two
 * overlapping (several per family are used in order); `--node-mask-size` is the IPv4 node
 * mask (default 24), or the IPv6 one for an IPv6-only cluster; `--node-mask-size-v6` the IPv6
 * one (default 64); every node mask must be at least the mask of each cluster CIDR of its
 * family; `--service-cidr` is a comma list excluded from node blocks.
 */
export function parseControllerConfig(flags: ControllerFlags): ControllerConfig {
  if (!flags.clusterCidr) throw new TypeError('missing --cluster-cidr: the CIDR(s) node pod CIDRs are cut from');
  const clusterCidrs = cidrList('--cluster-cidr', flags.clusterCidr);
  clusterCidrs.forEach((a, i) => {
    const b = clusterCidrs.slice(0, i).find((x) => prefixOverlaps(x, a));
    if (b) throw new TypeError(`invalid --cluster-cidr ${JSON.stringify(flags.clusterCidr)}: ${formatPrefix(a)} overlaps ${formatPrefix(b)}`);
  });
  const has = (f: Family): boolean => clusterCidrs.some((c) => c.family === f);
  const nodeMaskSize: Partial<Record<Family, number>> = {};
  const v4 = flags.nodeMaskSize === undefined ? undefined : maskFlag('--node-mask-size', flags.nodeMaskSize);
  const v6 = flags.nodeMaskSizeV6 === undefined ? undefined : maskFlag('--node-mask-size-v6', flags.nodeMaskSizeV6);
  if (v6 !== undefined && !has(6)) throw new TypeError(`invalid --node-mask-size-v6 ${v6}: --cluster-cidr has no IPv6 CIDR`);
  if (has(4)) nodeMaskSize[4] = v4 ?? DEFAULT_NODE_MASK[4];
  if (has(6)) {
    if (!has(4) && v4 !== undefined && v6 !== undefined) {
      throw new TypeError(`invalid --node-mask-size ${v4}: give only --node-mask-size-v6 for an IPv6-only cluster`);
    }
    nodeMaskSize[6] = v6 ?? (has(4) ? undefined : v4) ?? DEFAULT_NODE_MASK[6];
  }
  for (const c of clusterCidrs) {
    const mask = nodeMaskSize[c.family] as number;
    const flag = c.family === 6 && (has(4) || v6 !== undefined) ? '--node-mask-size-v6' : '--node-mask-size';
    if (mask < c.len || mask > familyBits(c.family)) {
      throw new TypeError(
        `invalid ${flag} ${mask}: the node mask must be from the mask of --cluster-cidr ${formatPrefix(c)} (${c.len}) to ${familyBits(c.family)}`,
      );
    }
  }
  const serviceCidrs = flags.serviceCidr ? cidrList('--service-cidr', flags.serviceCidr) : [];
  return { clusterCidrs, nodeMaskSize, serviceCidrs, excluded: serviceCidrs };
}
