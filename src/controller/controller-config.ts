import type { NodeCidrAllocatorConfig } from '../alloc/node-cidr-allocator.js';
import { familyBits, formatPrefix, parsePrefix, prefixOverlaps, type Family, type Prefix } from '../ip/index.js';

/** The node-CIDR controller's validated configuration. */
export interface ControllerConfig extends NodeCidrAllocatorConfig {
  readonly nodeMaskSize: Readonly<Partial<Record<Family, number>>>;
  /** Service CIDRs (excluded from node blocks, as kube-controller-manager does). */
  readonly serviceCidrs: readonly Prefix[];
}

/**
 * The settings as text (a command line or a file gives them), unvalidated: `clusterCidrs` and
 * `serviceCidrs` are comma lists.
 */
export interface ControllerSettings {
  readonly clusterCidrs?: string;
  readonly nodeMaskSize?: string;
  readonly nodeMaskSizeV6?: string;
  readonly serviceCidrs?: string;
}

export type ControllerSettingsField = keyof ControllerSettings;

/**
 * A setting that does not validate: the field, and the message naming the settings by their
 * field names; `describe` words it again with other names for them (the CLI's flags).
 */
export class ControllerConfigError extends TypeError {
  override readonly name = 'ControllerConfigError';
  constructor(
    readonly field: ControllerSettingsField,
    readonly describe: (nameOf: (field: ControllerSettingsField) => string) => string,
    options?: ErrorOptions,
  ) {
    super(
      describe((f) => f),
      options,
    );
  }
}

/** Kubernetes' defaults for --node-cidr-mask-size-ipv4 / -ipv6. */
export const DEFAULT_NODE_MASK: Readonly<Record<Family, number>> = { 4: 24, 6: 64 };

function cidrList(field: 'clusterCidrs' | 'serviceCidrs', text: string): Prefix[] {
  const items = text.split(',').map((s) => s.trim());
  return items.map((s) => {
    try {
      return parsePrefix(s);
    } catch (e) {
      throw new ControllerConfigError(field, (n) => `invalid ${n(field)} ${JSON.stringify(s)}: ${(e as Error).message}`, { cause: e });
    }
  });
}

function mask(field: 'nodeMaskSize' | 'nodeMaskSizeV6', text: string): number {
  if (!/^[0-9]{1,3}$/.test(text))
    throw new ControllerConfigError(field, (n) => `invalid ${n(field)} ${JSON.stringify(text)}: must be a prefix length (an integer)`);
  return Number(text);
}

/**
 * Validates the settings into a ControllerConfig; a ControllerConfigError (a TypeError) names
 * the field and the value: `clusterCidrs` is a comma list of one or more CIDRs of either
 * family, no two overlapping (several per family are used in order); `nodeMaskSize` is the
 * IPv4 node mask (default 24), or the IPv6 one for an IPv6-only cluster; `nodeMaskSizeV6` the
 * IPv6 one (default 64); every node mask must be at least the mask of each cluster CIDR of its
 * family; `serviceCidrs` is a comma list excluded from node blocks.
 */
export function parseControllerConfig(settings: ControllerSettings): ControllerConfig {
  const text = settings.clusterCidrs;
  if (!text) throw new ControllerConfigError('clusterCidrs', (n) => `missing ${n('clusterCidrs')}: the CIDR(s) node pod CIDRs are cut from`);
  const clusterCidrs = cidrList('clusterCidrs', text);
  clusterCidrs.forEach((a, i) => {
    const b = clusterCidrs.slice(0, i).find((x) => prefixOverlaps(x, a));
    if (b)
      throw new ControllerConfigError(
        'clusterCidrs',
        (n) => `invalid ${n('clusterCidrs')} ${JSON.stringify(text)}: ${formatPrefix(a)} overlaps ${formatPrefix(b)}`,
      );
  });
  const has = (f: Family): boolean => clusterCidrs.some((c) => c.family === f);
  const nodeMaskSize: Partial<Record<Family, number>> = {};
  const v4 = settings.nodeMaskSize === undefined ? undefined : mask('nodeMaskSize', settings.nodeMaskSize);
  const v6 = settings.nodeMaskSizeV6 === undefined ? undefined : mask('nodeMaskSizeV6', settings.nodeMaskSizeV6);
  if (v6 !== undefined && !has(6))
    throw new ControllerConfigError('nodeMaskSizeV6', (n) => `invalid ${n('nodeMaskSizeV6')} ${v6}: ${n('clusterCidrs')} has no IPv6 CIDR`);
  if (has(4)) nodeMaskSize[4] = v4 ?? DEFAULT_NODE_MASK[4];
  if (has(6)) {
    if (!has(4) && v4 !== undefined && v6 !== undefined) {
      throw new ControllerConfigError('nodeMaskSize', (n) => `invalid ${n('nodeMaskSize')} ${v4}: give only ${n('nodeMaskSizeV6')} for an IPv6-only cluster`);
    }
    nodeMaskSize[6] = v6 ?? (has(4) ? undefined : v4) ?? DEFAULT_NODE_MASK[6];
  }
  for (const c of clusterCidrs) {
    const m = nodeMaskSize[c.family] as number;
    const field = c.family === 6 && (has(4) || v6 !== undefined) ? 'nodeMaskSizeV6' : 'nodeMaskSize';
    if (m < c.len || m > familyBits(c.family)) {
      throw new ControllerConfigError(
        field,
        (n) => `invalid ${n(field)} ${m}: the node mask must be from the mask of ${n('clusterCidrs')} ${formatPrefix(c)} (${c.len}) to ${familyBits(c.family)}`,
      );
    }
  }
  const serviceCidrs = settings.serviceCidrs ? cidrList('serviceCidrs', settings.serviceCidrs) : [];
  return { clusterCidrs, nodeMaskSize, serviceCidrs, excluded: serviceCidrs };
}
