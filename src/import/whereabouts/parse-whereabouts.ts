/**
 * Whereabouts' stored state → ImportPlan (pure). The input is what
 * `kubectl get ippools.whereabouts.cni.cncf.io,overlappingrangeipreservations.whereabouts.cni.cncf.io -A -o json`
 * prints: a `List` (or an `IPPoolList` / `OverlappingRangeIPReservationList`, or one object)
 * of items with apiVersion `whereabouts.cni.cncf.io/v1alpha1`:
 * - `IPPool`: `spec.range` (a CIDR) and `spec.allocations`, a map from the decimal offset of an
 *   address from the range's first IP (the IP written in `spec.range`, which Whereabouts keeps
 *   as the network address) to `{id: containerID, podref: "ns/name", ifname}` (`ifname` absent
 *   in older versions: eth0).
 * - `OverlappingRangeIPReservation`: named after the IP (whereabouts-names.ts), `spec:
 *   {containerid, podref, ifname}`: Whereabouts' cluster-wide claim of that IP. Used to cross
 *   check: an allocation whose reservation names another container, or a reservation inside an
 *   imported range that no allocation lists, is an 'invalid' conflict on that IP.
 *
 * Mapping: each distinct range becomes a podipam pool named after the (first, by name) IPPool
 * holding it, block size the family default (/26, /122) or `blockSize`, never finer than the
 * range itself; or, with `pools`, an existing podipam pool the applier checks the addresses
 * against. Every address is a pod's, under the handle the cluster plugin's DEL computes,
 * cniHandleId(network, containerID, ifname) — so a dual-stack pod (same container and ifname
 * in a v4 and a v6 range) is one handle holding both. The network is `network`, else the
 * IPPool name's prefix (Whereabouts' `network_name`); neither is an error naming the pool.
 * Whereabouts records no node: holders have none and blocks no affinity (unaffine blocks, which
 * no node claims; the pods' DELs free their addresses wherever they run).
 *
 * A malformed document is a WhereaboutsFormatError naming the item and field (nothing is
 * planned); a record that parses but cannot be mapped (offset outside its range, bad podref, an
 * `ifname` that is no Linux interface name — src/model/interface-name.ts — naming the field and
 * value) is a plan conflict on its IP, so `--skip-conflicts` can import the rest. So is every
 * address of one attachment (one container id and interface) that holds two or more of one
 * family: podipam gives an attachment one address per family, and which one the pod really uses
 * (the other a leak Whereabouts never freed) only the operator can tell — each such address is
 * an 'invalid' conflict naming the container id, the interface and all its addresses, and none
 * of them is imported.
 */
import { DEFAULT_BLOCK_SIZE } from '../../alloc/block-layout.js';
import { type Addr, type Prefix, formatAddr, formatPrefix, parseCidr, prefixContains, prefixOf } from '../../ip/index.js';
import { cniHandleId } from '../../model/handle-id.js';
import { INTERFACE_NAME_HINT, INTERFACE_NAME_PROBLEM_TEXT, interfaceNameProblem } from '../../model/interface-name.js';
import type { ImportConflict, ImportPlan, ImportedAddress, ImportedBlock, ImportedPool } from '../import-plan.js';
import { poolNamePrefix, reservationIp } from './whereabouts-names.js';

export const WHEREABOUTS_API = 'whereabouts.cni.cncf.io/v1alpha1';

export class WhereaboutsFormatError extends Error {
  override readonly name = 'WhereaboutsFormatError';
}

/** `from` (an IPPool name or a range CIDR; undefined: every range) → the podipam pool `to`. */
export interface WhereaboutsPoolMapping {
  readonly from?: string;
  readonly to: string;
}

export interface WhereaboutsImportOptions {
  /** The CNI network name the pods' DELs carry (the conflist's `name`); default: each IPPool name's prefix. */
  readonly network?: string;
  readonly pools?: readonly WhereaboutsPoolMapping[];
  /** Block size of the pools created (per family: IPv4 /20-/30 or IPv6 /116-/126); default /26, /122. */
  readonly blockSize?: { readonly 4?: number; readonly 6?: number };
}

interface WbPool {
  readonly where: string;
  readonly name: string;
  readonly namespace: string | undefined;
  readonly range: Prefix;
  /** spec.range as written (Whereabouts names the pool after it). */
  readonly rangeText: string;
  /** The IP written in spec.range: offsets count from it. */
  readonly first: Addr;
  readonly allocations: readonly { readonly offset: string; readonly id: string; readonly podref: string; readonly ifname: string; readonly where: string }[];
}

interface WbReservation {
  readonly where: string;
  readonly name: string;
  readonly containerId: string;
  readonly podref: string;
  readonly ifname: string;
}

/** See the module comment. */
export function parseWhereabouts(doc: unknown, options: WhereaboutsImportOptions = {}): ImportPlan {
  const { pools, reservations } = readItems(doc);
  const conflicts: ImportConflict[] = [];
  const byRange = new Map<string, WbPool[]>();
  for (const p of [...pools].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const key = formatPrefix(p.range);
    byRange.set(key, [...(byRange.get(key) ?? []), p]);
  }
  const planPools: ImportedPool[] = [];
  const blocks = new Map<string, ImportedBlock>();
  const addresses: ImportedAddress[] = [];
  const networks = new Set<string>();
  /** "<ip> <container id>" → the IPPool that lists it (for messages). */
  const sources = new Map<string, string>();
  for (const [cidr, group] of byRange) {
    const head = group[0]!;
    const mapped = mappingOf(options.pools ?? [], group, cidr);
    const poolName = mapped ?? head.name;
    const fam = head.range.family;
    const wanted = options.blockSize?.[fam] ?? DEFAULT_BLOCK_SIZE[fam];
    const blockSize = Math.max(wanted, head.range.len);
    if (mapped === undefined) {
      planPools.push({
        name: poolName,
        cidr,
        blockSize,
        nodeSelector: 'all()',
        disabled: false,
        source: `ippools.whereabouts.cni.cncf.io ${group.map((p) => (p.namespace ? `${p.namespace}/${p.name}` : p.name)).join(', ')}`,
      });
    }
    for (const p of group) {
      const network = options.network ?? networkOf(p);
      networks.add(network);
      for (const a of p.allocations) {
        const ip = offsetAddr(p.first, a.offset);
        const subject = ip && prefixContains(p.range, ip) ? formatAddr(ip) : `${p.name}/${a.offset}`;
        if (!ip || !prefixContains(p.range, ip)) {
          conflicts.push({ kind: 'invalid', subject, detail: `IPPool ${p.name}: allocation offset ${a.offset} is outside its range ${formatPrefix(p.range)}` });
          continue;
        }
        const ref = podRef(a.podref);
        if (!ref) {
          conflicts.push({
            kind: 'invalid',
            subject,
            detail: `IPPool ${p.name}: allocation ${a.offset} (${subject}) has podref ${JSON.stringify(a.podref)}, not "<namespace>/<name>"`,
          });
          continue;
        }
        const badIfname = interfaceNameProblem(a.ifname);
        if (badIfname !== undefined) {
          conflicts.push({
            kind: 'invalid',
            subject,
            detail: `${a.where}.ifname ${JSON.stringify(a.ifname)} ${INTERFACE_NAME_PROBLEM_TEXT[badIfname]}: not an interface name (${INTERFACE_NAME_HINT})`,
          });
          continue;
        }
        const block = formatPrefix(prefixOf(ip, blockSize));
        if (!blocks.has(block)) blocks.set(block, { cidr: block, pool: poolName, affinity: null });
        sources.set(`${subject} ${a.id}`, p.name);
        addresses.push({
          ip: subject,
          pool: poolName,
          block,
          holder: {
            kind: 'pod',
            handle: cniHandleId(network, a.id, a.ifname),
            network,
            containerId: a.id,
            ifname: a.ifname,
            namespace: ref.namespace,
            pod: ref.name,
            sourceHandle: a.id,
          },
        });
      }
    }
  }
  conflicts.push(...oneAddressPerFamily(addresses, sources));
  conflicts.push(...crossCheck(reservations, addresses, [...byRange.values()].flat(), networks, new Set(conflicts.map((c) => c.subject))));
  return {
    source: 'whereabouts',
    pools: planPools,
    blocks: [...blocks.values()].sort((a, b) => cmpText(a.cidr, b.cidr)),
    addresses: addresses.sort((a, b) => cmpText(a.ip, b.ip) || cmpText(a.holder.handle, b.holder.handle)),
    conflicts,
  };
}

function cmpText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The podipam pool a range is mapped onto, if any (by IPPool name or range, else a catch-all mapping). */
function mappingOf(mappings: readonly WhereaboutsPoolMapping[], group: readonly WbPool[], cidr: string): string | undefined {
  const exact = mappings.find((m) => m.from !== undefined && (m.from === cidr || group.some((p) => p.name === m.from)));
  return (exact ?? mappings.find((m) => m.from === undefined))?.to;
}

function networkOf(p: WbPool): string {
  const prefix = poolNamePrefix(p.name, p.rangeText);
  if (prefix === undefined || prefix === '') {
    throw new WhereaboutsFormatError(
      `IPPool ${p.name} (${formatPrefix(p.range)}) carries no network name${prefix === undefined ? ' (its name is not <network>-<range>)' : ''}: give --network, the CNI network name the pods' DELs carry (the name in their CNI config)`,
    );
  }
  return prefix;
}

function podRef(ref: string): { namespace: string; name: string } | undefined {
  const m = /^([^/\s]+)\/([^/\s]+)$/.exec(ref);
  return m ? { namespace: m[1]!, name: m[2]! } : undefined;
}

/** first + offset (a decimal string), or undefined when the offset is not a decimal or leaves the family. */
function offsetAddr(first: Addr, offset: string): Addr | undefined {
  if (!/^(0|[1-9][0-9]*)$/.test(offset)) return undefined;
  const value = first.value + BigInt(offset);
  const max = first.family === 4 ? (1n << 32n) - 1n : (1n << 128n) - 1n;
  return value > max ? undefined : { family: first.family, value };
}

/** An 'invalid' conflict on each address of an attachment (container id + interface) holding several of one family. */
function oneAddressPerFamily(addresses: readonly ImportedAddress[], sources: ReadonlyMap<string, string>): ImportConflict[] {
  const byAttachment = new Map<string, Set<string>>();
  for (const a of addresses) {
    const key = JSON.stringify([a.holder.containerId, a.holder.ifname, a.ip.includes(':') ? 6 : 4]);
    byAttachment.set(key, (byAttachment.get(key) ?? new Set()).add(a.ip));
  }
  const out: ImportConflict[] = [];
  for (const [key, ips] of byAttachment) {
    if (ips.size < 2) continue;
    const [containerId, ifname, family] = JSON.parse(key) as [string, string, number];
    const listed = [...ips].sort(cmpText);
    const named = listed.map((ip) => `${ip} (IPPool ${sources.get(`${ip} ${containerId}`) ?? '?'})`).join(', ');
    const detail = `container ${JSON.stringify(containerId)} interface ${JSON.stringify(ifname)} has ${ips.size} IPv${family} allocations, ${named}: podipam holds one address per family for an attachment, and which one the pod uses is unknown (the others leaked); free the stale allocation in Whereabouts and export again`;
    for (const ip of listed) out.push({ kind: 'invalid', subject: ip, detail });
  }
  return out;
}

/**
 * Reservations against allocations: a different container for the same IP, or a reservation no
 * allocation in its range lists (an allocation listed but refused — `refused`, the subjects of
 * the conflicts so far — is already reported under its IP).
 */
function crossCheck(
  reservations: readonly WbReservation[],
  addresses: readonly ImportedAddress[],
  pools: readonly WbPool[],
  networks: ReadonlySet<string>,
  refused: ReadonlySet<string>,
): ImportConflict[] {
  const out: ImportConflict[] = [];
  const byIp = new Map(addresses.map((a) => [a.ip, a]));
  const prefixes = [...networks, ...pools.map((p) => poolNamePrefix(p.name, p.rangeText) ?? '')];
  for (const r of reservations) {
    const ip = reservationIp(r.name, prefixes);
    if (!ip) {
      out.push({
        kind: 'invalid',
        subject: r.name,
        detail: `OverlappingRangeIPReservation ${r.name}: its name is not an IP (with an optional network-name prefix)`,
      });
      continue;
    }
    const text = formatAddr(ip);
    const a = byIp.get(text);
    if (a) {
      const same = (r.containerId === '' || r.containerId === a.holder.containerId) && r.podref === `${a.holder.namespace}/${a.holder.pod}`;
      if (!same) {
        out.push({
          kind: 'invalid',
          subject: text,
          detail: `OverlappingRangeIPReservation ${r.name} gives ${text} to container ${r.containerId || '(none)'} of pod ${r.podref}, the IPPool to container ${a.holder.containerId ?? '?'} of pod ${a.holder.namespace}/${a.holder.pod}`,
        });
      }
    } else if (!refused.has(text) && pools.some((p) => prefixContains(p.range, ip))) {
      out.push({
        kind: 'invalid',
        subject: text,
        detail: `OverlappingRangeIPReservation ${r.name} reserves ${text} for pod ${r.podref} (container ${r.containerId || '(none)'}), but no IPPool allocation lists it (Whereabouts' reconciler removes such leftovers; if the pod uses ${text}, fix the IPPool first)`,
      });
    }
  }
  return out;
}

/** The document's IPPools and reservations; WhereaboutsFormatError naming the item and field. */
function readItems(doc: unknown): { pools: WbPool[]; reservations: WbReservation[] } {
  const top = object(doc, 'the document');
  const items = Array.isArray(top.items) ? (top.items as unknown[]) : top.kind === 'IPPool' || top.kind === 'OverlappingRangeIPReservation' ? [doc] : undefined;
  if (!items)
    throw new WhereaboutsFormatError(
      `the document is neither a List with "items" nor an IPPool or OverlappingRangeIPReservation (kind ${JSON.stringify(top.kind)})`,
    );
  const pools: WbPool[] = [];
  const reservations: WbReservation[] = [];
  items.forEach((raw, i) => {
    const it = object(raw, `items[${i}]`);
    const meta = object(it.metadata, `items[${i}].metadata`);
    const name = string(meta.name, `items[${i}].metadata.name`);
    const where = `items[${i}] (${String(it.kind)} ${name})`;
    if (it.apiVersion !== WHEREABOUTS_API)
      throw new WhereaboutsFormatError(`${where}: apiVersion ${JSON.stringify(it.apiVersion)}, expected ${WHEREABOUTS_API}`);
    const spec = object(it.spec, `${where}.spec`);
    if (it.kind === 'IPPool') {
      const rangeText = string(spec.range, `${where}.spec.range`);
      let parsed: ReturnType<typeof parseCidr>;
      try {
        parsed = parseCidr(rangeText);
      } catch (e) {
        throw new WhereaboutsFormatError(`${where}.spec.range ${JSON.stringify(rangeText)}: ${(e as Error).message}`, { cause: e });
      }
      const allocs = spec.allocations === undefined || spec.allocations === null ? {} : object(spec.allocations, `${where}.spec.allocations`);
      const allocations = Object.entries(allocs).map(([offset, v]) => {
        const w = `${where}.spec.allocations[${JSON.stringify(offset)}]`;
        const a = object(v, w);
        const ifname = a.ifname === undefined || a.ifname === '' ? 'eth0' : string(a.ifname, `${w}.ifname`);
        return { offset, id: string(a.id, `${w}.id`), podref: string(a.podref, `${w}.podref`), ifname, where: w };
      });
      const namespace = typeof meta.namespace === 'string' ? meta.namespace : undefined;
      pools.push({ where, name, namespace, range: prefixOf(parsed.addr, parsed.len), rangeText, first: parsed.addr, allocations });
    } else if (it.kind === 'OverlappingRangeIPReservation') {
      const containerId = spec.containerid === undefined ? '' : string(spec.containerid, `${where}.spec.containerid`, true);
      const ifname = spec.ifname === undefined || spec.ifname === '' ? 'eth0' : string(spec.ifname, `${where}.spec.ifname`);
      reservations.push({ where, name, containerId, podref: string(spec.podref, `${where}.spec.podref`), ifname });
    } else {
      throw new WhereaboutsFormatError(`${where}: kind ${JSON.stringify(it.kind)} is not IPPool or OverlappingRangeIPReservation`);
    }
  });
  return { pools, reservations };
}

function object(v: unknown, what: string): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new WhereaboutsFormatError(`${what} is ${JSON.stringify(v) ?? 'missing'}, not an object`);
  return v as Record<string, unknown>;
}

function string(v: unknown, what: string, emptyOk = false): string {
  if (typeof v !== 'string' || (!emptyOk && v === '')) throw new WhereaboutsFormatError(`${what} is ${JSON.stringify(v) ?? 'missing'}, not a non-empty string`);
  return v;
}
