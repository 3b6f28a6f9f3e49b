/**
 * Calico's IPAM state (either datastore, decoded into CalicoState) → an ImportPlan. Pure.
 *
 * Pools. Each Calico IPPool becomes a podipam pool of the same name, CIDR, block size (0 = 26 /
 * 122, Calico's default), disabled flag and node selector (translated, calico-selector.ts).
 * `poolMap` (`--pool-map calico=podipam`) renames it, or puts its addresses into an existing
 * podipam pool (`existingPools`), which must contain the Calico pool's CIDR. An existing pool
 * of the same CIDR is used as is (its name, its block size). A Calico pool that cannot be
 * carried over (a selector podipam cannot express, a block size podipam refuses, a pool-map
 * onto a pool that does not contain it) is one conflict that says how many addresses it holds;
 * none of them is in the plan.
 *
 * Blocks and affinities. Calico's block record is the truth of a block's node (`affinity:
 * host:<node>`); its BlockAffinity records are an index and are read only to drop the affinity
 * of a block whose affinity is being deleted (`pendingDeletion` or `deleted`): that block is
 * imported unaffine. When the podipam pool's block size equals the Calico block's (the normal
 * case), the podipam block is the Calico block, with its node. Empty Calico blocks are not
 * carried over: a block is written with the addresses it holds, and a node claims new blocks
 * as it needs them. With another size the addresses land in the podipam pool's
 * blocks: a larger Calico block splits into several podipam blocks, each keeping the node; a
 * podipam block that gathers several smaller Calico blocks keeps the node when they all have the
 * same one, and is unaffine when they name different nodes (never a 'block-size' conflict:
 * refusing would leave live pods' addresses unheld). A block marked `deleted` is skipped when empty (Calico is removing it) and
 * is an 'invalid' conflict when it still holds addresses.
 *
 * Addresses. Every allocated ordinal with a `handle_id`:
 * - a workload (`<network>.<containerID>`, `network` one of `networks`, the longest that
 *   matches): holder kind 'pod', podipam handle `cniHandleId(network, containerID, ifname)` —
 *   what the cluster plugin's DEL of that container computes — with the pod's namespace, name
 *   and node from the attributes. The same Calico handle in an IPv4 and an IPv6 block is the
 *   same podipam handle: one handle, both addresses.
 * - a tunnel address (attribute type ipipTunnelAddress, vxlanTunnelAddress,
 *   vxlanV6TunnelAddress, wireguardTunnelAddress, wireguardV6TunnelAddress, or the handle
 *   `<kind>-tunnel-addr-<node>`): holder kind 'node', handle `calico-tunnel@<node>:<kind>`
 *   (tunnelHandle). No pod handle can be that: cniHandleId writes only `A-Z a-z 0-9 _ . - % :`,
 *   so never "@", and a legacy dotted id starts with a network name, which holds no "@"; nor is
 *   it the warm pool's `podipam-warm:` namespace.
 * - anything else is an 'invalid' conflict naming the handle: no DEL podipam will see could
 *   release it. So is an allocation without a `handle_id`, one whose attribute index is
 *   outside `attributes`, an address outside every Calico pool, an address in two blocks, and a
 *   Calico handle whose pod (namespace, name, node) differs between its addresses.
 * An address whose attribute carries `releasedAt` was released and is cooling down in Calico
 * before reuse: its pod is gone, so it is not imported (podipam may hand it out at once).
 *
 * Malformed records (CalicoState.malformed) are 'invalid' conflicts naming the record. Output
 * is sorted (pools by name, blocks and addresses by address, conflicts by subject) so two
 * plans of one source compare equal.
 */
import {
  type Addr,
  type Prefix,
  compareAddr,
  formatAddr,
  formatPrefix,
  parseAddr,
  parsePrefix,
  prefixContainsPrefix,
  prefixOf,
  prefixOverlaps,
} from '../../ip/index.js';
import { DEFAULT_BLOCK_SIZE, checkBlockSize } from '../../alloc/block-layout.js';
import { MAX_HANDLE_LENGTH, cniHandleId } from '../../model/handle-id.js';
import { DNS_SUBDOMAIN } from '../../model/node-name.js';
import type { ImportConflict, ImportPlan, ImportedAddress, ImportedBlock, ImportedHolder, ImportedPool } from '../import-plan.js';
import type { CalicoAttribute, CalicoBlock, CalicoPool, CalicoState } from './calico-records.js';
import { calicoSelectorToPodipam } from './calico-selector.js';

/** Calico's default CNI network name: its handles are `k8s-pod-network.<containerID>`. */
export const CALICO_DEFAULT_NETWORK = 'k8s-pod-network';

/** An existing podipam pool the plan may put addresses into. */
export interface ExistingPool {
  readonly name: string;
  readonly cidr: string;
  readonly blockSize: number;
}

export interface CalicoPlanOptions {
  /** The CNI network names whose handles are imported (default [CALICO_DEFAULT_NETWORK]). */
  readonly networks?: readonly string[];
  /** The interface name of every imported attachment (default eth0): Calico's handle has none. */
  readonly ifname?: string;
  /** Calico pool name → podipam pool name. */
  readonly poolMap?: ReadonlyMap<string, string>;
  /** The podipam store's pools, for poolMap targets and pools of the same CIDR. */
  readonly existingPools?: readonly ExistingPool[];
}

/** Calico's tunnel kinds: attribute type → the kind in the handle (and Calico's handle prefix `<kind>-tunnel-addr-`). */
const TUNNEL_TYPES: Readonly<Record<string, string>> = {
  ipipTunnelAddress: 'ipip',
  vxlanTunnelAddress: 'vxlan',
  vxlanV6TunnelAddress: 'vxlan-v6',
  wireguardTunnelAddress: 'wireguard',
  wireguardV6TunnelAddress: 'wireguard-v6',
};
const TUNNEL_HANDLE = /^(ipip|vxlan|vxlan-v6|wireguard|wireguard-v6)-tunnel-addr-(.+)$/;

/** The podipam handle of a node's Calico tunnel address: `calico-tunnel@<node>:<kind>` (kind ipip, vxlan, vxlan-v6, wireguard, wireguard-v6). */
export function tunnelHandle(node: string, kind: string): string {
  return `calico-tunnel@${node}:${kind}`;
}

/** Where a Calico pool's addresses go. */
interface Target {
  readonly name: string;
  readonly cidr: Prefix;
  readonly blockSize: number;
}

/** One podipam block being built: the Calico blocks' nodes that feed it. */
interface BlockAcc {
  readonly cidr: Prefix;
  readonly pool: string;
  readonly nodes: Set<string>;
  /** A Calico block feeding it had no node (or lost it). */
  unaffine: boolean;
}

export function planCalicoImport(source: 'calico-kdd' | 'calico-etcd', state: CalicoState, options: CalicoPlanOptions = {}): ImportPlan {
  const networks = [...(options.networks ?? [CALICO_DEFAULT_NETWORK])].sort((a, b) => b.length - a.length);
  const ifname = options.ifname ?? 'eth0';
  const conflicts: ImportConflict[] = state.malformed.map((e) => ({ kind: 'invalid', subject: e.source, detail: e.message }));
  const conflict = (kind: ImportConflict['kind'], subject: string, detail: string): void => {
    conflicts.push({ kind, subject, detail });
  };

  // Pools: where each Calico pool's addresses go, or why they cannot.
  const pools: ImportedPool[] = [];
  const targets = new Map<CalicoPool, Target>();
  const refused = new Map<CalicoPool, { kind: ImportConflict['kind']; detail: string }>();
  for (const cp of [...state.pools].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const r = resolvePool(cp, options, pools, targets);
    if ('problem' in r) refused.set(cp, { kind: r.kind, detail: r.problem });
    else {
      targets.set(cp, r.target);
      if (r.create) pools.push(r.create);
    }
  }
  const poolOf = (cidr: Prefix): CalicoPool | undefined => state.pools.find((p) => prefixContainsPrefix(p.cidr, cidr));
  const refusedCount = new Map<CalicoPool, number>();

  // Affinities being deleted, by block CIDR and node.
  const dropping = new Set(state.affinities.filter((a) => a.deleted || a.state === 'pendingDeletion').map((a) => `${a.node} ${formatPrefix(a.cidr)}`));

  const blocks = new Map<string, BlockAcc>();
  const addBlock = (cidr: Prefix, pool: string, node: string | null): void => {
    const k = formatPrefix(cidr);
    let b = blocks.get(k);
    if (!b) blocks.set(k, (b = { cidr, pool, nodes: new Set(), unaffine: false }));
    if (node === null) b.unaffine = true;
    else b.nodes.add(node);
  };
  const addresses: ImportedAddress[] = [];
  const seenIp = new Map<string, string>();
  const holders = new Map<string, ImportedHolder>();

  for (const cb of state.blocks) {
    const cidrText = formatPrefix(cb.cidr);
    const allocated = cb.allocations.flatMap((v, o) => (v === null ? [] : [o]));
    if (cb.deleted) {
      if (allocated.length > 0)
        conflict('invalid', cb.source, `block ${cidrText} is marked deleted but still holds ${allocated.length} address(es); not imported`);
      continue;
    }
    const cp = poolOf(cb.cidr);
    if (!cp) {
      for (const o of allocated) conflict('invalid', formatAddr(addrAt(cb.cidr, o)), `in Calico block ${cidrText}, which is inside no Calico IP pool`);
      continue;
    }
    if (refused.has(cp)) {
      refusedCount.set(cp, (refusedCount.get(cp) ?? 0) + allocated.length);
      continue;
    }
    const target = targets.get(cp) as Target;
    const node = blockNode(cb, dropping, conflict);
    for (const o of allocated) {
      const ip = addrAt(cb.cidr, o);
      const ipText = formatAddr(ip);
      const holder = holderOf(cb, o, ipText, node, networks, ifname, conflict);
      if (!holder) continue;
      const earlier = seenIp.get(ipText);
      if (earlier !== undefined) {
        conflict('invalid', ipText, `allocated in two Calico blocks (${earlier} and ${cidrText}); not imported from ${cidrText}`);
        continue;
      }
      seenIp.set(ipText, cidrText);
      const same = holders.get(holder.handle);
      if (same && (same.namespace !== holder.namespace || same.pod !== holder.pod || same.node !== holder.node)) {
        conflict('invalid', ipText, `Calico handle ${holder.sourceHandle} holds it for ${ownerText(holder)} but its other address(es) for ${ownerText(same)}`);
        continue;
      }
      holders.set(holder.handle, same ?? holder);
      const block = prefixOf(ip, target.blockSize);
      addBlock(block, target.name, node);
      addresses.push({ ip: ipText, pool: target.name, block: formatPrefix(block), holder });
    }
  }

  for (const [cp, r] of refused) {
    const n = refusedCount.get(cp) ?? 0;
    conflict(r.kind, `pool ${cp.name}`, `${cp.source}: ${r.detail}; its ${n} allocated address(es) are not imported`);
  }

  const importedBlocks: ImportedBlock[] = [...blocks.values()]
    .sort((a, b) => comparePrefix(a.cidr, b.cidr))
    .map((b) => ({ cidr: formatPrefix(b.cidr), pool: b.pool, affinity: b.nodes.size === 1 ? ([...b.nodes][0] as string) : null }));
  addresses.sort((a, b) => compareAddr(parseAddr(a.ip), parseAddr(b.ip)));
  conflicts.sort((a, b) => (a.subject < b.subject ? -1 : a.subject > b.subject ? 1 : a.detail < b.detail ? -1 : a.detail > b.detail ? 1 : 0));
  return { source, pools, blocks: importedBlocks, addresses, conflicts };
}

type PoolResolution = { readonly target: Target; readonly create?: ImportedPool } | { readonly kind: ImportConflict['kind']; readonly problem: string };

function resolvePool(cp: CalicoPool, options: CalicoPlanOptions, planned: readonly ImportedPool[], targets: ReadonlyMap<CalicoPool, Target>): PoolResolution {
  const existing = (options.existingPools ?? []).map((p) => ({ ...p, prefix: parsePrefix(p.cidr) }));
  const mapped = options.poolMap?.get(cp.name);
  const name = mapped ?? cp.name;
  const byName = existing.find((p) => p.name === name);
  const byCidr = mapped === undefined ? existing.find((p) => formatPrefix(p.prefix) === formatPrefix(cp.cidr)) : undefined;
  const use = byName ?? byCidr;
  if (use) {
    if (!prefixContainsPrefix(use.prefix, cp.cidr)) {
      return {
        kind: 'pool-overlap',
        problem: `its CIDR ${formatPrefix(cp.cidr)} is not inside podipam pool ${use.name} (${use.cidr})${mapped ? `, the pool --pool-map ${cp.name}=${mapped} names` : ''}`,
      };
    }
    return { target: { name: use.name, cidr: use.prefix, blockSize: use.blockSize } };
  }
  if (!DNS_SUBDOMAIN.test(name))
    return {
      kind: 'invalid',
      problem: `pool name ${JSON.stringify(name)} is not a podipam pool name (a DNS subdomain); map it with --pool-map ${cp.name}=NAME`,
    };
  const selector = calicoSelectorToPodipam(cp.nodeSelector);
  if ('problem' in selector) return { kind: 'invalid', problem: `nodeSelector ${JSON.stringify(cp.nodeSelector)}: ${selector.problem}` };
  const blockSize = cp.blockSize === 0 ? DEFAULT_BLOCK_SIZE[cp.cidr.family] : cp.blockSize;
  try {
    checkBlockSize(cp.cidr, blockSize);
  } catch (e) {
    return {
      kind: 'block-size',
      problem: `${(e as Error).message}; create a podipam pool over ${formatPrefix(cp.cidr)} with another block size and map onto it with --pool-map ${cp.name}=POOL`,
    };
  }
  const other = planned.find((p) => p.name === name || prefixOverlaps(parsePrefix(p.cidr), cp.cidr));
  if (other) {
    const from = [...targets].find(([, t]) => t.name === other.name)?.[0];
    return {
      kind: 'pool-overlap',
      problem: `it would be podipam pool ${name} (${formatPrefix(cp.cidr)}), which collides with pool ${other.name} (${other.cidr}) imported from ${from?.source ?? other.source}`,
    };
  }
  const create: ImportedPool = { name, cidr: formatPrefix(cp.cidr), blockSize, nodeSelector: selector.text, disabled: cp.disabled, source: cp.source };
  return { target: { name, cidr: cp.cidr, blockSize }, create };
}

/** The node a Calico block is affine to, or null (no affinity, a non-host affinity, or one being deleted). */
function blockNode(
  cb: CalicoBlock,
  dropping: ReadonlySet<string>,
  conflict: (kind: ImportConflict['kind'], subject: string, detail: string) => void,
): string | null {
  if (cb.affinity === null || !cb.affinity.startsWith('host:')) return null;
  const node = cb.affinity.slice('host:'.length);
  if (!DNS_SUBDOMAIN.test(node)) {
    conflict('invalid', cb.source, `affinity ${JSON.stringify(cb.affinity)} does not name a node (a DNS subdomain); the block is imported unaffine`);
    return null;
  }
  return dropping.has(`${node} ${formatPrefix(cb.cidr)}`) ? null : node;
}

/** The holder of ordinal `o` of a Calico block, or undefined after reporting why it cannot be imported (or skipping a released address). */
function holderOf(
  cb: CalicoBlock,
  o: number,
  ipText: string,
  blockNode: string | null,
  networks: readonly string[],
  ifname: string,
  conflict: (kind: ImportConflict['kind'], subject: string, detail: string) => void,
): ImportedHolder | undefined {
  const idx = cb.allocations[o] as number;
  const attr: CalicoAttribute | undefined = cb.attributes[idx];
  if (!attr) {
    conflict('invalid', ipText, `${cb.source}: allocations[${o}] points at attributes[${idx}], but the block has ${cb.attributes.length} attribute(s)`);
    return undefined;
  }
  if (attr.releasedAt !== undefined) return undefined;
  const sourceHandle = attr.handleId;
  if (sourceHandle === undefined) {
    conflict('invalid', ipText, `${cb.source}: attributes[${idx}] has no handle_id, so no DEL podipam will see can release it`);
    return undefined;
  }
  const owner = attr.owner;
  const attrNode = owner.node !== undefined && owner.node !== '' ? owner.node : undefined;
  const tunnel = TUNNEL_HANDLE.exec(sourceHandle);
  const typeKind = owner.type !== undefined && Object.hasOwn(TUNNEL_TYPES, owner.type) ? TUNNEL_TYPES[owner.type] : undefined;
  const kind = typeKind ?? tunnel?.[1];
  if (kind !== undefined) {
    const node = attrNode ?? tunnel?.[2] ?? blockNode ?? undefined;
    if (node === undefined || !DNS_SUBDOMAIN.test(node)) {
      conflict('invalid', ipText, `tunnel address of Calico handle ${sourceHandle}: node ${JSON.stringify(node ?? '')} is not a node name`);
      return undefined;
    }
    return { kind: 'node', handle: tunnelHandle(node, kind), node, sourceHandle };
  }
  const network = networks.find((n) => sourceHandle.startsWith(`${n}.`) && sourceHandle.length > n.length + 1);
  if (network === undefined) {
    conflict(
      'invalid',
      ipText,
      `Calico handle ${JSON.stringify(sourceHandle)} is neither <network>.<containerID> for network ${networks.map((n) => JSON.stringify(n)).join(' or ')} (see --network) nor a tunnel address`,
    );
    return undefined;
  }
  const containerId = sourceHandle.slice(network.length + 1);
  const handle = cniHandleId(network, containerId, ifname);
  if (handle.length > MAX_HANDLE_LENGTH) {
    conflict(
      'invalid',
      ipText,
      `Calico handle ${JSON.stringify(sourceHandle).slice(0, 80)}…: its podipam handle would be longer than ${MAX_HANDLE_LENGTH} characters`,
    );
    return undefined;
  }
  const node = attrNode ?? blockNode ?? undefined;
  if (node !== undefined && !DNS_SUBDOMAIN.test(node)) {
    conflict('invalid', ipText, `${cb.source}: attributes[${idx}].secondary.node ${JSON.stringify(node)} is not a node name`);
    return undefined;
  }
  return {
    kind: 'pod',
    handle,
    ...(node !== undefined ? { node } : {}),
    network,
    containerId,
    ifname,
    ...(owner.namespace ? { namespace: owner.namespace } : {}),
    ...(owner.pod ? { pod: owner.pod } : {}),
    sourceHandle,
  };
}

function ownerText(h: ImportedHolder): string {
  return `${h.namespace ?? '?'}/${h.pod ?? '?'} on ${h.node ?? '?'}`;
}

function addrAt(cidr: Prefix, o: number): Addr {
  return { family: cidr.family, value: cidr.base + BigInt(o) };
}

function comparePrefix(a: Prefix, b: Prefix): number {
  return a.family - b.family || (a.base < b.base ? -1 : a.base > b.base ? 1 : a.len - b.len);
}
