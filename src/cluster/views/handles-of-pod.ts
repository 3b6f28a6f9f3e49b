/**
 * Pods as the cluster records them: every handle whose record names a pod (namespace/name,
 * written from CNI_ARGS K8S_POD_*), with what it holds — and who holds one address. A warm-pool
 * pod holds addresses of its node's warm handles; the agent's pod record (`agent-pods/…`,
 * written behind) names the pod, so such pods are found through those records. Read-only, for
 * `podipam ipam show --pod`, the API and the dashboard's search; one list of the handle (and
 * pod) records (never on a pod's start path).
 */
import { holderOf, ordinalOf } from '../../alloc/block.js';
import { type Addr, formatAddr, formatPrefix, prefixContains, prefixOf, tryParseAddr } from '../../ip/index.js';
import { listAll } from '../../store/list-all.js';
import {
  decodeBlock,
  type HandleRecord,
  decodeHandle,
  HANDLE_PREFIX,
  POOL_PREFIX,
  blockKey,
  handleKey,
  type Pool,
  decodePool,
  poolBlockSizes,
  poolSpace,
} from '../records/index.js';
import { addressesOfHandle } from './handle-addresses.js';
import type { IpamContext } from './ipam-context.js';
import { isWarmHandle } from '../../model/reserved-network.js';
import { type WarmPodRecord, tryDecodeWarmPodRecord, warmPodRecordPrefix } from '../../model/warm-pod-record.js';
import { readKeys } from './read-keys.js';

/** One handle of a pod and its addresses. */
export interface PodHandle {
  readonly handle: string;
  /** `NS/NAME`, when the handle record names the pod. */
  readonly pod: string | null;
  readonly podUid: string | null;
  readonly node: string;
  readonly network: string | null;
  readonly containerId: string | null;
  readonly ifname: string | null;
  readonly addresses: readonly { readonly ip: string; readonly block: string; readonly pool: string }[];
}

/** An address's holder: the handle (and pod) with every address it holds, and the address's block. */
export type AddressHolder = PodHandle & { readonly ip: string; readonly block: string };

/** The handles of pod `namespace/name` (namespace undefined: of that name in any namespace), in handle order, each with its addresses. */
export async function handlesOfPod(ctx: IpamContext, namespace: string | undefined, name: string): Promise<PodHandle[]> {
  const out: PodHandle[] = [];
  for (const e of await listAll(ctx.store, HANDLE_PREFIX)) {
    const rec = decodeHandle(e);
    if (rec.pod !== name || rec.namespace === undefined || (namespace !== undefined && rec.namespace !== namespace)) continue;
    out.push(await podHandle(ctx, e.key.slice(HANDLE_PREFIX.length), rec));
  }
  const warm = (await warmPodRecords(ctx, '')).filter((r) => r.name === name && (namespace === undefined || r.namespace === namespace));
  if (warm.length > 0) {
    const pools = (await listAll(ctx.store, POOL_PREFIX)).map(decodePool);
    for (const r of warm) out.push(warmPodHandle(r, pools));
  }
  return out;
}

/** The warm pool's pod records of `node` ('' = every node); a record that does not decode is skipped (`ipam check` reports the datastore's state, this is a lookup). */
export async function warmPodRecords(ctx: IpamContext, node: string): Promise<WarmPodRecord[]> {
  const out: WarmPodRecord[] = [];
  for (const e of await listAll(ctx.store, warmPodRecordPrefix(node))) {
    const r = tryDecodeWarmPodRecord(e.key, e.value);
    if (!(r instanceof Error)) out.push(r);
  }
  return out;
}

function warmPodHandle(r: WarmPodRecord, pools: readonly Pool[]): PodHandle {
  const addresses = r.addrs.flatMap((ip) => {
    const a = tryParseAddr(ip);
    const pool = a && pools.find((p) => prefixContains(p.cidr, a));
    return a && pool ? [{ ip, block: formatPrefix(prefixOf(a, pool.blockSize)), pool: pool.name }] : [{ ip, block: '', pool: '' }];
  });
  return {
    handle: r.attachment,
    pod: r.namespace !== undefined && r.name !== undefined ? `${r.namespace}/${r.name}` : null,
    podUid: r.uid ?? null,
    node: r.node,
    network: r.network ?? null,
    containerId: r.containerId ?? null,
    ifname: r.ifname ?? null,
    addresses,
  };
}

/** The holder of `addr`: its handle (with the pod it names) and block; undefined when it is free or in no pool. */
export async function holderOfAddress(ctx: IpamContext, addr: Addr): Promise<AddressHolder | undefined> {
  const pools = (await listAll(ctx.store, POOL_PREFIX)).map(decodePool);
  const pool = pools.find((p) => prefixContains(poolSpace(p), addr));
  if (!pool) return undefined;
  // The block holding it may have any size the pool lists (a block-size change keeps old blocks).
  const cidrs = poolBlockSizes(pool).map((s) => prefixOf(addr, s));
  const entries = await ctx.store.getMany(cidrs.map(blockKey));
  const found = entries.findIndex((e) => e !== undefined);
  if (found < 0) return undefined;
  const cidr = cidrs[found]!;
  const block = decodeBlock(entries[found]!);
  const handle = block ? holderOf(block, ordinalOf(cidr, addr)) : undefined;
  if (block === undefined || handle === undefined) return undefined;
  const at = { ip: formatAddr(addr), block: formatPrefix(cidr) };
  if (isWarmHandle(handle) && block.affinity) {
    // A warm address: held by the node's warm handle, in use by the pod whose record lists it (else idle).
    const rec = (await warmPodRecords(ctx, block.affinity)).find((r) => r.addrs.includes(at.ip));
    if (rec) return { ...warmPodHandle(rec, pools), ...at };
  }
  const he = await ctx.store.get(handleKey(handle));
  // A handle without its record (a leak `ipam check` reports): named by the block alone.
  if (!he) return { ...fields(handle, { node: block.affinity ?? '', blocks: new Map() }), addresses: [{ ...at, pool: pool.name }], ...at };
  return { ...(await podHandle(ctx, handle, decodeHandle(he))), ...at };
}

/** The pod (`NS/NAME`) each of `handles` names, read in one batch; handles naming none are left out. */
export async function podsOfHandles(ctx: IpamContext, handles: readonly string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  if (handles.length === 0) return out;
  for (const [key, e] of await readKeys(ctx.store, handles.map(handleKey))) {
    const rec = e && decodeHandle(e);
    if (rec?.namespace !== undefined && rec.pod !== undefined) out.set(key.slice(HANDLE_PREFIX.length), `${rec.namespace}/${rec.pod}`);
  }
  return out;
}

async function podHandle(ctx: IpamContext, handle: string, rec: HandleRecord): Promise<PodHandle> {
  const held = (await addressesOfHandle(ctx, handle)) ?? [];
  return { ...fields(handle, rec), addresses: held.map((a) => ({ ip: formatAddr(a.addr), block: formatPrefix(a.block), pool: a.pool })) };
}

function fields(handle: string, rec: HandleRecord): Omit<PodHandle, 'addresses'> {
  return {
    handle,
    pod: rec.namespace !== undefined && rec.pod !== undefined ? `${rec.namespace}/${rec.pod}` : null,
    podUid: rec.podUid ?? null,
    node: rec.node,
    network: rec.network ?? null,
    containerId: rec.containerId ?? null,
    ifname: rec.ifname ?? null,
  };
}
