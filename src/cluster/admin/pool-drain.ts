/**
 * `pool drain`: a pool stops handing out addresses and blocks (its `draining` flag; every
 * allocation compares the config generation the flag's write bumps, so nothing planned before
 * lands after), while what it holds stays until its pods go; `poolHeld` says what is still
 * held — by node, by pod (namespace/name from the handle record when the runtime named it,
 * else the handle), and apart from the pods each node agent's warm pool's idle addresses (no
 * pod's: the agent returns them) — so an operator can follow it to empty and then delete the
 * pool.
 * `undrain` clears the flag. A separate flag from `disabled`, so an operator sees why a pool
 * serves nothing and undrain never enables a pool someone disabled.
 */
import { addrOfOrdinal } from '../../alloc/block.js';
import { type Addr, formatAddr, prefixContainsPrefix } from '../../ip/index.js';
import { decodeBlock, decodeHandle, BLOCK_PREFIX, handleKey, poolKey, type Pool, decodePool, encodePool, poolSpace, NotFoundError } from '../records/index.js';
import { configTxn } from '../txn/index.js';
import { readKeys, warmPodRecords, type IpamContext } from '../views/index.js';
import { checkResourceName } from '../../model/names.js';
import { isWarmHandle } from '../../model/reserved-network.js';

/** Sets or clears a pool's `draining` flag. NotFoundError for an unknown pool. */
export async function setPoolDraining(ctx: IpamContext, name: string, draining: boolean): Promise<Pool> {
  checkResourceName('pool name', name);
  return configTxn(ctx, `${draining ? 'drain' : 'undrain'} pool "${name}"`, async () => {
    const e = await ctx.store.get(poolKey(name));
    if (!e) throw new NotFoundError('pool', name);
    const pool = { ...decodePool(e), draining };
    return { compares: [{ key: e.key, rev: e.rev }], ops: [{ type: 'put', key: e.key, value: encodePool(pool) }], result: pool };
  });
}

export interface HeldPod {
  /** "namespace/name" when the handle record (or, for a warm-pool pod, the agent's pod record) names the pod. */
  readonly pod?: string;
  /** The pod's handle (for a warm-pool pod: its attachment, the key of the agent's pod record). */
  readonly handle: string;
  readonly addresses: readonly string[];
}

/**
 * What a node agent's warm pool holds in the pool beyond its pods' addresses: idle stock, held
 * by the node's warm handles (`podipam-warm:<node>:<refill id>`), no pod's. The agent returns it
 * once it sees the pool draining; nothing waits on a pod for it.
 */
export interface HeldWarm {
  /** The node's warm handles holding addresses of the pool, sorted. */
  readonly handles: readonly string[];
  /** Their addresses no pod record of the node names, in address order. */
  readonly idle: readonly string[];
}

export interface PoolHeld {
  readonly pool: Pool;
  /** Addresses allocated in the pool's blocks: inUse + idle. */
  readonly allocated: number;
  /** Addresses held for pods (and any other holder that is not a warm pool's idle stock). */
  readonly inUse: number;
  /** Idle addresses of node agents' warm pools (no pod's). */
  readonly idle: number;
  /** Blocks of the pool (empty ones included). */
  readonly blocks: number;
  /**
   * By node (the holder's node from its handle record, else the block's), sorted by name: its
   * pods, and its warm pool's idle addresses when it has any there. A warm handle is never
   * listed as a pod: the addresses it holds for pods are listed under those pods (the agent's
   * pod records say which), the rest under `warm`.
   */
  readonly nodes: readonly { readonly node: string; readonly pods: readonly HeldPod[]; readonly warm?: HeldWarm }[];
}

/** What pool `name` still holds. NotFoundError for an unknown pool. */
export async function poolHeld(ctx: IpamContext, name: string): Promise<PoolHeld> {
  checkResourceName('pool name', name);
  const e = await ctx.store.get(poolKey(name));
  if (!e) throw new NotFoundError('pool', name);
  const pool = decodePool(e);
  const blocks = (await ctx.store.list(BLOCK_PREFIX)).map(decodeBlock).filter((b) => prefixContainsPrefix(poolSpace(pool), b.cidr));
  const byHandle = new Map<string, { addresses: Addr[]; blockNode: string | null }>();
  let allocated = 0;
  for (const b of blocks) {
    for (const [o, h] of [...b.allocations].sort((x, y) => x[0] - y[0])) {
      allocated++;
      const x = byHandle.get(h) ?? { addresses: [], blockNode: b.affinity };
      x.addresses.push(addrOfOrdinal(b.cidr, o));
      byHandle.set(h, x);
    }
  }
  const records = await readKeys(ctx.store, [...byHandle.keys()].map(handleKey));
  const nodes = new Map<string, HeldPod[]>();
  const warm = new Map<string, { handles: string[]; addresses: Addr[] }>();
  for (const [h, x] of byHandle) {
    const re = records.get(handleKey(h));
    let rec: ReturnType<typeof decodeHandle> | undefined;
    try {
      rec = re ? decodeHandle(re) : undefined;
    } catch {
      rec = undefined; // a corrupt handle record: `ipam check` names it; listed here by handle
    }
    const node = rec?.node ?? x.blockNode ?? '(no node)';
    if (isWarmHandle(h)) {
      const w = warm.get(node) ?? { handles: [], addresses: [] };
      w.handles.push(h);
      w.addresses.push(...x.addresses);
      warm.set(node, w);
      continue;
    }
    const pod = rec?.namespace !== undefined && rec.pod !== undefined ? `${rec.namespace}/${rec.pod}` : undefined;
    const list = nodes.get(node) ?? [];
    list.push({ ...(pod !== undefined ? { pod } : {}), handle: h, addresses: x.addresses.map(formatAddr) });
    nodes.set(node, list);
  }
  const warmOf = new Map<string, HeldWarm>();
  let idle = 0;
  if (warm.size > 0) {
    // A warm handle holds its node's addresses idle or in use; the agent's pod records (written
    // behind, so an address handed out a moment ago may still show idle) name those in use.
    const podRecords = await warmPodRecords(ctx, '');
    for (const [node, w] of warm) {
      const left = new Set(w.addresses.map(formatAddr));
      const list = nodes.get(node) ?? [];
      for (const r of podRecords) {
        if (r.node !== node) continue;
        const mine = r.addrs.filter((a) => left.has(a));
        if (mine.length === 0) continue;
        for (const a of mine) left.delete(a);
        const pod = r.namespace !== undefined && r.name !== undefined ? `${r.namespace}/${r.name}` : undefined;
        list.push({ ...(pod !== undefined ? { pod } : {}), handle: r.attachment, addresses: mine });
      }
      nodes.set(node, list);
      const idleHere = w.addresses
        .sort((a, b) => (a.value < b.value ? -1 : a.value > b.value ? 1 : 0))
        .map(formatAddr)
        .filter((a) => left.has(a));
      idle += idleHere.length;
      if (idleHere.length > 0) warmOf.set(node, { handles: w.handles.sort(), idle: idleHere });
    }
  }
  const byName = (a: HeldPod, b: HeldPod): number => ((a.pod ?? a.handle) < (b.pod ?? b.handle) ? -1 : 1);
  return {
    pool,
    allocated,
    inUse: allocated - idle,
    idle,
    blocks: blocks.length,
    nodes: [...new Set([...nodes.keys(), ...warmOf.keys()])].sort().map((node) => {
      const w = warmOf.get(node);
      return { node, pods: (nodes.get(node) ?? []).sort(byName), ...(w !== undefined ? { warm: w } : {}) };
    }),
  };
}
